"""``unity-train`` with the shipped Crawler configs (PPO and SAC) on the built-in scene.

The runs load ``trainers/configs/Crawler_ppo.yaml`` and ``Crawler_sac.yaml`` as shipped (their keys
and values are those of ML-Agents' ``config/ppo/Crawler.yaml`` and ``config/sac/Crawler.yaml``)
and shorten only the run and the sizes that decide when the first update happens. The game is a
real headless player over gRPC on 127.0.0.1 whose crawlers are simulated by MuJoCo: 10 agents
deciding every 5 Academy steps, two observations (``PhysicsBodySensor:Body`` 126 floats and
``VectorSensor_size32``) and 20 continuous actions, which the ONNX model takes and gives.
"""

from __future__ import annotations

import pytest
from trainer_test_support import RunTrain, assert_body_configs, assert_trains_and_exports

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
