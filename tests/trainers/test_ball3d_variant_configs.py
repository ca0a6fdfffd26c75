"""``unity-train`` with the shipped 3DBallHard and Visual3DBall configs on the built-in scenes.

Each run loads ``trainers/configs/<name>.yaml`` as shipped and shortens only the run (``max_steps``,
``summary_freq``, ``checkpoint_interval``) and the sizes that decide when the first update
happens (``buffer_size``, ``batch_size``, ``time_horizon``), so a few hundred steps train and
export a model. The games are real headless-player processes over gRPC on 127.0.0.1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import pytest
import yaml
from trainer_test_support import RunTrain

import unity_gym.vector  # noqa: F401  (a broken import fails the module, never skips it)

pytestmark = pytest.mark.timeout(300)

CONFIGS = Path(__file__).resolve().parents[2] / "trainers" / "configs"


def _shortened(name: str, max_steps: int, **hyper: int) -> tuple[str, dict[str, Any]]:
    config = yaml.safe_load((CONFIGS / f"{name}.yaml").read_text(encoding="utf-8"))
    ((behavior_name, behavior),) = config["behaviors"].items()
    behavior.update(max_steps=max_steps, summary_freq=max_steps // 2, checkpoint_interval=10**6)
    behavior["time_horizon"] = hyper.pop("time_horizon", behavior["time_horizon"])
    behavior["hyperparameters"].update(hyper)
    return behavior_name, config


def _final_steps(run: Path, behavior: str) -> int:
    status = json.loads((run / "run_logs" / "training_status.json").read_text())
    return int(status[behavior]["final_checkpoint"]["steps"])


def test_ppo_3dballhard_config_trains_on_the_stacked_observations(run_train: RunTrain) -> None:
    name, config = _shortened(
        "3DBallHard_ppo", 480, buffer_size=240, batch_size=120, time_horizon=20
    )
    run = run_train(config, "--scene", "3DBallHard", "--seed", "4", "--no-graphics")
    assert name == "3DBallHard" and _final_steps(run, name) == 480  # 40 decisions x 12 agents
    session = onnxruntime.InferenceSession(str(run / "3DBallHard.onnx"))
    shapes = [(i.name, i.shape) for i in session.get_inputs()]
    assert shapes == [("obs_0", ["batch", 27]), ("obs_1", ["batch", 18])]
    (actions,) = session.run(
        ["deterministic_continuous_actions"],
        {"obs_0": np.zeros((2, 27), np.float32), "obs_1": np.zeros((2, 18), np.float32)},
    )
    assert actions.shape == (2, 2)


def test_sac_3dballhard_config_trains(run_train: RunTrain) -> None:
    name, config = _shortened("3DBallHard_sac", 360, batch_size=64, time_horizon=20)
    run = run_train(config, "--scene", "3DBallHard", "--seed", "4", "--no-graphics")
    assert _final_steps(run, name) == 360
    assert (run / "3DBallHard.onnx").is_file()


def test_ppo_visual3dball_config_trains_a_cnn_on_camera_pictures(run_train: RunTrain) -> None:
    name, config = _shortened(
        "Visual3DBall_ppo", 320, buffer_size=160, batch_size=32, time_horizon=20
    )
    assert config["behaviors"][name]["network_settings"]["vis_encode_type"] == "simple"
    run = run_train(config, "--scene", "Visual3DBall", "--seed", "4", "--no-graphics")
    assert name == "Visual3DBall" and _final_steps(run, name) == 320  # 40 decisions x 8
    session = onnxruntime.InferenceSession(str(run / "Visual3DBall.onnx"))
    ((input_name, shape),) = [(i.name, i.shape) for i in session.get_inputs()]
    assert input_name == "obs_0" and shape[1:] == [12, 84, 84]
    (actions,) = session.run(
        ["deterministic_continuous_actions"], {"obs_0": np.zeros((1, 12, 84, 84), np.float32)}
    )
    assert actions.shape == (1, 2)
