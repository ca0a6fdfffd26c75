"""``examples/rllib_ppo_tennis.py``: RLlib PPO through our PettingZoo env, run as a user runs it.

The example runs in a subprocess for two small iterations with one env runner (a Ray actor that
plays a real Tennis game over gRPC). Its iteration lines must show both agents sampled at every
env step, finished points with a finite rally length, and zero-sum returns (the winner gets +1,
the loser -1); afterwards no process it started (Ray, env runners, games) may be left.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from process_utils import eventually

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rllib_ppo_tennis.py"
ITERATIONS = 2
BATCH = 400
ITERATION_LINE = re.compile(
    r"^iteration +(?P<iteration>\d+) +env steps +(?P<env>\d+) +agent steps +(?P<agent>\d+) +"
    r"points +(?P<points>\d+) +rally length +(?P<rally>\S+) +"
    r"mean return team0 (?P<team0>\S+) team1 (?P<team1>\S+)",
    re.MULTILINE,
)


def marked_processes(mark: str) -> list[int]:
    """Live processes whose environment carries ``UNITY_GYM_TEST_MARK=mark``."""
    needle = f"UNITY_GYM_TEST_MARK={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def test_rllib_ppo_tennis_example_trains(tmp_path: Path) -> None:
    try:
        import ray.rllib  # noqa: F401  (here, not at collection: the import takes seconds)
    except ImportError as error:
        pytest.skip(f'RLlib cannot be imported ({error}): pip install "ray[rllib]" "torch==2.13.0"')
    mark = uuid.uuid4().hex
    command = [
        sys.executable,
        str(EXAMPLE),
        f"--iterations={ITERATIONS}",
        f"--batch-size={BATCH}",
        "--minibatch-size=100",
        "--epochs=1",
        "--hidden=32",
        "--num-env-runners=1",
    ]
    started = time.monotonic()
    completed = subprocess.run(
        command,
        cwd=tmp_path,
        env={**os.environ, "UNITY_GYM_TEST_MARK": mark, "RAY_USAGE_STATS_ENABLED": "0"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    elapsed = time.monotonic() - started
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output[-6000:]

    lines = [match.groupdict() for match in ITERATION_LINE.finditer(completed.stdout)]
    assert [int(line["iteration"]) for line in lines] == list(range(1, ITERATIONS + 1)), output
    env_steps = [int(line["env"]) for line in lines]
    assert env_steps[0] >= BATCH and env_steps[1] >= env_steps[0] + BATCH, env_steps
    for line in lines:
        assert int(line["agent"]) == 2 * int(line["env"]), line  # both rackets every step
    last = lines[-1]
    assert int(last["points"]) > 0, last
    rally = float(last["rally"])
    assert math.isfinite(rally) and 1.0 <= rally <= BATCH, last
    team0, team1 = float(last["team0"]), float(last["team1"])
    assert -1.0 <= team0 <= 1.0 and abs(team0 + team1) < 0.011, last  # printed with 2 decimals
    assert "result: 2 iterations" in completed.stdout, completed.stdout

    assert eventually(lambda: not marked_processes(mark), timeout=30.0), (
        f"processes {marked_processes(mark)} started by the example outlived it"
    )
    print(f"example ran {ITERATIONS} iterations in {elapsed:.1f} s")
