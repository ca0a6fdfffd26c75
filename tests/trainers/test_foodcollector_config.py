"""``unity-train`` with the shipped FoodCollector configs (PPO and SAC) on the built-in scene.

Each run loads ``trainers/configs/FoodCollector_<trainer>.yaml`` as shipped (its keys and values
are those of ML-Agents' ``config/ppo/FoodCollector.yaml`` and ``config/sac/FoodCollector.yaml``)
and shortens only the run and the sizes that decide when the first update happens. The game is a
real headless player over gRPC on 127.0.0.1 with hybrid actions: the exported ONNX model takes
the rays and the vector and returns 3 continuous actions and the laser branch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime
import pytest
from trainer_test_support import RunTrain, shipped_config, shortened_run, tensorboard_scalars

pytestmark = pytest.mark.timeout(300)

RUN_ARGS = ("--scene", "FoodCollector", "--seed", "3", "--no-graphics", "--num-envs", "1",
            "--env-args", "--option", "max_step=200")  # fmt: skip


def _config(trainer: str) -> dict[str, Any]:
    return shipped_config("FoodCollector", trainer)


def test_shipped_configs_match_the_ml_agents_references() -> None:
    ppo = _config("ppo")["behaviors"]["FoodCollector"]
    assert ppo["trainer_type"] == "ppo"
    assert ppo["hyperparameters"] == {
        "batch_size": 1024,
        "buffer_size": 10240,
        "learning_rate": 3.0e-4,
        "beta": 5.0e-3,
        "epsilon": 0.2,
        "lambd": 0.95,
        "num_epoch": 3,
        "learning_rate_schedule": "linear",
    }
    assert ppo["network_settings"] == {
        "normalize": False,
        "hidden_units": 128,
        "num_layers": 2,
        "vis_encode_type": "simple",
    }
    assert (ppo["max_steps"], ppo["time_horizon"], ppo["summary_freq"]) == (2000000, 64, 10000)
    sac = _config("sac")["behaviors"]["FoodCollector"]
    assert sac["trainer_type"] == "sac"
    assert sac["hyperparameters"] == {
        "learning_rate": 3.0e-4,
        "learning_rate_schedule": "constant",
        "batch_size": 256,
        "buffer_size": 2048,
        "buffer_init_steps": 0,
        "tau": 0.005,
        "steps_per_update": 10.0,
        "save_replay_buffer": False,
        "init_entcoef": 0.05,
        "reward_signal_steps_per_update": 10.0,
    }
    assert sac["network_settings"] == {
        "normalize": False,
        "hidden_units": 256,
        "num_layers": 1,
        "vis_encode_type": "simple",
    }
    assert (sac["max_steps"], sac["time_horizon"], sac["summary_freq"]) == (2000000, 64, 60000)
    assert sac["threaded"] is False


@pytest.mark.parametrize("trainer", ["ppo", "sac"])
def test_config_trains_food_collector_and_exports_onnx(run_train: RunTrain, trainer: str) -> None:
    run = shortened_run(run_train, _config(trainer), "FoodCollector", 1500, *RUN_ARGS)
    scalars = tensorboard_scalars(run / "FoodCollector")
    assert scalars["Environment/Cumulative Reward"], "episodes of 200 steps ended"
    session = onnxruntime.InferenceSession(str(run / "FoodCollector.onnx"))
    shapes = sorted((i.name, i.shape[1:]) for i in session.get_inputs())
    assert shapes == [("action_masks", [2]), ("obs_0", [49]), ("obs_1", [4])]
    feeds = {"obs_0": np.zeros((3, 49), np.float32), "obs_1": np.zeros((3, 4), np.float32),
             "action_masks": np.ones((3, 2), np.float32)}  # fmt: skip
    outputs = dict(
        zip([o.name for o in session.get_outputs()], session.run(None, feeds), strict=True)
    )
    assert outputs["continuous_actions"].shape == (3, 3)
    assert outputs["discrete_actions"].shape == (3, 1)
