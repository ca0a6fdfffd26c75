"""``unity-train`` without an environment trains in the Unity Editor, as ``mlagents-learn`` does.

The Editor is played by the headless player started *after* ``unity-train`` said it listens, and
connecting to its port exactly as the Editor does when Play is pressed (``--mlagents-port``; the
trainer launches nothing). Every run is a real ``unity-train`` process over real gRPC.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from trainer_test_support import RunTrain, TrainerProcess, ppo_behavior

from unity_gym.registration import DEFAULT_SCENE, GameSettings

REPO_ROOT = Path(__file__).resolve().parents[2]
PRESS_PLAY = "press Play in the Unity Editor"
ADVICE = ("--scene 3DBall", "--env PATH")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _port_is_free(port: int) -> bool:
    """Whether a server could listen on ``port`` (connections left in TIME_WAIT allowed, as
    gRPC servers allow them)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
            probe.listen()
        except OSError:
            return False
        return True


def _config(tmp_path: Path, max_steps: int = 240) -> Path:
    behavior = ppo_behavior(max_steps=max_steps, summary_freq=120, time_horizon=20)
    path = tmp_path / "editor.yaml"
    path.write_text(yaml.safe_dump({"behaviors": {"3DBall": behavior}}), encoding="utf-8")
    return path


def _trainer(tmp_path: Path, run_id: str, *flags: str, max_steps: int = 240) -> TrainerProcess:
    """``unity-train`` on a tiny config (seed 1), results in ``tmp_path/results``."""
    args = [str(_config(tmp_path, max_steps)), "--run-id", run_id,
            "--results-dir", str(tmp_path / "results"), "--seed", "1", *flags]  # fmt: skip
    return TrainerProcess(args, tmp_path)


def _play(port: int, *args: str) -> subprocess.Popen[str]:
    """The Unity Editor pressing Play: the headless player connecting to ``port``."""
    command = [sys.executable, "-m", "unity_gym.player", "--mlagents-port", str(port),
               "--log-level", "WARNING", *args]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def _stop(process: subprocess.Popen[Any]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait()


def _press_play_once(trainer: TrainerProcess, port: int, *player_args: str) -> tuple[int, str]:
    """Press Play once the trainer listens; its exit code and stderr. The Editor's game must end
    with the trainer (closed by it)."""
    editor = None
    try:
        trainer.wait_for(PRESS_PLAY)
        editor = _play(port, *player_args)
        code, err = trainer.finish()
        assert editor.wait(timeout=30) == 0  # the trainer closed the Editor's game
    finally:
        trainer.stop()
        if editor is not None:
            _stop(editor)
    return code, err


@pytest.mark.timeout(180)
def test_unity_train_waits_for_the_editor_and_trains_when_play_is_pressed(tmp_path: Path) -> None:
    port = _free_port()
    trainer = _trainer(tmp_path, "editor", "--base-port", str(port))
    editor = None
    try:
        line = trainer.wait_for(PRESS_PLAY)
        assert f"port {port}" in line and all(advice in line for advice in ADVICE)
        time.sleep(1.0)  # Play is pressed late: the trainer keeps waiting
        assert trainer.process.poll() is None
        assert not _port_is_free(port)
        editor = _play(port, "--scene", "3DBall")
        code, err = trainer.finish()
        assert code == 0, err
        assert editor.wait(timeout=30) == 0  # the Editor's game ended with the training
    finally:
        trainer.stop()
        if editor is not None:
            _stop(editor)
    assert err.count(PRESS_PLAY) == 1
    assert "Training 3DBall (the Unity Editor, 12 slot(s)) with PPO" in err
    assert "built-in scene" not in err
    assert "3DBall. Step: 240." in err
    run = tmp_path / "results" / "editor"
    assert (run / "3DBall.onnx").is_file()
    assert (run / "3DBall" / "checkpoint.pt").is_file()
    assert _port_is_free(port)


@pytest.mark.timeout(240)
def test_a_lost_editor_is_waited_for_again(tmp_path: Path) -> None:
    port = _free_port()
    trainer = _trainer(tmp_path, "replay", "--base-port", str(port), max_steps=1200)
    first = second = None
    try:
        trainer.wait_for(PRESS_PLAY)
        first = _play(port, "--scene", "3DBall", "--max-steps", "30")  # Play stopped early
        line = trainer.wait_for("press Play in the Unity Editor within")
        assert f"port {port}" in line and "go on training" in line
        assert first.wait(timeout=30) == 0
        assert trainer.process.poll() is None
        second = _play(port, "--scene", "3DBall")
        code, err = trainer.finish()
        assert code == 0, err
        assert second.wait(timeout=30) == 0
    finally:
        trainer.stop()
        for editor in (first, second):
            if editor is not None:
                _stop(editor)
    assert "3DBall. Step: 1200." in err
    assert (tmp_path / "results" / "replay" / "3DBall.onnx").is_file()


@pytest.mark.timeout(120)
def test_nothing_connecting_is_a_clear_error(tmp_path: Path) -> None:
    port = _free_port()
    trainer = _trainer(tmp_path, "nobody", "--base-port", str(port), "--timeout-wait", "2")
    try:
        code, err = trainer.finish()
    finally:
        trainer.stop()
    assert code == 1, err
    assert "Traceback" not in err
    [error] = [line for line in err.splitlines() if line.startswith("[ERROR]")]
    assert f"nothing connected on port {port} within 2 s" in error
    assert PRESS_PLAY in error and all(advice in error for advice in ADVICE)
    assert _port_is_free(port)
    assert not (tmp_path / "results" / "nobody").exists()  # nothing was trained


@pytest.mark.timeout(120)
def test_an_editor_scene_with_several_behaviors_is_a_clear_error(tmp_path: Path) -> None:
    port = _free_port()
    trainer = _trainer(tmp_path, "tennis", "--base-port", str(port))
    code, err = _press_play_once(trainer, port, "--scene", "Tennis")
    assert code == 2, err
    assert "Traceback" not in err
    assert "several behaviors (Tennis?team=0, Tennis?team=1)" in err
    assert "Name every behavior of the scene under `behaviors:`" in err and "--env PATH" in err
    assert err.count(PRESS_PLAY) == 1  # the Editor was not asked for a second Play
    assert _port_is_free(port)


@pytest.mark.timeout(180)
def test_an_editor_scene_with_several_behaviors_trains_when_the_config_says_so(
    tmp_path: Path,
) -> None:
    # A config with self_play: the Editor's one connection is opened for every behavior.
    behavior = ppo_behavior(max_steps=200, summary_freq=100, time_horizon=20)
    behavior["self_play"] = {"save_steps": 100, "swap_steps": 100, "team_change": 200}
    config = tmp_path / "tennis.yaml"
    config.write_text(yaml.safe_dump({"behaviors": {"Tennis": behavior}}), encoding="utf-8")
    port = _free_port()
    trainer = TrainerProcess(
        [str(config), "--run-id", "tennis", "--results-dir", str(tmp_path / "results"),
         "--seed", "1", "--base-port", str(port)],
        tmp_path,
    )  # fmt: skip
    code, err = _press_play_once(trainer, port, "--scene", "Tennis")
    assert code == 0, err
    assert err.count(PRESS_PLAY) == 1
    assert "the Unity Editor" in err and "PettingZoo" in err
    assert (tmp_path / "results" / "tennis" / "Tennis.onnx").is_file()
    assert _port_is_free(port)


@pytest.mark.parametrize(
    ("flags", "env_settings", "message"),
    [
        (("--num-envs", "2"), {}, "num_envs must be 1 if env_path is not set"),
        ((), {"num_envs": 3}, "env_settings.num_envs: 3 games cannot run in the Unity Editor"),
        (("--backend", "ray"), {}, "the Unity Editor connects to this machine"),
    ],
    ids=["flag", "config", "ray"],
)
def test_settings_the_editor_cannot_take_are_config_errors(
    run_train: RunTrain,
    capsys: pytest.CaptureFixture[str],
    flags: tuple[str, ...],
    env_settings: dict[str, Any],
    message: str,
) -> None:
    config = {"behaviors": {"3DBall": ppo_behavior()}, "env_settings": env_settings}
    run_train(config, *flags, "--base-port", str(_free_port()), expect=2)
    err = capsys.readouterr().err
    assert message in err
    assert PRESS_PLAY not in err  # refused before anything listened


def test_game_settings_choose_the_editor_explicitly() -> None:
    assert GameSettings().scene == DEFAULT_SCENE  # Unity-v0's default game is unchanged
    editor = GameSettings(editor=True, base_port=5010)
    assert editor.scene is None and editor.file_name is None
    assert editor.executable() is None and not editor.is_builtin
    for conflicting, text in [
        ({"scene": "3DBall"}, "cannot be combined"),
        ({"file_name": "builds/game"}, "cannot be combined"),
        ({"additional_args": ["--flag"]}, "not launched"),
        ({"num_agents": 4}, "only apply to built-in scenes"),
        ({"worker_id": 1}, "worker_id must be 0"),
    ]:
        with pytest.raises(ValueError, match=text):
            GameSettings(editor=True, **conflicting)
