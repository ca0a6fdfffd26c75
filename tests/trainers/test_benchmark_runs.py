"""The training benchmarks' run helper, :func:`benchmarks.trainer_runs.train`: Ctrl-C saves and
stops a run, the same workdir continues it with ``--resume`` and does not train a complete one
again, a larger step budget continues a complete one, other settings are refused, and a resumed
run's TensorBoard scalars are read once each.

Real ``unity-train`` processes on Gymnasium's CartPole; Ctrl-C is a real SIGINT in the test's
main thread (``_thread.interrupt_main``).
"""

from __future__ import annotations

import _thread
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from trainer_test_support import ppo_behavior

from benchmarks.trainer_runs import RunStoppedError, budget_shortfall, scalar_series, train

pytestmark = pytest.mark.timeout(180)

FLAGS = ("--gym-id", "CartPole-v1")
BUDGET = 8000


def _config(max_steps: int) -> dict[str, Any]:
    behavior = ppo_behavior(max_steps=max_steps, summary_freq=200, checkpoint_interval=4000)
    return {"behaviors": {"CartPole": behavior}}


def _press_ctrl_c_after_first_summary(
    log: Path, pressed: threading.Event, given_up: threading.Event
) -> None:
    """Ctrl-C once the first summary is in the log, however long the start-up takes on a loaded
    machine (the test's timeout bounds it); ``given_up`` stops the watch."""
    while not given_up.is_set():
        if log.is_file() and "Step: 200." in log.read_text(encoding="utf-8"):
            pressed.set()
            _thread.interrupt_main()
            return
        time.sleep(0.05)


def _summary_steps(output: str, with_reward: bool = False) -> list[int]:
    """The steps of CartPole's summary lines; ``with_reward``: only those with a mean reward
    (a summary soon after a resume may have seen no episode end, and writes no reward)."""
    return [
        int(line.split("Step: ")[1].split(".")[0])
        for line in output.splitlines()
        if "CartPole. Step: " in line and (not with_reward or "Mean Reward" in line)
    ]


def test_a_stopped_run_continues_in_its_workdir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], terminal_sigint: None
) -> None:
    config = _config(BUDGET)
    log = tmp_path / "cartpole.log"
    pressed, given_up = threading.Event(), threading.Event()
    presser = threading.Thread(
        target=_press_ctrl_c_after_first_summary, args=(log, pressed, given_up), daemon=True
    )
    presser.start()
    try:
        with pytest.raises(RunStoppedError, match=rf"CartPole at \d+ of {BUDGET} steps"):
            train(config, "cartpole", tmp_path, FLAGS, 1)
    finally:
        given_up.set()
        presser.join()
    assert pressed.is_set()
    first = capsys.readouterr().out
    assert "save and stop" in first
    stopped_at = max(_summary_steps(log.read_text(encoding="utf-8")))
    assert stopped_at < BUDGET
    run_dir = tmp_path / "results" / "cartpole"
    assert list((run_dir / "CartPole").glob("CartPole-*.pt")), "Ctrl-C saved no checkpoint"

    output = train(config, "cartpole", tmp_path, FLAGS, 1)
    second = capsys.readouterr().out
    assert "--resume" in second
    assert budget_shortfall(output, config) == []
    steps = _summary_steps(output)
    assert steps == sorted(set(steps)), f"the resumed run started over: {steps}"
    assert steps[-1] >= BUDGET - 200 and steps[0] == 200

    events = list((run_dir / "CartPole").glob("events.out.tfevents.*"))
    assert len(events) == 2
    rewards = [point.step for point in scalar_series(run_dir, "Environment/Cumulative Reward")]
    assert rewards == _summary_steps(output, with_reward=True)
    # Only the resumed run's first summary may have seen no episode end (it can come a few
    # steps after the resume); CartPole's early episodes are far shorter than a summary.
    first_resumed = _summary_steps(output.split("Resuming CartPole")[1])[0]
    assert set(steps) - set(rewards) <= {first_resumed}

    assert train(config, "cartpole", tmp_path, FLAGS, 1) == output
    assert "complete in" in capsys.readouterr().out
    assert log.read_text(encoding="utf-8") == output

    with pytest.raises(RuntimeError, match="other settings"):
        train(_config(BUDGET // 2), "cartpole", tmp_path, FLAGS, 1)
    other = _config(BUDGET)
    other["behaviors"]["CartPole"]["hyperparameters"]["learning_rate"] = 1.0e-3
    with pytest.raises(RuntimeError, match="other settings"):
        train(other, "cartpole", tmp_path, FLAGS, 1)
    with pytest.raises(RuntimeError, match="other settings"):
        train(config, "cartpole", tmp_path, FLAGS, 2)

    longer = train(_config(BUDGET + 2000), "cartpole", tmp_path, FLAGS, 1)
    assert longer.startswith(output)
    assert f"Resuming CartPole from step {BUDGET} " in longer[len(output) :]
    steps = _summary_steps(longer)
    assert steps == sorted(set(steps)) and steps[-1] == BUDGET + 2000
    rewards = [point.step for point in scalar_series(run_dir, "Environment/Cumulative Reward")]
    assert rewards == _summary_steps(longer, with_reward=True)
