"""A script that leaves a ``UnityEnvironment`` open must still exit, and take its game with it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    from unity_gym import UnityEnvironment
    from unity_gym.registration import builtin_executable

    env = UnityEnvironment(file_name=str(builtin_executable("3DBall")), timeout_wait=30)
    env.reset()
    print(env.process.pid, flush=True)
    raise SystemExit("leaving without close()")
    """
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.timeout(120)
def test_uncaught_exit_with_open_environment_terminates(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO), UNITY_GYM_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.returncode == 1, proc.stderr
    assert "leaving without close()" in proc.stderr
    game_pid = int(proc.stdout.split()[0])
    # The launcher's exit hooks kill the game's process group before the interpreter ends.
    assert not _alive(game_pid), f"game {game_pid} outlived the script"
