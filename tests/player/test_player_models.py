"""``--model``: the player acts with ONNX policies that ``unity-train`` exported (real training
runs and player processes). What it plays is recorded with ``--record-demo`` and checked against
onnxruntime run here on the recorded observations: the same actions, memories carried per agent
and reset at each episode end. Also the choice of behaviors and the errors."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import pytest
import yaml

from unity_gym.demo import read_demonstration
from unity_gym.player.errors import PlayerError
from unity_gym.player.onnx_policy import assign_models
from unity_gym.player.scenes import get_scene_class

pytestmark = pytest.mark.timeout(300)

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "trainers" / "configs"

#: Short runs: enough to export a model (of a barely trained policy) quickly.
RUNS: dict[str, dict[str, Any]] = {
    "Basic": {"max_steps": 600, "summary_freq": 300},
    "3DBall": {
        "max_steps": 1200,
        "summary_freq": 600,
        "time_horizon": 64,
        "hyperparameters": {"buffer_size": 600, "batch_size": 100},
        "network_settings": {"hidden_units": 16},
    },
    "GridWorld": {
        "max_steps": 300,
        "summary_freq": 150,
        "network_settings": {"hidden_units": 16},
    },
    "Hallway": {
        "max_steps": 200,
        "summary_freq": 100,
        "time_horizon": 16,
        "hyperparameters": {"buffer_size": 64, "batch_size": 32},
        "network_settings": {
            "hidden_units": 16,
            "num_layers": 1,
            "memory": {"sequence_length": 4, "memory_size": 8},
        },
        "threaded": False,
    },
}


def _merge(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in changes.items():
        merged[key] = _merge(base.get(key, {}), value) if isinstance(value, dict) else value
    return merged


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``model(scene)``: the ONNX model of a short ``unity-train`` run on ``scene`` (trained
    once per module)."""
    root = tmp_path_factory.mktemp("runs")
    trained: dict[str, Path] = {}

    def train(scene: str) -> Path:
        if scene not in trained:
            config = yaml.safe_load((CONFIGS / f"{scene}_ppo.yaml").read_text())
            behavior = _merge(config["behaviors"][scene], RUNS[scene])
            path = root / f"{scene}.yaml"
            path.write_text(yaml.safe_dump({"behaviors": {scene: behavior}}))
            result = subprocess.run(
                [sys.executable, "-m", "trainers", str(path), "--scene", scene,
                 "--run-id", scene, "--results-dir", str(root), "--seed", "2"],
                cwd=root, capture_output=True, text=True, timeout=240,
            )  # fmt: skip
            assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
            trained[scene] = root / scene / f"{scene}.onnx"
        return trained[scene]

    return train


def _player(*args: str, python: tuple[str, ...] = ("-m", "unity_gym.player")) -> str:
    """Run the player; returns ``exit <code>`` and its output."""
    result = subprocess.run(
        [sys.executable, *python, *args, "-logFile", "-"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return f"exit {result.returncode}\n{result.stdout}{result.stderr}"


def _replay(path: Path, demo: Path) -> tuple[np.ndarray, np.ndarray, int]:
    """The recorded actions of the demonstration's decisions, and the actions onnxruntime's
    deterministic outputs give for the recorded observations (memories carried through each
    recorded episode, zeros at its start); also the number of episodes seen."""
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    inputs = {node.name: node.shape for node in session.get_inputs()}
    outputs = [node.name for node in session.get_outputs()]
    wanted = [n for n in outputs if n.startswith("deterministic_")]
    recurrent = "recurrent_in" in inputs
    recording = read_demonstration(demo)
    recorded, replayed = [], []
    memory = None
    previous_agent = None
    begins = True
    episodes = 0
    for step in recording.steps:
        if begins or step.agent_id != previous_agent:
            memory = np.zeros((1, 1, inputs["recurrent_in"][2]), np.float32) if recurrent else None
            episodes += 1
        previous_agent = step.agent_id
        begins = step.done  # the next record begins another episode
        if step.done:
            continue
        feed = {f"obs_{i}": obs[None].astype(np.float32) for i, obs in enumerate(step.observations)}
        if "action_masks" in inputs:
            allowed = np.ones(inputs["action_masks"][1], np.float32)
            if step.action_mask is not None:  # only behaviors that mask record masks
                allowed = 1.0 - step.action_mask.astype(np.float32)
            feed["action_masks"] = allowed[None]
        names = list(wanted)
        if recurrent:
            feed["recurrent_in"] = memory
            names.append("recurrent_out")
        found = dict(zip(names, session.run(names, feed), strict=True))
        if recurrent:
            memory = found["recurrent_out"]
        if "deterministic_continuous_actions" in found:
            recorded.append(step.continuous_actions)
            replayed.append(found["deterministic_continuous_actions"][0])
        else:
            recorded.append(step.discrete_actions)
            replayed.append(found["deterministic_discrete_actions"][0])
    return np.array(recorded), np.array(replayed), episodes


@pytest.mark.parametrize(
    ("scene", "options"),
    [("Basic", []), ("3DBall", []), ("GridWorld", []), ("Hallway", ["--option", "max_step=30"])],
)
def test_the_player_acts_as_onnxruntime_does_for_the_recorded_observations(
    scene: str, options: list[str], model: Callable[[str], Path], tmp_path: Path
) -> None:
    path = model(scene)
    demo = tmp_path / "played.demo"
    log = _player(
        "--scene", scene, "--model", str(path), "--seed", "5", *options,
        "--record-demo", str(demo), "--record-steps", "300",
    )  # fmt: skip
    assert log.startswith("exit 0"), log
    behavior = get_scene_class(scene)({}).behaviors()[0].full_name
    assert f"Behavior {behavior} plays model {path} (deterministic actions" in log
    assert "playing with the models given" in log
    recorded, replayed, episodes = _replay(path, demo)
    assert len(recorded) > 100
    if recorded.dtype.kind == "f":
        np.testing.assert_allclose(recorded, replayed, atol=1e-5)
        assert np.abs(recorded).max() > 0.0
    else:
        np.testing.assert_array_equal(recorded, replayed)
    if scene == "Hallway":
        assert "memory 8" in log
        assert episodes > 16  # memories were reset at episode ends inside the recording


def test_models_change_the_play_and_sampled_actions_vary(
    model: Callable[[str], Path], tmp_path: Path
) -> None:
    path = model("3DBall")
    runs = {}
    for name, extra in (("heuristic", []), ("model", ["--model", str(path)]),
                        ("sampled", ["--model", str(path), "--sampled"]),
                        ("sampled_again", ["--model", str(path), "--sampled"])):  # fmt: skip
        demo = tmp_path / f"{name}.demo"
        log = _player(
            "--scene", "3DBall", *extra, "--record-demo", str(demo), "--record-steps", "120"
        )
        assert log.startswith("exit 0"), log
        runs[name] = read_demonstration(demo).continuous_actions()
    assert "sampled actions" in log
    assert not np.allclose(runs["heuristic"], runs["model"])
    assert not np.allclose(runs["model"], runs["sampled"])
    assert not np.allclose(runs["sampled"], runs["sampled_again"])  # drawn anew each run


def test_model_and_video_together(model: Callable[[str], Path], tmp_path: Path) -> None:
    target = tmp_path / "basic.gif"
    log = _player(
        "--scene", "Basic", "--model", f"Basic={model('Basic')}", "--record-video", str(target),
        "--video-steps", "30",
    )  # fmt: skip
    assert log.startswith("exit 0"), log
    assert "Wrote video" in log and "30 frames" in log and target.stat().st_size > 1000


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scene", "Basic", "--model", "{tmp}/missing.onnx"], "no such file"),
        (
            ["--scene", "Basic", "--model", "{3DBall}"],
            "does not fit behavior Basic?team=0: the model takes obs_0 (8,); the behavior's "
            "observations are Basic (20,)",
        ),
        (
            ["--scene", "Basic", "--model", "Nope={Basic}"],
            "the scene has no behavior 'Nope' (behaviors: Basic?team=0)",
        ),
        (
            ["--scene", "Tennis", "--model", "{Basic}"],
            "matches no behavior of the scene and the scene has several",
        ),
        (["--scene", "Basic", "--model", "{tmp}/bad.onnx"], "is not an ONNX model"),
        (
            ["--scene", "Basic", "--model", "{Basic}", "--mlagents-port", "1"],
            "--model is for play without a trainer",
        ),
        (["--scene", "Basic", "--sampled"], "--sampled chooses how --model plays"),
    ],
)
def test_model_errors_say_what_is_wrong(
    args: list[str], message: str, model: Callable[[str], Path], tmp_path: Path
) -> None:
    (tmp_path / "bad.onnx").write_bytes(b"not a model")
    names = {"tmp": tmp_path}
    for scene in ("Basic", "3DBall"):
        if any(f"{{{scene}}}" in a for a in args):
            names[scene] = model(scene)
    log = _player(*(a.format(**names) for a in args))
    assert log.startswith("exit 2"), log
    assert message in log


def test_without_onnxruntime_the_error_names_the_extra(model: Callable[[str], Path]) -> None:
    code = (
        "import sys; sys.modules['onnxruntime'] = None; "
        "from unity_gym.player.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    log = _player("--scene", "Basic", "--model", str(model("Basic")), python=("-c", code))
    assert log.startswith("exit 2"), log
    assert "pip install 'unity-gym[onnx]'" in log


def test_models_are_assigned_by_file_name_or_behavior() -> None:
    tennis = get_scene_class("Tennis")({}).behaviors()
    both = {"Tennis?team=0": Path("r/Tennis.onnx"), "Tennis?team=1": Path("r/Tennis.onnx")}
    assert assign_models(["r/Tennis.onnx"], tennis) == both
    assert assign_models(["Tennis=r/Tennis.onnx"], tennis) == both
    assert assign_models(["Tennis?team=1=a=b.onnx", "Tennis?team=0=c.onnx"], tennis) == {
        "Tennis?team=1": Path("a=b.onnx"),
        "Tennis?team=0": Path("c.onnx"),
    }
    with pytest.raises(PlayerError, match="given two models"):
        assign_models(["r/Tennis.onnx", "Tennis?team=0=c.onnx"], tennis)
    with pytest.raises(PlayerError, match="no behavior 'Tennis\\?team=2'"):
        assign_models(["Tennis?team=2=c.onnx"], tennis)
    walljump = get_scene_class("WallJump")({}).behaviors()
    assert assign_models(["x/BigWallJump.onnx"], walljump) == {
        "BigWallJump?team=0": Path("x/BigWallJump.onnx")
    }
    basic = get_scene_class("Basic")({}).behaviors()
    assert assign_models(["any/name.onnx"], basic) == {"Basic?team=0": Path("any/name.onnx")}
