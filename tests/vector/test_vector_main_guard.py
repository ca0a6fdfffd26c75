"""Scripts that create the vector env at module level, without ``if __name__ == "__main__":``.

Each test writes a real script into ``tmp_path`` and runs it with ``python script.py`` in its own
session, as a user would, then checks what it printed, its exit status, and that its worker
processes, games and shared-memory blocks are gone afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from process_utils import eventually, group_members, pid_alive

SCRIPT_TIMEOUT_S = 120.0

PREAMBLE = """\
import json
import multiprocessing
import sys

import gymnasium

import unity_gym  # noqa: F401

with open(sys.argv[1], "a") as marker:  # module-level work: must run once, in this process only
    marker.write(f"{multiprocessing.current_process().name}\\n")


class TimeScale(float):
    \"\"\"Defined in the main script: a worker that receives it must import the script.\"\"\"


def report(envs):
    workers = [p.pid for p in multiprocessing.active_children() if "vector-worker" in p.name]
    with open("/proc/self/maps") as maps:
        blocks = sorted({line.split()[-1] for line in maps if "/dev/shm/" in line})
    print("REPORT " + json.dumps({"workers": workers, "games": envs.game_pids, "shm": blocks}))
"""

UNGUARDED = (
    PREAMBLE
    + """
envs = gymnasium.make_vec(
    "Unity-v0", scene="3DBall", num_envs=24, num_processes=2, start_method=@METHOD@@EXTRA@
)
envs.reset(seed=0)
_, rewards, _, _, _ = envs.step(envs.action_space.sample())
print("STEPPED", rewards.shape[0])
report(envs)
envs.close()
"""
)

GUARDED = (
    PREAMBLE
    + """
def main():
    envs = gymnasium.make_vec(
        "Unity-v0", scene="3DBall", num_envs=24, num_processes=2, start_method=@METHOD@@EXTRA@
    )
    envs.reset(seed=0)
    _, rewards, _, _, _ = envs.step(envs.action_space.sample())
    print("STEPPED", rewards.shape[0])
    report(envs)
    envs.close()


if __name__ == "__main__":
    main()
"""
)


def source_of(template: str, method: str, extra: str = "") -> str:
    """``template`` with its start method and extra ``make_vec`` keywords filled in."""
    return template.replace("@METHOD@", repr(method)).replace("@EXTRA@", extra)


def run_script(
    tmp_path: Path, source: str, inline: bool = False
) -> tuple[subprocess.CompletedProcess[str], Path, float]:
    """Run ``source`` as ``python script.py MARKER`` (``python -c SOURCE MARKER`` if ``inline``)
    in a new session; wait for its process group to go."""
    script = tmp_path / "train.py"
    script.write_text(source)
    marker = tmp_path / "imports.txt"
    program = ["-c", source] if inline else [str(script)]
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, *program, str(marker)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=SCRIPT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        stdout, stderr = process.communicate()
        pytest.fail(f"the script hung for {SCRIPT_TIMEOUT_S} s:\n{stdout}\n{stderr}")
    elapsed = time.monotonic() - started
    result = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    assert eventually(lambda: not group_members(process.pid)), (
        f"processes {group_members(process.pid)} of the script's group outlived it"
    )
    return result, marker, elapsed


def parse_report(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The ``REPORT`` line the script printed while its env was open."""
    lines = [line for line in result.stdout.splitlines() if line.startswith("REPORT ")]
    assert lines, f"no report; stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    report: dict[str, Any] = json.loads(lines[0][len("REPORT ") :])
    return report


def assert_cleaned_up(report: dict[str, Any]) -> None:
    """Workers and games are gone, and the shared-memory blocks unlinked."""
    assert len(report["workers"]) == 2 and len(report["games"]) == 2, report
    assert report["shm"], "the env mapped no shared memory: the check below would prove nothing"
    pids = report["workers"] + report["games"]
    assert eventually(lambda: not any(pid_alive(pid) for pid in pids)), (
        f"worker or game processes {[p for p in pids if pid_alive(p)]} outlived the script"
    )
    assert not [block for block in report["shm"] if Path(block).exists()], report["shm"]


@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_unguarded_script_runs_without_rerunning_itself(tmp_path: Path, method: str) -> None:
    result, marker, _ = run_script(tmp_path, source_of(UNGUARDED, method))

    assert result.returncode == 0, result.stderr
    assert "STEPPED 24" in result.stdout
    assert marker.read_text().splitlines() == ["MainProcess"], (
        "the script's module-level code ran again in a worker"
    )
    assert "resource_tracker" not in result.stderr, result.stderr  # no leaked or lost blocks
    assert_cleaned_up(parse_report(result))


def test_unguarded_code_given_with_dash_c_runs(tmp_path: Path) -> None:
    result, marker, _ = run_script(tmp_path, source_of(UNGUARDED, "spawn"), inline=True)

    assert result.returncode == 0, result.stderr
    assert "STEPPED 24" in result.stdout
    assert marker.read_text().splitlines() == ["MainProcess"]
    assert_cleaned_up(parse_report(result))


def test_guarded_script_with_main_objects_still_gets_them(tmp_path: Path) -> None:
    """A worker whose settings hold a class of the script imports the script, as before."""
    source = source_of(GUARDED, "spawn", ", time_scale=TimeScale(20.0)")
    result, marker, _ = run_script(tmp_path, source)

    assert result.returncode == 0, result.stderr
    assert "STEPPED 24" in result.stdout
    lines = marker.read_text().splitlines()
    assert lines[0] == "MainProcess" and len(lines) == 3, lines  # re-run once in each worker
    assert_cleaned_up(parse_report(result))


def test_unguarded_script_with_main_objects_fails_fast_with_the_fix(tmp_path: Path) -> None:
    source = source_of(UNGUARDED, "spawn", ", time_scale=TimeScale(20.0)")
    result, _, elapsed = run_script(tmp_path, source)

    assert result.returncode == 1, result.stdout + result.stderr
    assert "STEPPED" not in result.stdout
    last_line = result.stderr.strip().splitlines()[-1]
    assert last_line.startswith("unity_gym.vector.backends.base.WorkerLostError: "), last_line
    assert "__main__.TimeScale" in last_line
    assert 'if __name__ == "__main__":' in last_line and 'backend="inprocess"' in last_line
    assert "bootstrapping phase" not in result.stderr  # not multiprocessing's generic error
    assert elapsed < 30.0, f"took {elapsed:.1f} s to fail"
