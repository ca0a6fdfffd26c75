"""``unity-train`` with the shipped Walker configs (PPO and SAC) on the built-in scene.

The runs load ``trainers/configs/Walker_ppo.yaml`` and ``Walker_sac.yaml`` as shipped (their keys
and values are those of ML-Agents' ``config/ppo/Walker.yaml`` and ``config/sac/Walker.yaml``) and
shorten only the run and the sizes that decide when the first update happens. The game is a
real headless player over gRPC on 127.0.0.1 whose walkers are simulated by MuJoCo: 10 agents
deciding every 5 Academy steps, 243 observations and 39 continuous actions, which the ONNX model
takes and gives. (``test_settings.py`` checks a few fields of every bundled config against spec
§10; this file checks every key of the Walker configs and trains them.)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime
import pytest
from trainer_test_support import RunTrain, shipped_config, shortened_run, tensorboard_scalars

pytest.importorskip("mujoco")

pytestmark = pytest.mark.timeout(400)

RUN_ARGS = ("--scene", "Walker", "--seed", "3", "--no-graphics", "--num-envs", "1",
            "--env-args", "--option", "max_step=200")  # fmt: skip


def _config(trainer: str) -> dict[str, Any]:
    return shipped_config("Walker", trainer)


def test_shipped_configs_match_the_ml_agents_references() -> None:
    network = {"normalize": True, "hidden_units": 256, "num_layers": 3, "vis_encode_type": "simple"}
    ppo = _config("ppo")["behaviors"]["Walker"]
    assert ppo["trainer_type"] == "ppo"
    assert ppo["hyperparameters"] == {
        "batch_size": 2048,
        "buffer_size": 20480,
        "learning_rate": 3.0e-4,
        "beta": 5.0e-3,
        "epsilon": 0.2,
        "lambd": 0.95,
        "num_epoch": 3,
        "learning_rate_schedule": "linear",
    }
    assert ppo["network_settings"] == network
    assert (ppo["max_steps"], ppo["time_horizon"], ppo["summary_freq"]) == (30000000, 1000, 30000)
    sac = _config("sac")["behaviors"]["Walker"]
    assert sac["trainer_type"] == "sac"
    assert sac["hyperparameters"] == {
        "learning_rate": 3.0e-4,
        "learning_rate_schedule": "constant",
        "batch_size": 1024,
        "buffer_size": 2000000,
        "buffer_init_steps": 0,
        "tau": 0.005,
        "steps_per_update": 30.0,
        "save_replay_buffer": False,
        "init_entcoef": 1.0,
        "reward_signal_steps_per_update": 30.0,
    }
    assert sac["network_settings"] == network
    assert (sac["max_steps"], sac["time_horizon"], sac["summary_freq"]) == (15000000, 1000, 30000)
    for behavior in (ppo, sac):
        assert behavior["reward_signals"] == {"extrinsic": {"gamma": 0.995, "strength": 1.0}}
        assert behavior["keep_checkpoints"] == 5


@pytest.mark.parametrize("trainer", ["ppo", "sac"])
def test_config_trains_walker_and_exports_onnx(run_train: RunTrain, trainer: str) -> None:
    run = shortened_run(run_train, _config(trainer), "Walker", 2000, *RUN_ARGS)
    scalars = tensorboard_scalars(run / "Walker")
    assert scalars["Environment/Cumulative Reward"], "episodes ended (falls or 200 steps)"
    session = onnxruntime.InferenceSession(str(run / "Walker.onnx"))
    shapes = sorted((i.name, i.shape[1:]) for i in session.get_inputs())
    assert ("obs_0", [243]) in shapes
    feeds = {i.name: np.zeros((3, *i.shape[1:]), np.float32) for i in session.get_inputs()}
    outputs = dict(
        zip([o.name for o in session.get_outputs()], session.run(None, feeds), strict=True)
    )
    assert outputs["continuous_actions"].shape == (3, 39)
