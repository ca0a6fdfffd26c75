"""Checkpoints after faults: ``--resume`` skips unreadable newest checkpoints, the status file
agrees with the checkpoint used, and a save cut short by a kill leaves the history bounded.

Every run is a real ``unity-train`` run on CartPole; faults are made on the files a finished run
left (damaged bytes, or the files of a save that was killed before it was recorded).
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from trainer_test_support import RunTrain, ppo_behavior

from trainers.common.checkpoints.files import load_checkpoint, save_checkpoint

pytestmark = pytest.mark.timeout(120)

REPO_ROOT = Path(__file__).resolve().parents[2]
GYM = ("--gym-id", "CartPole-v1")


def _config(max_steps: int, **overrides: Any) -> dict[str, Any]:
    behavior = ppo_behavior(max_steps=max_steps, keep_checkpoints=2, **overrides)
    return {"behaviors": {"CartPole": behavior}}


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garbage(path: Path) -> None:
    path.write_bytes(b"this is not a checkpoint\n" * 50)


def _without_optimizers(path: Path) -> None:
    state = load_checkpoint(path)
    del state["optimizers"]
    save_checkpoint(state, path)


Damage = Callable[[Path], None]


def _status(run: Path) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((run / "run_logs" / "training_status.json").read_text())
    return record["CartPole"]


def _step_files(behavior_dir: Path) -> list[str]:
    return sorted(p.name for p in behavior_dir.glob("CartPole-*") if p.suffix in (".pt", ".onnx"))


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("[WARNING] --resume:")]


@pytest.mark.parametrize(
    "damage", [_truncate, _garbage, _without_optimizers], ids=["truncated", "garbage", "incomplete"]
)
def test_resume_falls_back_to_the_newest_readable_checkpoint(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str], damage: Damage
) -> None:
    run = run_train(_config(600), *GYM, "--seed", "1")
    behavior_dir = run / "CartPole"
    assert _step_files(behavior_dir) == [
        "CartPole-400.onnx",
        "CartPole-400.pt",
        "CartPole-600.onnx",
        "CartPole-600.pt",
    ]
    latest, newest, older = (
        behavior_dir / "checkpoint.pt",
        behavior_dir / "CartPole-600.pt",
        behavior_dir / "CartPole-400.pt",
    )
    damage(latest)  # both copies of the step-600 checkpoint
    damage(newest)
    capsys.readouterr()

    run_train(_config(500), *GYM, "--resume")
    err = capsys.readouterr().err
    [warning] = _warnings(err)
    assert str(latest) in warning and str(newest) in warning
    assert f"Resuming CartPole from {older} (step 400) instead" in warning
    assert f"Resuming CartPole from step 400 ({older})." in err

    # The run continued from step 400: its final save is at 500, the unreadable step-600 files
    # are gone and the status lists what is on disk.
    assert load_checkpoint(latest)["step"] == 500
    assert _step_files(behavior_dir) == [
        "CartPole-400.onnx",
        "CartPole-400.pt",
        "CartPole-500.onnx",
        "CartPole-500.pt",
    ]
    status = _status(run)
    assert [c["steps"] for c in status["checkpoints"]] == [400, 500]
    assert [Path(c["file_path"]).name for c in status["checkpoints"]] == [
        "CartPole-400.pt",
        "CartPole-500.pt",
    ]
    assert status["step"] == 500 and status["final_checkpoint"]["steps"] == 500


def test_resume_uses_the_step_file_when_only_checkpoint_pt_is_damaged(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    run = run_train(_config(600), *GYM, "--seed", "1")
    latest, newest = run / "CartPole" / "checkpoint.pt", run / "CartPole" / "CartPole-600.pt"
    _truncate(latest)
    capsys.readouterr()

    run_train(_config(700), *GYM, "--resume")
    err = capsys.readouterr().err
    [warning] = _warnings(err)
    assert str(latest) in warning
    assert f"Resuming CartPole from {newest} (step 600) instead" in warning
    assert "Resuming CartPole from step 600" in err
    assert load_checkpoint(latest)["step"] == 700
    assert [c["steps"] for c in _status(run)["checkpoints"]] == [600, 700]


def test_resume_without_a_readable_checkpoint_fails_with_a_clear_error(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    run = run_train(_config(600), *GYM)
    behavior_dir = run / "CartPole"
    damaged = [behavior_dir / name for name in ("checkpoint.pt", "CartPole-400.pt")]
    damaged.append(behavior_dir / "CartPole-600.pt")
    for path in damaged:
        _garbage(path)
    capsys.readouterr()

    run_train(_config(800), *GYM, "--resume", expect=2)
    err = capsys.readouterr().err
    assert "--resume: CartPole has no readable checkpoint" in err
    assert "--force" in err
    for path in damaged:
        assert str(path) in err
        assert path.read_bytes().startswith(b"this is not a checkpoint")  # nothing was replaced


def test_a_readable_checkpoint_that_does_not_fit_is_refused_not_skipped(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only unreadable files are skipped: a checkpoint of another network is a mismatch even
    though older checkpoints that fit are beside it."""
    run = run_train(_config(600), *GYM)
    wider = ppo_behavior(max_steps=200, network_settings={"hidden_units": 32})
    other = run_train({"behaviors": {"CartPole": wider}}, *GYM, run_id="wider")
    foreign = load_checkpoint(other / "CartPole" / "checkpoint.pt")
    foreign["step"] = 600  # as new as the newest step file, so it is the one --resume reads
    save_checkpoint(foreign, run / "CartPole" / "checkpoint.pt")
    capsys.readouterr()

    run_train(_config(800), *GYM, "--resume", expect=2)
    err = capsys.readouterr().err
    assert "network 'policy' of the checkpoint does not fit behavior CartPole" in err
    assert not _warnings(err)
    assert "Resuming" not in err


def _simulate_save_killed_before_it_was_recorded(
    behavior_dir: Path, step: int, *, mirrored: bool
) -> None:
    """The files a save at ``step`` writes before it records them in the status and prunes:
    ``<prefix>-<step>.pt``, then the ``checkpoint.pt`` mirror and the ONNX model (``mirrored``),
    or the temporary file of a mirror whose writing was cut short."""
    state = load_checkpoint(behavior_dir / "checkpoint.pt")
    state["step"] = step
    save_checkpoint(state, behavior_dir / f"CartPole-{step}.pt")
    if mirrored:
        save_checkpoint(state, behavior_dir / "checkpoint.pt")
        shutil.copyfile(behavior_dir / "CartPole-600.onnx", behavior_dir / f"CartPole-{step}.onnx")
    else:
        partial = (behavior_dir / f"CartPole-{step}.pt").read_bytes()[:100]
        (behavior_dir / ".checkpoint.pt.k1ll3d.tmp").write_bytes(partial)


@pytest.mark.parametrize("mirrored", [True, False], ids=["after-mirror", "before-mirror"])
def test_next_save_restores_keep_checkpoints_after_a_killed_save(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str], mirrored: bool
) -> None:
    run = run_train(_config(600), *GYM, "--seed", "1")
    behavior_dir = run / "CartPole"
    _simulate_save_killed_before_it_was_recorded(behavior_dir, 800, mirrored=mirrored)
    assert [c["steps"] for c in _status(run)["checkpoints"]] == [400, 600]
    assert len(list(behavior_dir.glob("CartPole-*.pt"))) == 3  # one more than keep_checkpoints
    capsys.readouterr()

    run_train(_config(1000), *GYM, "--resume")
    err = capsys.readouterr().err
    assert "Resuming CartPole from step 800" in err  # the newest complete checkpoint
    if not mirrored:
        [warning] = _warnings(err)
        assert str(behavior_dir / "checkpoint.pt") in warning
        assert str(behavior_dir / "CartPole-800.pt") in warning
    # The next save keeps the newest two on disk: the one the run resumed from and its own.
    kept = ["CartPole-1000.onnx", "CartPole-1000.pt", "CartPole-800.onnx", "CartPole-800.pt"]
    assert _step_files(behavior_dir) == [name for name in kept if mirrored or name != kept[2]]
    assert not list(behavior_dir.glob("*.tmp"))
    status = _status(run)
    assert [c["steps"] for c in status["checkpoints"]] == [800, 1000]
    assert [Path(c["file_path"]).name for c in status["checkpoints"]] == [
        "CartPole-800.pt",
        "CartPole-1000.pt",
    ]
    if mirrored:  # the ONNX model of the unrecorded save is recorded and kept with it
        assert status["checkpoints"][0]["auxillary_file_paths"] == [
            str(behavior_dir / "CartPole-800.onnx")
        ]


def _lines(stream: Any, sink: queue.Queue[str | None]) -> None:
    for line in iter(stream.readline, ""):
        sink.put(line)
    sink.put(None)  # end of output


def test_status_follows_the_checkpoint_resumed_from_before_any_save(tmp_path: Path) -> None:
    """A run resumed from an older checkpoint and killed before its first save leaves a status
    that names that checkpoint's step, not the unreadable newer one."""
    results = tmp_path / "results"
    config = tmp_path / "config.yaml"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    command = [sys.executable, "-m", "trainers", str(config), *GYM, "--run-id", "killed",
               "--results-dir", str(results)]  # fmt: skip
    config.write_text(yaml.safe_dump(_config(600)))
    subprocess.run(command, cwd=tmp_path, env=env, check=True, capture_output=True, timeout=90)
    behavior_dir = results / "killed" / "CartPole"
    for name in ("checkpoint.pt", "CartPole-600.pt"):
        _truncate(behavior_dir / name)
    assert _status(results / "killed")["final_checkpoint"]["steps"] == 600

    config.write_text(yaml.safe_dump(_config(10**9, checkpoint_interval=10**9)))
    process = subprocess.Popen(
        [*command, "--resume"], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True
    )
    lines: queue.Queue[str | None] = queue.Queue()
    reader = threading.Thread(target=_lines, args=(process.stderr, lines), daemon=True)
    reader.start()
    seen: list[str] = []
    try:
        while not any("Resuming CartPole from step" in line for line in seen):
            line = lines.get(timeout=60)
            assert line is not None, "unity-train ended without resuming:\n" + "".join(seen)
            seen.append(line)
        process.send_signal(signal.SIGKILL)  # no save, no clean-up
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "Resuming CartPole from step 400" in seen[-1]
    status = _status(results / "killed")
    assert status["step"] == 400
    assert [c["steps"] for c in status["checkpoints"]] == [400]
    assert "final_checkpoint" not in status
