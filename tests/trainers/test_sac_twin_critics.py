"""SAC's twin critics in one stacked pass, and one backward pass per update: each update's
gradients equal those of the losses computed network by network at the parameters before the
update (ML-Agents' order), and the target critics follow by Polyak averaging."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from gymnasium import spaces
from torch.nn import functional
from trainer_test_support import sac_behavior, sac_trainer

from trainers.sac.trainer import SACTrainer, _FlatInputs

ROWS = 6
SPACES: dict[str, spaces.Space[Any]] = {
    "continuous": spaces.Box(-1, 1, (2,), np.float32),
    "discrete": spaces.Discrete(3),
}


def _trainer(tmp_path: Path, kind: str, **network: Any) -> SACTrainer:
    behavior = sac_behavior(network_settings={"hidden_units": 8, "num_layers": 2, **network})
    return sac_trainer(behavior, SPACES[kind], tmp_path)


def _sample(kind: str, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    sample = {
        "obs_0": rng.normal(size=(ROWS, 2)).astype(np.float32),
        "next_obs_0": rng.normal(size=(ROWS, 2)).astype(np.float32),
        "env_reward": rng.normal(size=ROWS).astype(np.float32),
        "terminated": (np.arange(ROWS) % 3 == 2).astype(np.float32),
        "done": (np.arange(ROWS) % 3 == 2).astype(np.float32),
    }
    if kind == "discrete":
        sample["action"] = (np.arange(ROWS) % 3).reshape(ROWS, 1).astype(np.int64)
        sample["mask"] = np.ones((ROWS, 3), dtype=bool)
        sample["next_mask"] = np.ones((ROWS, 3), dtype=bool)
    else:
        sample["action"] = rng.uniform(-1, 1, (ROWS, 2)).astype(np.float32)
    return sample


def _flat_grad(loss: torch.Tensor, parameters: list[torch.Tensor]) -> torch.Tensor:
    grads = torch.autograd.grad(loss, parameters, allow_unused=True)
    return torch.cat(
        [
            (torch.zeros_like(p) if g is None else g).reshape(-1)
            for p, g in zip(parameters, grads, strict=True)
        ]
    )


def _member_grads(buffer_grad: torch.Tensor, buffer: Any, parameters: list[Any]) -> torch.Tensor:
    return torch.cat(
        [buffer_grad[buffer.offset(p) : buffer.offset(p) + p.numel()] for p in parameters]
    )


@pytest.mark.parametrize("kind", sorted(SPACES))
def test_stacked_critics_compute_what_each_network_computes(tmp_path: Path, kind: str) -> None:
    trainer = _trainer(tmp_path, kind, normalize=True)
    assert trainer.critics.stacked is not None and trainer.target_critics.stacked is not None
    batch = trainer._signal_batch(_sample(kind))
    trainer.normalizer.update(batch.observations)
    assert batch.next_observations is not None
    inputs = _FlatInputs(batch.observations, batch.next_observations, trainer.shared_encoder)
    actions = batch.continuous
    stacked = trainer.critics(inputs, actions)
    separate = (trainer.q1(batch.observations, actions), trainer.q2(batch.observations, actions))
    for mine, theirs in zip(stacked, separate, strict=True):
        torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-6)
    buffer = trainer.q_optimizer.buffer
    buffer.zero_grad()
    (stacked[0].square().sum() + 3 * stacked[1].sum()).backward()
    expected = _flat_grad(separate[0].square().sum() + 3 * separate[1].sum(), trainer.q_parameters)
    torch.testing.assert_close(
        _member_grads(buffer.grad, buffer, trainer.q_parameters), expected, rtol=1e-5, atol=1e-6
    )
    with torch.no_grad():
        targets = trainer.target_critics(inputs, actions, following=True)
        nexts = batch.next_observations
        torch.testing.assert_close(
            targets[0], trainer.q1_target(nexts, actions), rtol=1e-5, atol=1e-6
        )
        torch.testing.assert_close(
            targets[1], trainer.q2_target(nexts, actions), rtol=1e-5, atol=1e-6
        )


def test_the_frozen_pass_reaches_the_actions_and_not_the_critics(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path, "continuous")
    batch = trainer._signal_batch(_sample("continuous"))
    assert batch.next_observations is not None and batch.continuous is not None
    inputs = _FlatInputs(batch.observations, batch.next_observations, trainer.shared_encoder)
    actions = batch.continuous.clone().requires_grad_(True)
    trainer.q_optimizer.zero_grad()
    q1, q2 = trainer.critics(inputs, actions, frozen=True)
    torch.min(q1, q2).sum().backward()
    assert actions.grad is not None and float(actions.grad.abs().sum()) > 0
    assert float(trainer.q_optimizer.buffer.grad.abs().sum()) == 0.0
    assert all(leaf.requires_grad for leaf in trainer.critics.leaves)


@pytest.mark.parametrize("kind", sorted(SPACES))
def test_one_update_gives_each_loss_its_own_gradients_at_the_parameters_before_it(
    tmp_path: Path, kind: str
) -> None:
    trainer = _trainer(tmp_path, kind)
    sample = _sample(kind)
    q_buffer, policy_buffer = trainer.q_optimizer.buffer, trainer.policy_optimizer.buffer
    buffers = (q_buffer, policy_buffer, trainer.target_buffer, trainer.alpha_optimizer.buffer)
    before = [b.data.clone() for b in buffers]
    torch.manual_seed(7)
    trainer._update_once(sample)
    q_grad, policy_grad = q_buffer.grad.clone(), policy_buffer.grad.clone()
    after_targets = trainer.target_buffer.data.clone()
    # Polyak: the targets moved tau of the way to the updated critics
    tau = trainer.hyper.tau
    torch.testing.assert_close(after_targets, (1 - tau) * before[2] + tau * q_buffer.data)
    assert not torch.equal(q_buffer.data, before[0])
    assert not torch.equal(policy_buffer.data, before[1])

    # The reference: every loss network by network, at the parameters before the update.
    with torch.no_grad():
        for buffer, data in zip(buffers, before, strict=True):
            buffer.data.copy_(data)
    torch.manual_seed(7)
    batch = trainer._signal_batch(sample)
    assert batch.next_observations is not None
    rewards = trainer._stream_rewards(batch)
    not_done = trainer._not_done(torch.as_tensor(sample["terminated"]))
    alpha = trainer.log_alpha.exp().detach()
    mask = next_mask = None
    if kind == "discrete":
        mask = trainer.mask_tensor(sample["mask"])
        next_mask = trainer.mask_tensor(sample["next_mask"])
    target = trainer._targets(batch.next_observations, rewards, not_done, alpha, next_mask)
    observations = batch.observations
    q_values = [network(observations, batch.continuous) for network in (trainer.q1, trainer.q2)]
    dist = trainer.policy(observations, mask)
    if kind == "discrete":
        assert batch.discrete is not None
        chosen = batch.discrete[:, :1]
        q_loss = sum(functional.mse_loss(q.gather(1, chosen), target) for q in q_values)
        log_probs = dist.branch_log_probs()[0]
        q_min = torch.min(*q_values).detach()
        policy_loss = (log_probs.exp() * (alpha[0] * log_probs - q_min)).sum(dim=1).mean()
    else:
        q_loss = sum(functional.mse_loss(q.unsqueeze(1), target) for q in q_values)
        new_actions, log_prob = dist.rsample_squashed()
        q_new = torch.min(
            trainer.q1(observations, new_actions), trainer.q2(observations, new_actions)
        )
        policy_loss = (alpha[0] * log_prob - q_new).mean()
    assert isinstance(q_loss, torch.Tensor)
    expected_q = _flat_grad(q_loss, trainer.q_parameters)
    policy_parameters = list(trainer.policy.parameters())
    expected_policy = _flat_grad(policy_loss, policy_parameters)
    torch.testing.assert_close(
        _member_grads(q_grad, q_buffer, trainer.q_parameters), expected_q, rtol=1e-4, atol=1e-6
    )
    torch.testing.assert_close(
        _member_grads(policy_grad, policy_buffer, policy_parameters),
        expected_policy,
        rtol=1e-4,
        atol=1e-6,
    )


def test_critics_run_one_by_one_where_stacking_does_not_apply(tmp_path: Path) -> None:
    memory = {"memory": {"sequence_length": 4, "memory_size": 8}}
    recurrent = _trainer(tmp_path / "memory", "continuous", **memory)
    assert recurrent.critics.stacked is None and recurrent.shared_encoder is None
    assert recurrent.target_critics.stacked is None
