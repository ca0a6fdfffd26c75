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

import pytest
from trainer_test_support import RunTrain, assert_body_configs, assert_trains_and_exports

pytest.importorskip("mujoco")

pytestmark = pytest.mark.timeout(400)

RUN_ARGS = ("--scene", "Walker", "--seed", "3", "--no-graphics", "--num-envs", "1",
            "--env-args", "--option", "max_step=200")  # fmt: skip


def test_shipped_configs_match_the_ml_agents_references() -> None:
    assert_body_configs(
        "Walker",
        hidden_units=256,
        ppo_sizes=(2_048, 20_480, 30_000_000),
        sac_sizes=(1_024, 2_000_000, 30.0, 15_000_000),
    )


@pytest.mark.parametrize("trainer", ["ppo", "sac"])
def test_config_trains_walker_and_exports_onnx(run_train: RunTrain, trainer: str) -> None:
    assert_trains_and_exports(run_train, "Walker", trainer, [("obs_0", [243])], 39, *RUN_ARGS)
