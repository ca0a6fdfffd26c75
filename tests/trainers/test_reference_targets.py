"""``benchmarks.reference_targets``: every stated target names a bundled config of one behavior
for a built-in scene, a real run (``unity-train`` on the headless Basic scene, a tiny budget) is
judged over its seed by the step at which the reward was reached, and Ctrl-C during a run says
that the race starts over (it is timed from its start) rather than promising a continuation.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from benchmarks.reference_targets import CONFIGS, TARGETS, budget_config
from unity_gym.player.scenes import scene_names

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("scene", sorted(TARGETS))
def test_each_target_trains_a_bundled_config_of_one_behavior_on_its_scene(scene: str) -> None:
    target = TARGETS[scene]
    assert scene in scene_names()
    assert (CONFIGS / target.config).is_file()
    assert target.budget > 0 and target.source
    config = budget_config(target, 1234)
    (behavior,) = config["behaviors"]
    assert config["behaviors"][behavior]["max_steps"] == 1234
    assert config["behaviors"][behavior]["summary_freq"] <= 1234
    original = yaml.safe_load((CONFIGS / target.config).read_text(encoding="utf-8"))
    kept = config["behaviors"][behavior]["trainer_type"]
    assert original["behaviors"][behavior]["trainer_type"] == kept


def test_a_run_reports_the_step_it_reached_the_reward_within_its_budget(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.reference_targets", "--only", "Basic", "--seed", "3",
         "--reward", "-1", "--budget", "1000", "--workdir", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rows = [line.split() for line in run.stdout.splitlines() if "steps to mean reward" in line]
    # figure name (6 words), seed 3, median, worst, spread, goal, verdict
    assert rows and rows[-1][6:9] == ["1000", "1000", "1000"], run.stdout[-2000:]
    assert "met (yes, yes)" in run.stdout
    assert (tmp_path / "seed3" / "Basic.yaml").is_file()
    kept = yaml.safe_load((tmp_path / "seed3" / "Basic.yaml").read_text(encoding="utf-8"))
    assert kept["behaviors"]["Basic"]["max_steps"] == 1000


def test_a_budget_below_one_step_is_refused() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.reference_targets", "--budget", "0"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 2 and "--budget 0" in run.stderr


# The benchmark as a terminal starts it: Ctrl-C raises KeyboardInterrupt. (A pytest-xdist worker
# ignores SIGINT, and a child inherits that; Python then leaves it ignored.)
AS_FROM_A_TERMINAL = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.argv[0] = 'reference_targets'; "
    "runpy.run_module('benchmarks.reference_targets', run_name='__main__', alter_sys=True)"
)


def test_ctrl_c_keeps_the_runs_and_says_the_race_starts_over(tmp_path: Path) -> None:
    benchmark = subprocess.Popen(
        [sys.executable, "-u", "-c", AS_FROM_A_TERMINAL, "--only", "Basic", "--seed", "2",
         "--reward", "100", "--budget", "400000", "--workdir", str(tmp_path)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    assert benchmark.stdout is not None
    seen = []
    deadline = time.monotonic() + 240
    try:
        for line in benchmark.stdout:  # Ctrl-C once the run has written its first summary
            seen.append(line)
            if "Basic. Step:" in line or time.monotonic() > deadline:
                break
        os.killpg(benchmark.pid, signal.SIGINT)
        rest, _ = benchmark.communicate(timeout=120)
    finally:
        if benchmark.poll() is None:
            os.killpg(benchmark.pid, signal.SIGKILL)
    output = "".join(seen) + rest
    assert "Basic. Step:" in output, output[-3000:]
    assert benchmark.returncode == 130, output[-3000:]
    assert "Stopped by Ctrl-C" in output and "starts a race to a target reward over" in output
    assert "continues them" not in output
    assert (tmp_path / "seed2" / "results" / "Basic").is_dir()  # kept, not deleted
