"""``unity-train`` with the shipped FoodCollector configs (PPO and SAC) on the built-in scene.

Each run loads ``trainers/configs/FoodCollector_<trainer>.yaml`` as shipped (its keys and values
are those of ML-Agents' ``config/ppo/FoodCollector.yaml`` and ``config/sac/FoodCollector.yaml``)
and shortens only the run and the sizes that decide when the first update happens. The game is a
real headless player over gRPC on 127.0.0.1 with hybrid actions: the exported ONNX model takes
the rays and the vector and returns 3 continuous actions and the laser branch.
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

CONFIGS = Path(__file__).resolve().parents[2] / "trainers" / "configs"
RUN_ARGS = ("--scene", "FoodCollector", "--seed", "3", "--no-graphics", "--num-envs", "1",
            "--env-args", "--option", "max_step=200")  # fmt: skip


def _config(trainer: str) -> dict:  # type: ignore[type-arg]
    return yaml.safe_load((CONFIGS / f"FoodCollector_{trainer}.yaml").read_text(encoding="utf-8"))


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


def _check_export(run: Path, trainer: str) -> None:
    state = load_checkpoint(run / "FoodCollector" / "checkpoint.pt")
    assert state["trainer_type"] == trainer and state["update_count"] >= 1
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


def test_ppo_config_trains_food_collector_and_exports_onnx(run_train: RunTrain) -> None:
    config = _config("ppo")
    behavior = config["behaviors"]["FoodCollector"]
    behavior.update(max_steps=1500, summary_freq=500, checkpoint_interval=10**6, time_horizon=32)
    behavior["hyperparameters"].update(buffer_size=320, batch_size=64, num_epoch=1)
    run = run_train(config, *RUN_ARGS)
    scalars = tensorboard_scalars(run / "FoodCollector")
    assert all(np.isfinite(scalars["Losses/Policy Loss"]))
    _check_export(run, "ppo")


def test_sac_config_trains_food_collector_and_exports_onnx(run_train: RunTrain) -> None:
    config = _config("sac")
    behavior = config["behaviors"]["FoodCollector"]
    behavior.update(max_steps=1500, summary_freq=500, checkpoint_interval=10**6)
    behavior["hyperparameters"].update(batch_size=64, buffer_init_steps=200, steps_per_update=20.0)
    run = run_train(config, *RUN_ARGS)
    scalars = tensorboard_scalars(run / "FoodCollector")
    assert all(np.isfinite(scalars["Losses/Q1 Loss"]))
    _check_export(run, "sac")
