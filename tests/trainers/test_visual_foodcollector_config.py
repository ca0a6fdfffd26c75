"""``unity-train`` with the shipped VisualFoodCollector PPO config on the built-in scene.

The run loads ``trainers/configs/VisualFoodCollector_ppo.yaml`` as shipped (its keys and values
are those of ML-Agents' ``config/ppo/VisualFoodCollector.yaml``) and shortens only the run and
the sizes that decide when the first update happens. The game is a real headless player over
gRPC on 127.0.0.1 that sends each agent's 84 x 84 camera picture as a PNG next to its frozen
flag; the exported ONNX model takes both and returns the hybrid actions.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime
import pytest
import yaml
from trainer_test_support import RunTrain, tensorboard_scalars

from trainers.common.checkpoints.files import load_checkpoint

pytestmark = pytest.mark.timeout(300)

CONFIG = (
    Path(__file__).resolve().parents[2] / "trainers" / "configs" / "VisualFoodCollector_ppo.yaml"
)


def test_shipped_config_matches_the_ml_agents_reference() -> None:
    behavior = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))["behaviors"][
        "VisualFoodCollector"
    ]
    assert behavior["trainer_type"] == "ppo"
    assert behavior["hyperparameters"] == {
        "batch_size": 1024,
        "buffer_size": 10240,
        "learning_rate": 3.0e-4,
        "beta": 5.0e-3,
        "epsilon": 0.2,
        "lambd": 0.95,
        "num_epoch": 3,
        "learning_rate_schedule": "linear",
    }
    assert behavior["network_settings"] == {
        "normalize": False,
        "hidden_units": 128,
        "num_layers": 2,
        "vis_encode_type": "simple",
    }
    assert (behavior["max_steps"], behavior["time_horizon"]) == (3000000, 100)
    assert behavior["summary_freq"] == 40000


def test_config_trains_visual_food_collector_and_exports_onnx(run_train: RunTrain) -> None:
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    behavior = config["behaviors"]["VisualFoodCollector"]
    behavior.update(max_steps=1000, summary_freq=500, checkpoint_interval=10**6, time_horizon=32)
    behavior["hyperparameters"].update(buffer_size=160, batch_size=32, num_epoch=1)
    run = run_train(config, "--scene", "VisualFoodCollector", "--seed", "3", "--no-graphics",
                    "--num-envs", "1", "--num-areas", "1", "--env-args", "--option",
                    "max_step=100")  # fmt: skip
    state = load_checkpoint(run / "VisualFoodCollector" / "checkpoint.pt")
    assert state["trainer_type"] == "ppo" and state["update_count"] >= 1
    scalars = tensorboard_scalars(run / "VisualFoodCollector")
    assert scalars["Losses/Policy Loss"] and all(np.isfinite(scalars["Losses/Policy Loss"]))
    session = onnxruntime.InferenceSession(str(run / "VisualFoodCollector.onnx"))
    shapes = sorted((i.name, i.shape[1:]) for i in session.get_inputs())
    assert shapes == [("action_masks", [2]), ("obs_0", [3, 84, 84]), ("obs_1", [1])]
    feeds = {"obs_0": np.zeros((2, 3, 84, 84), np.float32), "obs_1": np.zeros((2, 1), np.float32),
             "action_masks": np.ones((2, 2), np.float32)}  # fmt: skip
    names = [o.name for o in session.get_outputs()]
    outputs = dict(zip(names, session.run(None, feeds), strict=True))
    assert outputs["continuous_actions"].shape == (2, 3)
    assert outputs["discrete_actions"].shape == (2, 1)
