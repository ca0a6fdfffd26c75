"""PPO details that follow ML-Agents: per-column likelihood ratios, when the normalizer learns."""

from __future__ import annotations

import math
from pathlib import Path

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode
from trainer_test_support import ppo_behavior, ppo_trainer

from trainers.common.distributions import ActionDistribution, mask_logits
from trainers.common.normalizer import RunningNormalizer
from trainers.env_manager import EnvManager


def test_log_probs_have_one_column_per_dimension_and_branch() -> None:
    mean = torch.tensor([[0.5, -1.0], [0.0, 2.0]])
    log_std = torch.tensor([[-0.3, 0.4]])
    logits = torch.tensor([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]])
    dist = ActionDistribution(mean, log_std, [logits], squash=False)
    continuous = torch.tensor([[1.0, 0.0], [-0.5, 2.5]])
    discrete = torch.tensor([[1], [2]])

    columns = dist.log_probs(continuous, discrete)

    gaussian = torch.distributions.Normal(mean, torch.exp(log_std)).log_prob(continuous)
    categorical = torch.distributions.Categorical(logits=logits).log_prob(discrete[:, 0])
    assert columns.shape == (2, 3)
    torch.testing.assert_close(columns[:, :2], gaussian)
    torch.testing.assert_close(columns[:, 2], categorical)


def test_log_probs_of_masked_branches_renormalize_over_allowed_actions() -> None:
    logits = torch.tensor([[0.0, 0.0, 5.0]])
    allowed = torch.tensor([[1.0, 1.0, 0.0]])
    dist = ActionDistribution(None, None, [mask_logits(logits, allowed)], squash=False)
    column = dist.log_probs(None, torch.tensor([[0]]))
    assert column.shape == (1, 1)
    assert math.isclose(float(column), math.log(0.5), rel_tol=1e-6)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_normalizer_absorbs_the_rollout_before_the_update(
    tmp_path: Path, mode: AutoresetMode
) -> None:
    """Countdown's valid observations cycle 0, 1, 2 (mean 1, variance 2/3); the steps whose
    action a next-step autoreset ignores must not count."""
    env = gymnasium.make_vec(
        "trainer_toy_envs:Countdown-v0",
        num_envs=2,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": mode},
    )
    manager = EnvManager.for_vector_env(env, "Countdown")
    try:
        slots = manager.behaviors["Countdown"]
        trainer = ppo_trainer(
            "Countdown",
            ppo_behavior(hyperparameters={"buffer_size": 12, "batch_size": 4}),
            slots.observation_layout,
            slots.action_layout,
            tmp_path,
        )
        step = manager.reset(seed=0)["Countdown"]
        while not trainer.update_due:
            decision = trainer.decide(step)
            step = manager.step({"Countdown": decision})["Countdown"]
            trainer.observe(step)
        module = trainer.normalizer.normalizers[0]
        assert isinstance(module, RunningNormalizer)
        assert float(module.count) == 0.0

        job = trainer._take_update_job()

        # absorbed before the update runs (and before the critic valued the rollout)
        assert float(module.count) == 12.0
        np.testing.assert_allclose(module.mean.numpy(), [1.0], rtol=1e-6)
        np.testing.assert_allclose(module.variance.numpy(), [2.0 / 3.0], rtol=1e-5)
        job()
        assert float(module.count) == 12.0  # not absorbed twice
    finally:
        manager.close()
