"""``unity-train`` guards of a run: default settings without a config, one run per folder.

Official facts followed: mlagents-learn's ``RunOptions.behaviors`` is a
``TrainerSettings.DefaultTrainerDict``, so a config without ``behaviors`` (or no config at all)
trains every behavior with the default ``TrainerSettings`` (PPO, ``beta_schedule`` and
``epsilon_schedule`` following ``learning_rate_schedule``). The one-run-per-folder lock is
unity-train's own rule (mlagents-learn has none).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from trainer_test_support import TrainerProcess, ppo_behavior

from trainers.common.checkpoints.files import load_checkpoint
from trainers.run_directory import RunLock


@pytest.fixture
def trains() -> Iterator[list[TrainerProcess]]:
    started: list[TrainerProcess] = []
    yield started
    for train in started:
        train.stop()


@pytest.mark.timeout(180)
@pytest.mark.parametrize("config", [None, "", "env_settings: {seed: 3}\n"],
                         ids=["no-config", "empty-config", "no-behaviors"])  # fmt: skip
def test_default_settings_train_a_scene(
    tmp_path: Path, trains: list[TrainerProcess], config: str | None
) -> None:
    args = ["--scene", "3DBall", "--run-id", "defaults", "--results-dir", str(tmp_path / "r")]
    if config is not None:
        (tmp_path / "config.yaml").write_text(config, encoding="utf-8")
        args.insert(0, str(tmp_path / "config.yaml"))
    train = TrainerProcess(args, tmp_path)
    trains.append(train)
    train.wait_for("using the default PPO settings")
    train.wait_for("Training 3DBall")
    time.sleep(2.0)  # some steps with the game
    train.process.send_signal(signal.SIGINT)
    code, output = train.finish()
    assert code == 0, output
    assert "Learning was interrupted" in output
    run = tmp_path / "r" / "defaults"
    assert load_checkpoint(run / "3DBall" / "checkpoint.pt")["step"] > 0


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(path.relative_to(root)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in root.rglob("*")
        if path.is_file()
    }


@pytest.mark.timeout(240)
def test_second_run_on_the_same_run_id_exits_at_once(
    tmp_path: Path, trains: list[TrainerProcess]
) -> None:
    config = tmp_path / "config.yaml"
    behavior = ppo_behavior(max_steps=10_000_000, summary_freq=256, checkpoint_interval=10**9)
    config.write_text(yaml.safe_dump({"behaviors": {"CartPole": behavior}}), encoding="utf-8")
    results = tmp_path / "results"
    common = [str(config), "--gym-id", "CartPole-v1", "--run-id", "same",
              "--results-dir", str(results)]  # fmt: skip
    first = TrainerProcess(common, tmp_path)
    trains.append(first)
    first.wait_for("Step:")  # training, with files in the run folder
    run = results / "same"
    first.process.send_signal(signal.SIGSTOP)  # hold its files still while the others try
    try:
        before = _snapshot(run)
        for flags in ([], ["--resume"], ["--force"]):
            started = time.monotonic()
            second = TrainerProcess([*common, *flags], tmp_path)
            trains.append(second)
            code, output = second.finish(timeout=60)
            assert code == 2, output
            assert f"pid {first.process.pid}" in output, output
            assert "in use by another unity-train" in output and "trainers" in output
            assert time.monotonic() - started < 30  # at once: it waits for nothing
            assert _snapshot(run) == before, f"{flags} changed the first run's files"
    finally:
        first.process.send_signal(signal.SIGCONT)
    first.process.send_signal(signal.SIGINT)
    code, output = first.finish()
    assert code == 0, output
    assert load_checkpoint(run / "CartPole" / "checkpoint.pt")["step"] >= 256
    assert len(list((run / "CartPole").glob("events.out.tfevents.*"))) == 1


@pytest.mark.timeout(180)
def test_lock_of_a_killed_run_is_gone(tmp_path: Path, trains: list[TrainerProcess]) -> None:
    config = tmp_path / "config.yaml"
    behavior = ppo_behavior(max_steps=10_000_000, summary_freq=256, checkpoint_interval=10**9)
    config.write_text(yaml.safe_dump({"behaviors": {"CartPole": behavior}}), encoding="utf-8")
    common = [str(config), "--gym-id", "CartPole-v1", "--run-id", "killed",
              "--results-dir", str(tmp_path / "results")]  # fmt: skip
    first = TrainerProcess(common, tmp_path)
    trains.append(first)
    first.wait_for("Step:")
    first.process.kill()  # no clean-up at all: the OS drops the flock
    first.process.wait()
    second = TrainerProcess([*common, "--force"], tmp_path)
    trains.append(second)
    second.wait_for("Step:")
    second.process.send_signal(signal.SIGINT)
    code, output = second.finish()
    assert code == 0, output


def test_a_run_in_use_is_refused_before_the_heavy_start_up(tmp_path: Path) -> None:
    """A second ``unity-train`` on a locked run exits 2 without importing torch, the game or
    anything else costly, and creates nothing."""
    config = tmp_path / "config.yaml"
    behavior = ppo_behavior(max_steps=1000)
    config.write_text(yaml.safe_dump({"behaviors": {"CartPole": behavior}}), encoding="utf-8")
    results = tmp_path / "results"
    lock = RunLock.acquire(results / "busy", "busy")  # this test process holds the run
    script = textwrap.dedent(
        f"""
        import sys
        from trainers.cli import main
        code = main([{str(config)!r}, "--gym-id", "CartPole-v1", "--run-id", "busy",
                     "--results-dir", {str(results)!r}])
        print("exit", code, "torch imported", "torch" in sys.modules)
        """
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            check=False,
        )
    finally:
        lock.release()
    assert "exit 2 torch imported False" in done.stdout, done.stdout + done.stderr
    assert "in use by another unity-train" in done.stderr
    assert f"pid {os.getpid()}" in done.stderr
    assert [entry.name for entry in (results / "busy").iterdir()] == [".unity-train.lock"]
    assert not (results / "busy" / "run_logs").exists()
