"""The overhead benchmark runs and reports both implementations (no timing assertions)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PEER_PYTHON = REPO_ROOT / ".peer-venv" / "bin" / "python"

pytestmark = [pytest.mark.peer, pytest.mark.timeout(120)]


def test_benchmark_reports_ours_and_official() -> None:
    if not PEER_PYTHON.exists():
        pytest.skip(f"reference peer venv missing ({PEER_PYTHON}); the benchmark would build it")
    proc = subprocess.run(
        [
            sys.executable,
            "benchmarks/timers_overhead.py",
            "--calls",
            "2000",
            "--rounds",
            "2",
            "--json",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert set(rows) == {"@timed", "hierarchical_timer"}
    for row in rows.values():
        assert set(row) == {"ours_us", "official_us", "speedup"}
        assert row["official_us"] > 0
