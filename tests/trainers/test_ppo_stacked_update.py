"""PPO's stacked update pass (policy and critic bodies in one batched product per layer) computes
what the two networks compute on their own, and is used exactly where it applies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from gymnasium import spaces
from trainer_test_support import ppo_behavior, ppo_trainer

from trainers.common.buffers.experience import Rollout, compute_gae
from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.ppo.trainer import PPOTrainer, _UpdateData

STEPS, SLOTS = 12, 8

CASES = {
    "box-box": (spaces.Box(-2, 2, (5,), np.float32), spaces.Box(-1, 1, (2,), np.float32)),
    "dict-multidiscrete": (
        spaces.Dict({"rays": spaces.Box(0, 1, (6,), np.float32), "cell": spaces.Discrete(4)}),
        spaces.MultiDiscrete([3, 2]),
    ),
    "box-hybrid": (
        spaces.Box(-1, 1, (3,), np.float32),
        spaces.Dict({"continuous": spaces.Box(-1, 1, (1,)), "discrete": spaces.Discrete(3)}),
    ),
}


def _trainer(
    tmp_path: Path, observation_space: spaces.Space[Any], action_space: spaces.Space[Any]
) -> PPOTrainer:
    behavior = ppo_behavior(
        hyperparameters={"buffer_size": STEPS * SLOTS, "batch_size": 16},
        network_settings={"hidden_units": 16, "num_layers": 2, "normalize": True},
    )
    return ppo_trainer(
        "Toy",
        behavior,
        ObservationLayout.from_space(observation_space),
        ActionLayout.from_space(action_space),
        tmp_path,
        seed=3,
    )


def _rollout(trainer: PPOTrainer, seed: int) -> Rollout:
    """Random steps in the environment's raw format (discrete branches half masked)."""
    rng = np.random.default_rng(seed)
    shape = (STEPS, SLOTS)
    observations = []
    for entry in trainer.context.observation_layout.entries:
        size = (*shape, *entry.raw_shape)
        if entry.kind == "one_hot":
            observations.append(rng.integers(0, entry.categories[0], size).astype(entry.raw_dtype))
        else:
            observations.append(rng.normal(1.0, 3.0, size).astype(entry.raw_dtype))
    actions = trainer.context.action_layout
    branches = list(actions.discrete_branches)
    continuous = discrete = masks = None
    if actions.continuous_size:
        continuous = rng.normal(0, 1, (*shape, actions.continuous_size)).astype(np.float32)
    if branches:
        discrete = np.stack([rng.integers(0, 2, shape) for _ in branches], axis=-1)
        masks = np.ones((*shape, sum(branches)), bool)
        masks[..., 1::2] = rng.random((*shape, len(masks[0, 0, 1::2]))) < 0.5
        masks[..., 0] = True
    columns = actions.continuous_size + len(branches)
    return Rollout(
        observations=observations,
        continuous=continuous,
        discrete=discrete,
        masks=masks,
        log_probs=rng.normal(-1.0, 0.3, (*shape, columns)).astype(np.float32),
        values=rng.normal(0, 1, shape).astype(np.float32),
        next_values=rng.normal(0, 1, shape).astype(np.float32),
        rewards=rng.normal(0, 1, shape).astype(np.float32),
        terminated=rng.random(shape) < 0.05,
        chain_breaks=rng.random(shape) < 0.1,
        valid=rng.random(shape) < 0.9,
    )


def _absorb(trainer: PPOTrainer, rollout: Rollout) -> None:
    flat = [entry.reshape(-1, *entry.shape[2:]) for entry in rollout.observations]
    trainer.normalizer.update(trainer.tensors(flat))


@pytest.mark.parametrize("case", sorted(CASES))
def test_stacked_pass_matches_the_separate_networks(tmp_path: Path, case: str) -> None:
    trainer = _trainer(tmp_path, *CASES[case])
    assert trainer.stacked_bodies is not None
    rollout = _rollout(trainer, seed=0)
    _absorb(trainer, rollout)
    data = _UpdateData([rollout], [compute_gae(rollout, 0.99, 0.95)], torch.device("cpu"))
    rows = data.valid_rows[:20]
    encoded = trainer.policy.encoder(trainer.tensors(data.observations))[0].detach()
    results = []
    for features in (encoded, None):
        data.features = features
        batch = data.minibatch(rows)
        assert (batch.features is None) is (features is None)
        trainer.optimizer.zero_grad()
        dist, values = trainer._evaluate(batch)
        loss = (
            dist.log_probs(batch.continuous, batch.discrete).sum()
            + dist.entropy().sum()
            + values.square().sum()
        )
        loss.backward()
        grad = trainer.optimizer.buffer.grad.clone()
        assert float(grad.abs().sum()) > 0
        results.append((loss.detach(), values.detach(), grad))
    (stacked_loss, stacked_values, stacked_grad), (loss, values, grad) = results
    torch.testing.assert_close(stacked_loss, loss, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(stacked_values, values, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(stacked_grad, grad, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("case", sorted(CASES))
def test_update_with_and_without_stacking_lands_on_the_same_weights(
    tmp_path: Path, case: str
) -> None:
    stacked = _trainer(tmp_path / "stacked", *CASES[case])
    separate = _trainer(tmp_path / "separate", *CASES[case])
    separate.load_state_dict(stacked.state_dict(), restore_progress=True)
    separate.stacked_bodies = None  # the networks' own forward passes
    start = [p.detach().clone() for p in stacked.parameters]
    rollouts = [_rollout(stacked, seed=1)]
    for trainer in (stacked, separate):
        _absorb(trainer, rollouts[0])
        trainer._update(rollouts, step=0)
    moved = 0.0
    for mine, theirs, before in zip(stacked.parameters, separate.parameters, start, strict=True):
        torch.testing.assert_close(mine, theirs, rtol=1e-4, atol=2e-6)
        moved = max(moved, float((mine - before).detach().abs().max()))
    assert moved > 1e-4  # the update did change the weights


def test_image_observations_use_the_separate_networks(tmp_path: Path) -> None:
    trainer = _trainer(
        tmp_path,
        spaces.Dict(
            {
                "camera": spaces.Box(0, 255, (24, 24, 3), np.uint8),
                "speed": spaces.Box(-1, 1, (2,), np.float32),
            }
        ),
        spaces.Discrete(3),
    )
    assert trainer.stacked_bodies is None
