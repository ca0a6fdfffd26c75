"""``benchmarks/player_compute.py`` runs the player's real step loop and reports every scene."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120)

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_player_compute_reports_each_scene() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.player_compute",
            "--scenes",
            "3DBall",
            "GridWorld",
            "--steps",
            "60",
            "--warmup",
            "5",
            "--rounds",
            "1",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {line.split()[0]: line.split() for line in proc.stdout.splitlines()[1:] if line}
    assert set(rows) == {"3DBall", "GridWorld"}
    # 3DBall: 12 agents deciding every 5th step (60 steps after 5: 12 decision steps at least);
    # GridWorld: 9 agents deciding every step.
    assert rows["3DBall"][1] == "12" and int(rows["3DBall"][2]) >= 12
    assert rows["GridWorld"][1] == "9" and int(rows["GridWorld"][2]) == 60
    assert float(rows["3DBall"][3]) > 0 and float(rows["GridWorld"][3]) > 0


def test_player_compute_limits_blas_threads_as_a_game_process_does() -> None:
    """The benchmark measures scenes under the BLAS thread limits that ``python -m
    unity_gym.player`` sets (it cannot import ``unity_gym`` before numpy to read them)."""
    from benchmarks.player_compute import BLAS_THREAD_VARIABLES
    from unity_gym.player_process import PLAYER_BLAS_THREADS

    assert set(BLAS_THREAD_VARIABLES) == set(PLAYER_BLAS_THREADS)
    assert set(PLAYER_BLAS_THREADS.values()) == {"1"}
