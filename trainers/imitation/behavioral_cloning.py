"""Behavioral cloning (BC): the policy also learns to copy demonstrated actions.

After each update of its trainer (PPO: every update; SAC: every round of updates), the policy
takes gradient steps on demonstration batches with an Adam optimizer of its own. ML-Agents facts
followed (``torch_entities/components/bc/module.py``):

* learning rate: the trainer's initial ``learning_rate`` times ``strength``, decaying linearly
  to 1e-10 over ``steps`` trainer steps (constant when ``steps`` is 0); once it is at 1e-10 or
  below BC stops and reports a loss of 0;
* per update, ``num_epoch`` passes (default 3, for PPO and SAC alike: ML-Agents' code passes 3
  although its documentation says the trainer's ``num_epoch``) over the shuffled demonstrations in
  batches of ``batch_size`` (default: the trainer's; at most the number of demonstrated steps);
  ``samples_per_update`` > 0 caps the batches of an epoch at ``samples_per_update //
  batch_size``;
* loss: for continuous actions the mean squared error between the policy's action, sampled (or
  its mean with ``network_settings.deterministic``), and the demonstrated one; for discrete
  actions the cross-entropy of the demonstrated choice under the policy (no action mask),
  averaged over the branches and the batch; both summed for hybrid actions.

Difference: the policy's continuous action is compared in the units the environment receives
(PPO: the sample clipped to [-3, 3] and divided by 3; SAC: its tanh), the units the
demonstrations are recorded in; ML-Agents compares PPO's unclipped sample.

TensorBoard: ``Losses/Pretraining Loss`` (the mean over the update's batches).
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import torch
from torch.nn import functional

from trainers.common.networks.models import PolicyNetwork
from trainers.common.spaces import ObservationLayout
from trainers.imitation.demonstrations import Demonstrations
from trainers.settings import BehavioralCloningSettings

__all__ = ["DEFAULT_NUM_EPOCH", "MIN_LEARNING_RATE", "PRETRAINING_LOSS", "BehavioralCloning"]

DEFAULT_NUM_EPOCH = 3
MIN_LEARNING_RATE = 1e-10
PRETRAINING_LOSS = "Losses/Pretraining Loss"


class BehavioralCloning:
    """Trains ``policy`` to copy ``demonstrations`` (see the module docstring).

    Args:
        policy: the trainer's policy (trained in place).
        settings: ``behavioral_cloning``.
        demonstrations: the demonstrated steps in ``layout``'s raw format.
        layout: the trainer's observation entries.
        learning_rate: the trainer's initial learning rate.
        batch_size: the trainer's batch size (used unless ``settings.batch_size`` is set).
        num_epoch: epochs per update unless ``settings.num_epoch`` is set
            (:data:`DEFAULT_NUM_EPOCH` in trainers).
        deterministic: act with the policy's mean (``network_settings.deterministic``).
        device: the policy's device.
        rng: shuffles the demonstrations.
        lock: taken around every gradient step (the trainer's model lock).
    """

    def __init__(
        self,
        policy: PolicyNetwork,
        settings: BehavioralCloningSettings,
        demonstrations: Demonstrations,
        layout: ObservationLayout,
        *,
        learning_rate: float,
        batch_size: int,
        num_epoch: int,
        deterministic: bool,
        device: torch.device,
        rng: np.random.Generator,
        lock: contextlib.AbstractContextManager[Any] | None = None,
    ) -> None:
        self.policy = policy
        self.demonstrations = demonstrations
        self.layout = layout
        self.device = device
        self.rng = rng
        self.lock: contextlib.AbstractContextManager[Any] = lock or contextlib.nullcontext()
        self.deterministic = deterministic
        initial = learning_rate * settings.strength
        self.initial_learning_rate = initial
        self.anneal_steps = settings.steps
        self.batch_size = min(settings.batch_size or batch_size, len(demonstrations))
        self.num_epoch = settings.num_epoch or num_epoch
        self.samples_per_update = settings.samples_per_update
        # Plain Adam; zero_grad keeps the gradient tensors (the trainer's optimizer may hold the
        # policy's parameters and gradients in flat buffers whose views they are).
        self.optimizer = torch.optim.Adam(policy.parameters(), lr=max(initial, MIN_LEARNING_RATE))

    def learning_rate(self, step: int) -> float:
        """BC's learning rate at trainer step ``step``: ``(initial - 1e-10) * (1 - step /
        steps) + 1e-10`` until ``steps``, then 1e-10 (the initial one when ``steps`` is 0)."""
        if self.anneal_steps <= 0:
            return self.initial_learning_rate
        remaining = 1.0 - min(max(step, 0) / self.anneal_steps, 1.0)
        return (self.initial_learning_rate - MIN_LEARNING_RATE) * remaining + MIN_LEARNING_RATE

    def batches_per_epoch(self) -> int:
        """Demonstration batches of one epoch."""
        possible = len(self.demonstrations) // self.batch_size
        cap = self.samples_per_update // self.batch_size
        return possible if cap == 0 else min(possible, cap)

    def loss(
        self,
        observations: list[torch.Tensor],
        continuous: torch.Tensor | None,
        discrete: torch.Tensor | None,
    ) -> torch.Tensor:
        """The BC loss of network-format ``observations`` and their demonstrated actions."""
        dist = self.policy(observations, None)
        loss = torch.zeros((), device=observations[0].device)
        if dist.mean is not None and continuous is not None:
            raw, _ = dist.deterministic() if self.deterministic else dist.sample()
            assert raw is not None
            loss = loss + functional.mse_loss(dist.env_continuous(raw), continuous)
        if dist.branch_logits and discrete is not None:
            branch_losses = [
                -log_probs.gather(1, discrete[:, b : b + 1].long()).squeeze(1)
                for b, log_probs in enumerate(dist.branch_log_probs())
            ]
            loss = loss + torch.stack(branch_losses).mean()
        return loss

    def update(self, step: int) -> dict[str, float]:
        """The BC passes of one trainer update at trainer step ``step``; returns
        ``{"Losses/Pretraining Loss": mean}`` (0 once the learning rate has decayed)."""
        learning_rate = self.learning_rate(step)
        if learning_rate <= MIN_LEARNING_RATE:
            return {PRETRAINING_LOSS: 0.0}
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate
        demos = self.demonstrations
        losses: list[float] = []
        for _ in range(self.num_epoch):
            order = self.rng.permutation(len(demos))
            for b in range(self.batches_per_epoch()):
                rows = order[b * self.batch_size : (b + 1) * self.batch_size]
                batch = demos.batch(rows, self.layout, self.device)
                with self.lock:
                    loss = self.loss(batch.observations, batch.continuous, batch.discrete)
                    self.optimizer.zero_grad(set_to_none=False)
                    loss.backward()
                    self.optimizer.step()
                losses.append(float(loss.detach()))
        return {PRETRAINING_LOSS: float(np.mean(losses)) if losses else 0.0}
