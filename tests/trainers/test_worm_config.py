"""``unity-train`` with the shipped Worm configs (PPO and SAC) on the built-in scene.

The runs load ``trainers/configs/Worm_ppo.yaml`` and ``Worm_sac.yaml`` as shipped (their keys
and values are those of ML-Agents' ``config/ppo/Worm.yaml`` and ``config/sac/Worm.yaml``) and
shorten only the run and the sizes that decide when the first update happens. The game is a
real headless player over gRPC on 127.0.0.1 whose worms are simulated by MuJoCo: 10 agents
deciding every 5 Academy steps, 64 observations and 9 continuous actions, which the ONNX model
takes and gives.
"""

from __future__ import annotations

import pytest
from trainer_test_support import RunTrain, assert_body_configs, assert_trains_and_exports

pytest.importorskip("mujoco")

pytestmark = pytest.mark.timeout(400)

RUN_ARGS = ("--scene", "Worm", "--seed", "3", "--no-graphics", "--num-envs", "1",
            "--env-args", "--option", "max_step=200")  # fmt: skip


def test_shipped_configs_match_the_ml_agents_references() -> None:
    assert_body_configs(
        "Worm",
        hidden_units=512,
        ppo_sizes=(2_024, 20_240, 7_000_000),
        sac_sizes=(256, 500_000, 20.0, 5_000_000),
    )


@pytest.mark.parametrize("trainer", ["ppo", "sac"])
def test_config_trains_worm_and_exports_onnx(run_train: RunTrain, trainer: str) -> None:
    assert_trains_and_exports(run_train, "Worm", trainer, [("obs_0", [64])], 9, *RUN_ARGS)
