"""Faults: Ctrl-C saves and exits cleanly; checkpoint files are never half-written."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
import yaml
from trainer_test_support import ppo_behavior

from trainers.common.checkpoints.files import load_checkpoint, save_checkpoint

REPO_ROOT = Path(__file__).resolve().parents[2]


def _lines(stream: object, sink: queue.Queue[str]) -> None:
    for line in iter(stream.readline, ""):  # type: ignore[attr-defined]
        sink.put(line)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_stop_signal_saves_a_checkpoint_and_exits_cleanly(
    tmp_path: Path, stop_signal: signal.Signals
) -> None:
    behavior = ppo_behavior(max_steps=10_000_000, summary_freq=256, checkpoint_interval=10**9)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"behaviors": {"CartPole": behavior}}))
    results = tmp_path / "results"
    command = [sys.executable, "-m", "trainers", str(config), "--gym-id", "CartPole-v1",
               "--run-id", "sig", "--results-dir", str(results)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = subprocess.Popen(command, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=_lines, args=(process.stderr, lines), daemon=True)
    reader.start()
    seen: list[str] = []
    try:
        while not any("Step:" in line for line in seen):
            seen.append(lines.get(timeout=60))  # training has produced a summary
        process.send_signal(stop_signal)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    reader.join(timeout=10)
    while not lines.empty():
        seen.append(lines.get())
    output = "".join(seen)
    assert "Learning was interrupted" in output
    run = results / "sig"
    state = load_checkpoint(run / "CartPole" / "checkpoint.pt")
    assert 256 <= state["step"] < 10_000_000
    assert (run / "CartPole.onnx").is_file()
    assert (run / "run_logs" / "timers.json").is_file()
    assert not list(run.rglob("*.tmp"))


class _Unpicklable:
    def __reduce__(self) -> str:
        raise RuntimeError("cannot serialize")


def test_failed_write_keeps_the_previous_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint.pt"
    save_checkpoint({"step": 1, "weights": torch.ones(3)}, path)
    with pytest.raises(RuntimeError, match="cannot serialize"):
        save_checkpoint({"step": 2, "weights": torch.zeros(3), "bad": _Unpicklable()}, path)
    assert load_checkpoint(path)["step"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint.pt"]  # no temp file left


class _Arbitrary:
    pass


def test_checkpoints_load_with_weights_only(tmp_path: Path) -> None:
    path = tmp_path / "evil.pt"
    torch.save({"payload": _Arbitrary()}, path)
    with pytest.raises(ValueError, match="not a readable checkpoint"):
        load_checkpoint(path)
