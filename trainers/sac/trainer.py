"""Soft Actor-Critic with twin Q networks, target networks and automatic entropy tuning.

Continuous actions: a tanh-squashed Gaussian policy; ``Q(s, a)`` critics; the entropy target is
``-continuous_size``. Discrete actions (one or more branches): a categorical policy per branch;
critics output one value per choice of every branch; expectations over the policy replace
sampling; one entropy coefficient per branch with target ``0.2 * log(branch_size)`` (ML-Agents'
scale). Action masks are stored with each transition and applied to both the current and the
next state's policy.

Update schedule (ML-Agents semantics): once ``buffer_init_steps`` agent steps are collected and
the buffer holds a batch, ``update_count`` follows ``(step - buffer_init_steps) /
steps_per_update``. One update: critic regression to
``r + gamma * (1 - terminated) * soft V(s')`` from the target critics, policy step, entropy
coefficient step, Polyak averaging of the targets with ``tau``. Truncated episodes bootstrap
from their final observation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional

from trainers.common.buffers import ReplayBuffer
from trainers.common.checkpoints import atomic_write
from trainers.common.networks import (
    PolicyNetwork,
    QNetwork,
    build_normalizer,
    make_adam,
    polyak_update,
)
from trainers.common.schedules import Schedule
from trainers.common.spaces import UnsupportedSpaceError
from trainers.common.trainer import Trainer, TrainerContext
from trainers.env_manager import BehaviorStep, PolicyDecision
from trainers.settings import SACHyperparameters

__all__ = ["SACTrainer"]

DISCRETE_TARGET_ENTROPY_SCALE = 0.2
CONTINUOUS_TARGET_ENTROPY_SCALE = 1.0
MIN_LEARNING_RATE = 1e-10
REPLAY_FILE = "replay_buffer.pt"


def _minimize(optimizer: torch.optim.Optimizer, loss: torch.Tensor) -> None:
    """One gradient step of ``optimizer`` on ``loss``."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()


def _branch_q_loss(
    q_per_branch: tuple[torch.Tensor, ...], actions: torch.Tensor, target: torch.Tensor
) -> torch.Tensor:
    """Mean over discrete branches of the MSE between the taken action's Q and ``target``."""
    return torch.stack(
        [
            functional.mse_loss(q.gather(1, actions[:, b : b + 1]).squeeze(1), target)
            for b, q in enumerate(q_per_branch)
        ]
    ).mean()


class SACTrainer(Trainer):
    """SAC for one behavior (see the module docstring)."""

    trainer_type = "sac"
    wait_for_running_update = False
    update_needs_settled_groups = False

    def __init__(self, context: TrainerContext) -> None:
        super().__init__(context)
        hyper = self.settings.hyperparameters
        assert isinstance(hyper, SACHyperparameters)
        self.hyper = hyper
        actions = context.action_layout
        if actions.has_continuous and actions.has_discrete:
            raise UnsupportedSpaceError(
                f"behavior {context.behavior_name}: SAC with hybrid (continuous + discrete) "
                "actions is not supported yet; use trainer_type: ppo for this behavior."
            )
        self.continuous = actions.has_continuous
        net = self.settings.network_settings
        layout = context.observation_layout
        device = self.device
        self.normalizer = build_normalizer(layout, net.normalize)
        self.policy = PolicyNetwork(layout, actions, net, self.normalizer, squash=True).to(device)
        self.q1, self.q2, self.q1_target, self.q2_target = (
            QNetwork(layout, actions, net, self.normalizer).to(device) for _ in range(4)
        )
        self.q1_target.load_state_dict(self.q1.state_dict())
        self.q2_target.load_state_dict(self.q2.state_dict())
        for target in (self.q1_target, self.q2_target):
            target.requires_grad_(False)
        branches = list(actions.discrete_branches)
        entropy_terms = 1 if self.continuous else len(branches)
        self.log_alpha = nn.Parameter(
            torch.full((entropy_terms,), math.log(hyper.init_entcoef), device=device)
        )
        if self.continuous:
            entropy_targets = [-CONTINUOUS_TARGET_ENTROPY_SCALE * actions.continuous_size]
        else:
            entropy_targets = [DISCRETE_TARGET_ENTROPY_SCALE * math.log(b) for b in branches]
        self.target_entropy = torch.tensor(entropy_targets, dtype=torch.float32, device=device)
        self.branch_sizes = branches
        lr = hyper.learning_rate
        self.policy_optimizer = make_adam(list(self.policy.parameters()), lr)
        self.q_parameters = [*self.q1.parameters(), *self.q2.parameters()]
        self.q_optimizer = make_adam(self.q_parameters, lr)
        self.alpha_optimizer = make_adam([self.log_alpha], lr)
        self.learning_rate = Schedule(
            hyper.learning_rate_schedule, lr, MIN_LEARNING_RATE, self.settings.max_steps
        )
        self.gamma = self.settings.extrinsic.gamma
        self.reward_scale = self.settings.extrinsic.strength
        self.deterministic = net.deterministic
        self.replay = ReplayBuffer(hyper.buffer_size)
        # The last decision of each slot group (see BehaviorStep.group), until its outcome.
        self._pending_decisions: dict[int, dict[str, Any]] = {}
        self.num_entries = len(layout.entries)

    def modules(self) -> dict[str, nn.Module]:
        return {
            "policy": self.policy,
            "q1": self.q1,
            "q2": self.q2,
            "q1_target": self.q1_target,
            "q2_target": self.q2_target,
        }

    def optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {
            "policy_optimizer": self.policy_optimizer,
            "q_optimizer": self.q_optimizer,
            "alpha_optimizer": self.alpha_optimizer,
        }

    def extra_state(self) -> dict[str, Any]:
        return {"log_alpha": self.log_alpha.detach().clone()}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        if "log_alpha" in state:
            with torch.no_grad():
                self.log_alpha.copy_(state["log_alpha"])

    def save_auxiliary(self, directory: Path) -> None:
        if not self.hyper.save_replay_buffer:
            return
        with self.model_lock:
            contents = {k: torch.from_numpy(v.copy()) for k, v in self.replay.state().items()}
        with atomic_write(directory / REPLAY_FILE) as handle:
            torch.save(contents, handle)

    def load_auxiliary(self, directory: Path) -> None:
        path = directory / REPLAY_FILE
        if not self.hyper.save_replay_buffer or not path.is_file():
            return
        contents = torch.load(path, map_location="cpu", weights_only=True)
        self.replay.load({key: value.numpy() for key, value in contents.items()})

    # -- acting ----------------------------------------------------------------------------

    def decide(self, step: BehaviorStep) -> PolicyDecision:
        with self.model_lock, torch.no_grad():
            dist = self.policy(self.tensors(step.observations), self.mask_tensor(step.action_mask))
            raw, discrete = dist.deterministic() if self.deterministic else dist.sample()
            continuous = dist.env_continuous(raw) if raw is not None else None
        continuous_np = continuous.cpu().numpy() if continuous is not None else None
        discrete_np = discrete.cpu().numpy() if discrete is not None else None
        if self.training and not self.is_done:  # past max_steps: act, record nothing
            self._pending_decisions[step.group] = {
                "observations": step.observations,
                "mask": step.action_mask,
                "continuous": continuous_np,
                "discrete": discrete_np,
            }
        return PolicyDecision(continuous_np, discrete_np)

    def observe(self, step: BehaviorStep) -> None:
        self.step += int(step.valid.sum())
        self.record_episodes(step)
        decision = self._pending_decisions.pop(step.group, None)
        if not self.training or decision is None:
            return
        rows = np.flatnonzero(step.valid)
        if rows.size == 0:
            return
        batch: dict[str, np.ndarray] = {}
        for i, (obs, final) in enumerate(
            zip(decision["observations"], step.final_observations, strict=True)
        ):
            batch[f"obs_{i}"] = obs[rows]
            batch[f"next_obs_{i}"] = final[rows]
        if self.continuous:
            batch["action"] = decision["continuous"][rows].astype(np.float32)
        else:
            batch["action"] = decision["discrete"][rows].astype(np.int64)
            batch["mask"] = self._mask_rows(decision["mask"], rows)
            batch["next_mask"] = self._mask_rows(step.final_action_mask, rows)
        batch["reward"] = (step.rewards[rows] * self.reward_scale).astype(np.float32)
        batch["terminated"] = step.terminated[rows].astype(np.float32)
        with self.model_lock:
            self.replay.add(batch)
            if self.normalizer.normalizers:
                self.normalizer.update(
                    self.tensors([obs[rows] for obs in decision["observations"]])
                )

    def _mask_rows(self, mask: np.ndarray | None, rows: np.ndarray) -> np.ndarray:
        if mask is None:
            return np.ones((rows.size, self.context.action_layout.discrete_size), dtype=bool)
        return mask[rows]

    # -- learning --------------------------------------------------------------------------

    def _due_updates(self) -> int:
        hyper = self.hyper
        if self.step < hyper.buffer_init_steps or len(self.replay) < hyper.batch_size:
            return 0
        target = int((self.step - hyper.buffer_init_steps) / hyper.steps_per_update) + 1
        return max(target - self.update_count, 0)

    def _update_ready(self) -> bool:
        return self._due_updates() > 0

    def _update_size(self) -> int:
        """Gradient steps due."""
        return self._due_updates()

    def _take_update_job(self) -> Callable[[], None]:
        count = self._due_updates()
        step = self.step
        return lambda: self._run_updates(count, step)

    def _run_updates(self, count: int, step: int) -> None:
        learning_rate = self.learning_rate.value(step)
        for optimizer in self.optimizers().values():
            for group in optimizer.param_groups:
                group["lr"] = learning_rate
        totals = np.zeros(5)
        for _ in range(count):
            with self.model_lock:
                sample = self.replay.sample(self.hyper.batch_size, self.rng)
            totals += self._update_once(sample)
            self.update_count += 1
        if count:
            means = totals / count
            stats = {
                "Losses/Q1 Loss": means[0],
                "Losses/Q2 Loss": means[1],
                "Losses/Policy Loss": means[2],
                "Policy/Entropy": means[3],
                "Policy/Learning Rate": learning_rate,
            }
            key = "Continuous" if self.continuous else "Discrete"
            stats[f"Policy/{key} Entropy Coeff"] = means[4]
            self.context.stats.add_many(stats)

    def _update_once(self, sample: dict[str, np.ndarray]) -> np.ndarray:
        device = self.device
        observations = self.tensors([sample[f"obs_{i}"] for i in range(self.num_entries)])
        next_observations = self.tensors([sample[f"next_obs_{i}"] for i in range(self.num_entries)])
        rewards = torch.as_tensor(sample["reward"], device=device)
        not_terminal = 1.0 - torch.as_tensor(sample["terminated"], device=device)
        actions = torch.as_tensor(sample["action"], device=device)
        with self.model_lock:
            if self.continuous:
                return self._continuous_update(
                    observations, next_observations, actions, rewards, not_terminal
                )
            mask = self.mask_tensor(sample["mask"])
            next_mask = self.mask_tensor(sample["next_mask"])
            return self._discrete_update(
                observations, next_observations, actions, rewards, not_terminal, mask, next_mask
            )

    def _continuous_update(
        self,
        observations: list[torch.Tensor],
        next_observations: list[torch.Tensor],
        actions: torch.Tensor,
        rewards: torch.Tensor,
        not_terminal: torch.Tensor,
    ) -> np.ndarray:
        alpha = self.log_alpha.exp().detach()
        with torch.no_grad():
            next_actions, next_log_probs = self.policy(next_observations).rsample_squashed()
            next_q = torch.min(
                self.q1_target(next_observations, next_actions),
                self.q2_target(next_observations, next_actions),
            )
            target = rewards + self.gamma * not_terminal * (next_q - alpha * next_log_probs)
        q1_loss = functional.mse_loss(self.q1(observations, actions), target)
        q2_loss = functional.mse_loss(self.q2(observations, actions), target)
        _minimize(self.q_optimizer, q1_loss + q2_loss)

        new_actions, log_probs = self.policy(observations).rsample_squashed()
        q_new = torch.min(self.q1(observations, new_actions), self.q2(observations, new_actions))
        policy_loss = (alpha * log_probs - q_new).mean()
        _minimize(self.policy_optimizer, policy_loss)

        alpha_loss = -(self.log_alpha * (log_probs.detach() + self.target_entropy).mean()).sum()
        _minimize(self.alpha_optimizer, alpha_loss)

        polyak_update(self.q1, self.q1_target, self.hyper.tau)
        polyak_update(self.q2, self.q2_target, self.hyper.tau)
        return np.array(
            [
                q1_loss.item(),
                q2_loss.item(),
                policy_loss.item(),
                -log_probs.mean().item(),
                float(alpha.mean()),
            ]
        )

    def _discrete_update(
        self,
        observations: list[torch.Tensor],
        next_observations: list[torch.Tensor],
        actions: torch.Tensor,
        rewards: torch.Tensor,
        not_terminal: torch.Tensor,
        mask: torch.Tensor | None,
        next_mask: torch.Tensor | None,
    ) -> np.ndarray:
        sizes = self.branch_sizes
        alpha = self.log_alpha.exp().detach()
        with torch.no_grad():
            next_log_probs = self.policy(next_observations, next_mask).branch_log_probs()
            next_q = torch.min(
                self.q1_target(next_observations), self.q2_target(next_observations)
            ).split(sizes, dim=1)
            soft_values = [
                (lp.exp() * (q - alpha[b] * lp)).sum(dim=1)
                for b, (lp, q) in enumerate(zip(next_log_probs, next_q, strict=True))
            ]
            next_value = torch.stack(soft_values, dim=1).mean(dim=1)
            target = rewards + self.gamma * not_terminal * next_value
        q1_all = self.q1(observations).split(sizes, dim=1)
        q2_all = self.q2(observations).split(sizes, dim=1)
        q1_loss = _branch_q_loss(q1_all, actions, target)
        q2_loss = _branch_q_loss(q2_all, actions, target)
        _minimize(self.q_optimizer, q1_loss + q2_loss)

        log_probs = self.policy(observations, mask).branch_log_probs()
        with torch.no_grad():
            min_q = torch.min(self.q1(observations), self.q2(observations)).split(sizes, dim=1)
        policy_terms = []
        alpha_terms = []
        entropies = []
        for b, (lp, q) in enumerate(zip(log_probs, min_q, strict=True)):
            probs = lp.exp()
            policy_terms.append((probs * (alpha[b] * lp - q)).sum(dim=1).mean())
            entropy = -(probs * lp).sum(dim=1).detach()
            entropies.append(entropy.mean())
            alpha_terms.append(self.log_alpha[b] * (entropy - self.target_entropy[b]).mean())
        policy_loss = torch.stack(policy_terms).sum()
        _minimize(self.policy_optimizer, policy_loss)

        alpha_loss = torch.stack(alpha_terms).sum()
        _minimize(self.alpha_optimizer, alpha_loss)

        polyak_update(self.q1, self.q1_target, self.hyper.tau)
        polyak_update(self.q2, self.q2_target, self.hyper.tau)
        return np.array(
            [
                q1_loss.item(),
                q2_loss.item(),
                policy_loss.item(),
                float(torch.stack(entropies).sum()),
                float(alpha.mean()),
            ]
        )
