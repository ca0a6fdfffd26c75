"""``unity-train`` with the shipped Crawler configs (PPO and SAC) on the built-in scene.

The runs load ``trainers/configs/Crawler_ppo.yaml`` and ``Crawler_sac.yaml`` as shipped (their keys
and values are those of ML-Agents' ``config/ppo/Crawler.yaml`` and ``config/sac/Crawler.yaml``)
and shorten only the run and the sizes that decide when the first update happens. The game is a
real headless player over gRPC on 127.0.0.1 whose crawlers are simulated by MuJoCo: 10 agents
deciding every 5 Academy steps, two observations (``PhysicsBodySensor:Body`` 126 floats and
``VectorSensor_size32``) and 20 continuous actions, which the ONNX model takes and gives.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from trainer_test_support import (
    RunTrain,
    assert_body_configs,
    assert_trains_and_exports,
    tensorboard_scalars,
)

pytest.importorskip("mujoco")

pytestmark = pytest.mark.timeout(400)

RUN_ARGS = ("--scene", "Crawler", "--seed", "3", "--no-graphics", "--num-envs", "1",
            "--env-args", "--option", "max_step=200")  # fmt: skip


def test_shipped_configs_match_the_ml_agents_references() -> None:
    assert_body_configs(
        "Crawler",
        hidden_units=512,
        ppo_sizes=(2_048, 20_480, 10_000_000),
        sac_sizes=(256, 500_000, 20.0, 5_000_000),
    )


@pytest.mark.parametrize("trainer", ["ppo", "sac"])
def test_config_trains_crawler_and_exports_onnx(run_train: RunTrain, trainer: str) -> None:
    assert_trains_and_exports(
        run_train, "Crawler", trainer, [("obs_0", [126]), ("obs_1", [32])], 20, *RUN_ARGS
    )


def crawler_imitation(demo: Path, max_steps: int, summary_freq: int) -> dict[str, Any]:
    """ML-Agents' ``config/imitation/Crawler.yaml`` (GAIL + behavioral cloning) with
    ``demo_path``, ``max_steps``, ``summary_freq`` and (so that one update happens in so short a
    run) ``batch_size`` / ``buffer_size`` changed."""
    network = {"normalize": True, "hidden_units": 512, "num_layers": 3, "vis_encode_type": "simple"}
    return {
        "behaviors": {
            "Crawler": {
                "trainer_type": "ppo",
                "hyperparameters": {
                    "batch_size": 200, "buffer_size": 1000, "learning_rate": 0.0003,
                    "beta": 0.005, "epsilon": 0.2, "lambd": 0.95, "num_epoch": 3,
                    "learning_rate_schedule": "linear",
                },
                "network_settings": network,
                "reward_signals": {
                    "gail": {
                        "gamma": 0.99, "strength": 1.0,
                        "network_settings": {**network, "hidden_units": 128, "num_layers": 2},
                        "learning_rate": 0.0003, "use_actions": False, "use_vail": False,
                        "demo_path": str(demo),
                    },
                },
                "keep_checkpoints": 5,
                "max_steps": max_steps,
                "time_horizon": 1000,
                "summary_freq": summary_freq,
                "behavioral_cloning": {
                    "demo_path": str(demo), "steps": 50000, "strength": 0.5,
                    "samples_per_update": 0,
                },
            }
        }
    }  # fmt: skip


def test_imitation_config_trains_on_a_demo_the_player_records(
    run_train: RunTrain, tmp_path: Path
) -> None:
    """ML-Agents' imitation config needs ``ExpertCrawler.demo``, recorded in Unity with an older
    observation layout; the player records one from its heuristic (the trot) instead."""
    demo = tmp_path / "ExpertCrawler.demo"
    recorded = subprocess.run(
        [sys.executable, "-m", "unity_gym.player", "--scene", "Crawler", "--record-demo",
         str(demo), "--record-steps", "300", "--option", "max_step=200"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert recorded.returncode == 0, recorded.stderr
    # episodes of at most 40 decisions: more than buffer_size 1000 steps of whole trajectories
    # by step 1500, so one update, then the final summary with its statistics
    run = run_train(crawler_imitation(demo, max_steps=1500, summary_freq=1500), *RUN_ARGS)
    scalars = tensorboard_scalars(run / "Crawler")
    for tag in ("Losses/GAIL Loss", "Policy/GAIL Expert Estimate", "Losses/Pretraining Loss"):
        assert tag in scalars and all(np.isfinite(scalars[tag])), tag
    assert scalars["Losses/Pretraining Loss"][0] > 0
