"""MA-POCA (``trainer_type: poca``): PPO with a centralized group critic and per-agent baselines.

ML-Agents' facts it follows (``poca/trainer.py``, ``poca/optimizer_torch.py``, ``settings.py``):
POCA takes PPO's hyperparameters, schedules, rollout and minibatch update; the critic
(:class:`~trainers.poca.networks.GroupCritic`) values the whole group from every present
member's observation and gives each agent a counterfactual baseline from its own observation
and its teammates' observations and actions. An agent's extrinsic reward is its own plus its
teammates' own rewards plus the group reward; returns are lambda returns of the group value
(``lambd``, each signal's ``gamma``), the advantage of an agent is its return minus its
baseline (the mean over the signals, then normalized over the rollout as PPO does). The loss is
``policy + 0.5 * (value_loss + 0.5 * baseline_loss) - beta * entropy``: the baseline loss
clipped to ``epsilon`` around the old baseline estimates, the value loss the squared error
against the returns (ML-Agents 1.1.0 clips it around the returns, which is no clipping: see
:func:`~trainers.ppo.trainer.returns_value_loss`). TensorBoard: PPO's tags plus
``Losses/Baseline Loss``, ``Policy/<Signal> Baseline Estimate`` and
``Environment/Group Cumulative Reward``. As in ML-Agents the policy
never shares the critic's body (``shared_critic`` is ignored).

Where it differs: an agent that finishes before its group is credited with the group's later
rewards by bootstrapping (:func:`~trainers.poca.groups.credit_early_finishers`) instead of
holding its trajectory until the group ends; memory (``network_settings.memory``) is not
supported yet. Groups come from :attr:`BehaviorStep.group_ids` (games of the PettingZoo front);
a behavior whose agents are in no group is refused.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from trainers.common.bookkeeping.stats import GROUP_CUMULATIVE_REWARD
from trainers.common.buffers.experience import Rollout, generalized_advantages
from trainers.common.trainer import Trainer, TrainerContext
from trainers.contract import BehaviorStep, PolicyDecision
from trainers.poca.groups import (
    GroupLayout,
    credit_early_finishers,
    group_layout,
    poca_rewards,
)
from trainers.poca.networks import GroupCritic
from trainers.ppo.trainer import (
    VALUE_CHUNK,
    VALUE_LOSS_COEF,
    PPOTrainer,
    _Minibatch,
    _UpdateData,
    clipped_surrogate_loss,
    clipped_value_loss,
    returns_value_loss,
)
from trainers.reward_signals import signal_modules
from trainers.settings import ConfigError

__all__ = ["BASELINE_LOSS_COEF", "POCATrainer"]

logger = logging.getLogger("trainers")

#: Weight of the baseline loss relative to the value loss (ML-Agents').
BASELINE_LOSS_COEF = 0.5
#: The rollout buffer fields MA-POCA adds: each decision's group ids, each outcome's group
#: rewards (:meth:`RolloutBuffer.add_field`).
GROUP_IDS, GROUP_REWARDS = "group_ids", "group_rewards"


@dataclass
class _GroupRollout:
    """What POCA keeps of a rollout besides PPO's fields (all ``(T, n)`` but ``baselines``)."""

    ids: np.ndarray
    group_rewards: np.ndarray
    baselines: np.ndarray  # (T, n, heads)


@dataclass
class _GroupData:
    """Teammates and old baselines of the update's flat rows (rows as in ``_UpdateData``)."""

    data: _UpdateData
    mates: torch.Tensor  # (R, k) flat rows of each row's teammates (0 where absent)
    absent: torch.Tensor  # (R, k) bool
    baselines: torch.Tensor  # (R,) or (R, heads)


class POCATrainer(PPOTrainer):
    """MA-POCA for one behavior (see the module docstring)."""

    trainer_type = "poca"

    def __init__(self, context: TrainerContext) -> None:
        name = context.behavior_name
        if context.settings.network_settings.memory is not None:
            raise ConfigError(
                f"behaviors.{name}.network_settings.memory: trainer_type poca does not support "
                "memory yet; remove the memory section or use trainer_type: ppo."
            )
        #: Per slot group: the group ids of the slots' current observations.
        self._current_ids: dict[int, np.ndarray] = {}
        self._groups_checked = False
        self._group_sums: dict[int, np.ndarray] = {}
        self._rollout_groups: dict[int, _GroupRollout] = {}
        self._group_data: _GroupData | None = None
        self._baseline_losses: list[float] = []
        super().__init__(context)
        if self.hyper.shared_critic:
            logger.warning(
                "%s: shared_critic is ignored by trainer_type poca (its critic sees the "
                "whole group), as in ML-Agents.",
                name,
            )
        for signal in self.intrinsic:
            logger.warning(
                "%s: the %s reward signal is not designed for POCA (as ML-Agents warns); "
                "results may be unexpected.",
                name,
                signal.name,
            )

    def _build_critic(self) -> nn.Module:
        self.group_critic = GroupCritic(
            self.context.observation_layout,
            self.context.action_layout,
            self.settings.network_settings,
            self.normalizer,
            heads=len(self.signals),
        ).to(self.device)
        return self.group_critic

    def _body_stacks(self) -> list[tuple[nn.Parameter, ...]]:
        return []  # the critic's body reads attention output, not the policy's features

    def modules(self) -> dict[str, nn.Module]:
        modules: dict[str, nn.Module] = {"policy": self.policy, "critic": self.group_critic}
        return {**modules, **signal_modules(self.intrinsic)}

    def load_state_dict(self, state: dict[str, Any], *, restore_progress: bool) -> None:
        """As :meth:`Trainer.load_state_dict` (the group critic has all its heads from the
        start, so PPO's repair of critics without signal heads does not apply)."""
        Trainer.load_state_dict(self, state, restore_progress=restore_progress)

    # -- acting ----------------------------------------------------------------------------

    def _require_groups(self, step: BehaviorStep) -> np.ndarray:
        """``step.group_ids``; a :class:`ConfigError` when the game reports no groups."""
        ids = step.group_ids
        if ids is None or step.group_rewards is None or not (ids != 0).any():
            raise ConfigError(
                f"behaviors.{self.behavior_name}.trainer_type: poca trains agents in groups "
                "(ML-Agents' multi-agent groups), but the agents of this behavior are in none"
                + (" (this front does not report groups)" if ids is None else "")
                + "; use trainer_type: ppo, or put the agents in groups in the game."
            )
        return ids

    def decide_many(self, steps: Sequence[BehaviorStep]) -> list[PolicyDecision]:
        if not self._groups_checked and steps:
            self._require_groups(steps[0])
            self._groups_checked = True
        decisions = super().decide_many(steps)
        if self.training and not self.is_done:  # PPO recorded these decisions
            for step in steps:
                ids = step.group_ids
                recorded = np.zeros(len(step.valid), np.int64) if ids is None else ids.copy()
                self.buffers[step.group].add_field(GROUP_IDS, recorded)
        return decisions

    def observe(self, step: BehaviorStep) -> None:
        buffer = self.buffers.get(step.group)
        if buffer is not None and buffer.awaiting_outcome:
            rewards = step.group_rewards
            n = len(step.valid)
            buffer.add_field(
                GROUP_REWARDS,
                np.zeros(n, np.float32) if rewards is None else rewards.astype(np.float32),
            )
        self._record_group_returns(step)
        if step.group_ids is not None:
            self._current_ids[step.group] = step.group_ids.copy()
        super().observe(step)

    def _record_group_returns(self, step: BehaviorStep) -> None:
        """Sum each slot's group rewards; when a group's episode ends, report the sum of each
        member still there as ``Environment/Group Cumulative Reward`` (as ML-Agents)."""
        rewards, ids = step.group_rewards, self._current_ids.get(step.group)
        if rewards is None or ids is None:
            return
        sums = self._group_sums.get(step.group)
        if sums is None or len(sums) != len(rewards):
            sums = np.zeros(len(rewards), dtype=np.float64)
            self._group_sums[step.group] = sums
        sums += np.where(step.valid, rewards, 0.0)
        ended = step.done & step.valid
        going_on = step.valid & ~step.done
        for slot in np.flatnonzero(ended & (ids != 0)):
            if not (going_on & (ids == ids[slot])).any():  # the whole group has finished
                self.context.stats.add(GROUP_CUMULATIVE_REWARD, float(sums[slot]))
        sums[ended] = 0.0

    def _bootstrap_values(self, step: BehaviorStep, rows: np.ndarray) -> np.ndarray:
        """Group values of the final observations at ``rows``: the groups as decided, with the
        members that acted in this step."""
        ids = self.buffers[step.group].latest(GROUP_IDS)
        values = self._group_values(step.final_observations, ids[None], step.valid[None])
        return values[rows]

    def _current_values(self, observations: list[np.ndarray], group: int) -> np.ndarray:
        ids = self._current_ids.get(group)
        if ids is None:
            ids = np.zeros(len(observations[0]), np.int64)
        return self._group_values(observations, ids[None], np.ones((1, len(ids)), bool))

    # -- critic passes ---------------------------------------------------------------------

    def _group_values(
        self, observations: list[np.ndarray], ids: np.ndarray, present: np.ndarray
    ) -> np.ndarray:
        """Group values of ``T * n`` raw observations (step by step) given the steps' ``ids``
        and ``present`` ``(T, n)``: ``(T * n,)``, or ``(T * n, heads)``."""
        layout = group_layout(ids, present)
        with self.model_lock, torch.no_grad():
            features = self._encode_all(observations)
            mates, absent = self._flat_mates(layout)
            values = [
                self.group_critic.values(
                    features[start : start + VALUE_CHUNK],
                    features[mates[start : start + VALUE_CHUNK]],
                    absent[start : start + VALUE_CHUNK],
                )
                for start in range(0, len(features), VALUE_CHUNK)
            ]
        return torch.cat(values).cpu().numpy()

    def _group_baselines(self, rollout: Rollout, ids: np.ndarray) -> np.ndarray:
        """Every recorded step's baselines ``(T, n, heads)``."""
        length, n = ids.shape
        layout = group_layout(ids, rollout.valid)
        critic = self.group_critic

        def flat(array: np.ndarray | None) -> torch.Tensor | None:
            if array is None:
                return None
            return torch.as_tensor(array.reshape(length * n, *array.shape[2:]), device=self.device)

        with self.model_lock, torch.no_grad():
            observations = [
                entry.reshape(length * n, *entry.shape[2:]) for entry in rollout.observations
            ]
            features = self._encode_all(observations)
            actions = critic.flat_actions(flat(rollout.continuous), flat(rollout.discrete))
            mates, absent = self._flat_mates(layout)
            baselines = [
                critic.baselines(
                    features[start : start + VALUE_CHUNK],
                    features[mates[start : start + VALUE_CHUNK]],
                    actions[mates[start : start + VALUE_CHUNK]],
                    absent[start : start + VALUE_CHUNK],
                )
                for start in range(0, len(features), VALUE_CHUNK)
            ]
        return torch.cat(baselines).cpu().numpy().reshape(length, n, -1)

    def _encode_all(self, observations: list[np.ndarray]) -> torch.Tensor:
        """The critic's encoding of raw observations, in chunks (call under the model lock)."""
        size = len(observations[0])
        return torch.cat(
            [
                self.group_critic.encode(
                    self.tensors([entry[start : start + VALUE_CHUNK] for entry in observations])
                )
                for start in range(0, size, VALUE_CHUNK)
            ]
        )

    def _flat_mates(self, layout: GroupLayout) -> tuple[torch.Tensor, torch.Tensor]:
        """Teammates as flat row indices ``(T * n, k)`` (row ``t * n + slot``) and padding."""
        length, n, k = layout.mates.shape
        rows = layout.mates + (np.arange(length) * n)[:, None, None]
        return (
            torch.as_tensor(rows.reshape(length * n, k), device=self.device),
            torch.as_tensor(layout.absent.reshape(length * n, k), device=self.device),
        )

    # -- learning --------------------------------------------------------------------------

    def _take_update_job(self) -> Callable[[], None]:
        self._absorb_observations()
        rollouts, extras = [], []
        for group in self._closing_groups():
            buffer = self.buffers[group]
            ids = buffer.stacked(GROUP_IDS)
            valid = buffer.stacked("valid")
            group_rewards = buffer.stacked(GROUP_REWARDS)
            current = self._current_ids.get(group, np.zeros(buffer.num_slots, np.int64))
            contexts = iter([(ids, valid), (current[None], np.ones((1, len(current)), bool))])
            rollout = buffer.finish(self._values_in(contexts), self._last_observations[group])
            rollout.group = group
            rollouts.append(rollout)
            extras.append(_GroupRollout(ids, group_rewards, self._group_baselines(rollout, ids)))
        step = self.step
        return lambda: self._update_groups(rollouts, extras, step)

    def _values_in(
        self, contexts: Iterator[tuple[np.ndarray, np.ndarray]]
    ) -> Callable[[list[np.ndarray]], np.ndarray]:
        """The value function :meth:`RolloutBuffer.finish` calls, first with the recorded steps,
        then with the last observations: each call takes the next ``(ids, present)``."""

        def value_of(observations: list[np.ndarray]) -> np.ndarray:
            ids, present = next(contexts)
            return self._group_values(observations, ids, present)

        return value_of

    def _update_groups(
        self, rollouts: list[Rollout], extras: list[_GroupRollout], step: int
    ) -> None:
        """POCA's rewards, then PPO's update with POCA's estimates and losses, then the
        baseline statistics."""
        self._rollout_groups = {id(r): extra for r, extra in zip(rollouts, extras, strict=True)}
        for rollout, extra in zip(rollouts, extras, strict=True):
            layout = group_layout(extra.ids, rollout.valid)
            rollout.rewards = poca_rewards(
                rollout.rewards, extra.group_rewards, layout, rollout.valid
            )
        self._baseline_losses = []
        self._update(rollouts, step)
        stats = {"Losses/Baseline Loss": float(np.mean(self._baseline_losses))}
        valid = np.concatenate([rollout.valid.reshape(-1) for rollout in rollouts])
        baselines = np.concatenate(
            [extra.baselines.reshape(-1, extra.baselines.shape[-1]) for extra in extras]
        )[valid]
        for j, signal in enumerate(self.signals):
            stats[f"Policy/{signal.name} Baseline Estimate"] = float(baselines[:, j].mean())
        self.context.stats.add_many(stats)
        self._rollout_groups = {}
        self._group_data = None

    def _estimates(self, rollout: Rollout, rewards: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lambda returns of the group value per signal and advantages ``return - baseline``
        (the mean over the signals); the extrinsic signal credits early finishers."""
        extra = self._rollout_groups[id(rollout)]
        if rollout.head_values is not None and rollout.head_next_values is not None:
            values, next_values = rollout.head_values, rollout.head_next_values
        else:
            values, next_values = rollout.values[..., None], rollout.next_values[..., None]
        assert rollout.episode_ends is not None
        truncated = rollout.episode_ends & ~rollout.terminated
        never = np.zeros_like(rollout.terminated)
        advantages, returns = [], []
        for j, signal in enumerate(self.signals):
            terminated = never if signal.ignore_done else rollout.terminated
            following = next_values[..., j]
            if j == 0:
                following, terminated = credit_early_finishers(
                    extra.ids,
                    rollout.valid,
                    terminated,
                    truncated,
                    extra.group_rewards,
                    following,
                    signal.gamma,
                )
            _, returned = generalized_advantages(
                rewards[..., j],
                values[..., j],
                following,
                terminated,
                rollout.chain_breaks,
                signal.gamma,
                self.hyper.lambd,
            )
            advantages.append(returned - extra.baselines[..., j])
            returns.append(returned)
        mean = np.asarray(np.mean(advantages, axis=0), dtype=np.float32)
        if len(returns) == 1:
            return mean, returns[0]
        return mean, np.stack(returns, axis=-1)

    def _update_data(
        self, rollouts: list[Rollout], estimates: list[tuple[np.ndarray, np.ndarray]]
    ) -> _UpdateData:
        """PPO's update data, plus every row's teammates and old baselines."""
        data = super()._update_data(rollouts, estimates)
        extras = [self._rollout_groups[id(rollout)] for rollout in rollouts]
        width = max(
            group_layout(e.ids, r.valid).width for e, r in zip(extras, rollouts, strict=True)
        )
        mates, absent, baselines = [], [], []
        offset = 0
        for rollout, extra in zip(rollouts, extras, strict=True):
            layout = group_layout(extra.ids, rollout.valid, width)
            length, n = extra.ids.shape
            rows = layout.mates + (offset + np.arange(length) * n)[:, None, None]
            mates.append(rows.reshape(length * n, width))
            absent.append(layout.absent.reshape(length * n, width))
            baselines.append(extra.baselines.reshape(length * n, -1))
            offset += length * n
        joined = np.concatenate(baselines)
        self._group_data = _GroupData(
            data=data,
            mates=torch.as_tensor(np.concatenate(mates), device=self.device),
            absent=torch.as_tensor(np.concatenate(absent), device=self.device),
            baselines=torch.as_tensor(
                joined[:, 0] if joined.shape[1] == 1 else joined, device=self.device
            ),
        )
        return data

    def _minibatch_step(self, batch: _Minibatch, epsilon: float, beta: float) -> torch.Tensor:
        group = self._group_data
        assert group is not None, "the update data was not built"
        data, critic = group.data, self.group_critic
        rows = batch.rows
        mates, absent = group.mates[rows], group.absent[rows]
        size, width = mates.shape
        flat = mates.reshape(-1)
        with self.model_lock:
            dist = self.policy(self.tensors(batch.observations), batch.masks)
            log_probs = dist.log_probs(batch.continuous, batch.discrete)
            entropy = dist.entropy().mean()
            observations = [
                torch.cat([own, every[flat]])
                for own, every in zip(batch.observations, data.observations, strict=True)
            ]
            features = critic.encode(self.tensors(observations))
            own = features[:size]
            teammates = features[size:].reshape(size, width, features.shape[1])
            actions = critic.flat_actions(
                None if data.continuous is None else data.continuous[flat],
                None if data.discrete is None else data.discrete[flat],
            )
            actions = actions.reshape(size, width, actions.shape[1])
            values = critic.values(own, teammates, absent)
            baselines = critic.baselines(own, teammates, actions, absent)
            policy_loss = clipped_surrogate_loss(
                log_probs, batch.log_probs, batch.advantages, epsilon
            )
            value_loss = returns_value_loss(values, batch.returns)
            baseline_loss = clipped_value_loss(
                baselines, group.baselines[rows], batch.returns, epsilon
            )
            loss = (
                policy_loss
                + VALUE_LOSS_COEF * (value_loss + BASELINE_LOSS_COEF * baseline_loss)
                - beta * entropy
            )
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
        self._baseline_losses.append(float(baseline_loss.detach()))
        return torch.stack([policy_loss.abs(), value_loss, entropy]).detach().cpu()
