"""``unity-train`` with ML-Agents' own imitation config for PushBlock (GAIL + behavioral cloning)
and the real ``ExpertPushBlock.demo``, on the built-in PushBlock scene (a real player process)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import pytest
from imitation_test_support import real_demo
from trainer_test_support import RunTrain, tensorboard_scalars

import unity_gym.vector  # noqa: F401  (a broken import fails the module, never skips it)
from trainers.common.checkpoints.files import load_checkpoint

pytestmark = pytest.mark.timeout(180)


def push_block_imitation(demo: Path, max_steps: int, summary_freq: int) -> dict[str, Any]:
    """ML-Agents' ``config/imitation/PushBlock.yaml`` with ``max_steps``, ``demo_path`` and
    (to see the statistics of so short a run) ``summary_freq`` changed."""
    return {
        "behaviors": {
            "PushBlock": {
                "trainer_type": "ppo",
                "hyperparameters": {
                    "batch_size": 128,
                    "buffer_size": 2048,
                    "learning_rate": 0.0003,
                    "beta": 0.01,
                    "epsilon": 0.2,
                    "lambd": 0.95,
                    "num_epoch": 3,
                    "learning_rate_schedule": "linear",
                },
                "network_settings": {
                    "normalize": False,
                    "hidden_units": 256,
                    "num_layers": 2,
                    "vis_encode_type": "simple",
                },
                "reward_signals": {
                    "extrinsic": {"gamma": 0.99, "strength": 1.0},
                    "gail": {
                        "gamma": 0.99,
                        "strength": 0.01,
                        "network_settings": {
                            "normalize": False,
                            "hidden_units": 128,
                            "num_layers": 2,
                            "vis_encode_type": "simple",
                        },
                        "learning_rate": 0.0003,
                        "use_actions": False,
                        "use_vail": False,
                        "demo_path": str(demo),
                    },
                },
                "keep_checkpoints": 5,
                "max_steps": max_steps,
                "time_horizon": 64,
                "summary_freq": summary_freq,
                "behavioral_cloning": {
                    "demo_path": str(demo),
                    "steps": 50000,
                    "strength": 1.0,
                    "samples_per_update": 0,
                },
            }
        }
    }


def test_push_block_imitation_config_trains_logs_and_exports(run_train: RunTrain) -> None:
    demo = real_demo("ExpertPushBlock.demo")
    # one update (more than buffer_size 2048 steps of whole trajectories: 32 agents cut theirs
    # together every 64 decisions, so at step 4096 at the latest), then a summary with its
    # statistics
    run = run_train(push_block_imitation(demo, max_steps=4096, summary_freq=2048),
                    "--scene", "PushBlock", "--seed", "3", "--no-graphics")  # fmt: skip
    scalars = tensorboard_scalars(run / "PushBlock")
    for tag in (
        "Losses/GAIL Loss",
        "Policy/GAIL Policy Estimate",
        "Policy/GAIL Expert Estimate",
        "Policy/GAIL Grad Mag Loss",
        "Policy/Gail Value Estimate",
        "Losses/Pretraining Loss",
    ):
        assert tag in scalars and all(np.isfinite(scalars[tag])), tag
    assert scalars["Losses/Pretraining Loss"][0] > 0

    state = load_checkpoint(run / "PushBlock" / "checkpoint.pt")
    assert "reward_signal.gail.discriminator" in state["modules"]
    assert {"reward_signal.gail.optimizer", "behavioral_cloning.optimizer"} <= set(
        state["optimizers"]
    )
    session = onnxruntime.InferenceSession(str(run / "PushBlock.onnx"))
    assert [(i.name, i.shape) for i in session.get_inputs()][:2] == [
        ("obs_0", ["batch", 105]),
        ("obs_1", ["batch", 105]),
    ]
