"""Proximal Policy Optimization (clipped surrogate), ML-Agents' hyperparameters.

One update, in order:

1. the rollout (whole trajectories over all slots, recorded per slot group since the games of
   an asynchronous environment step independently) is closed once its completed trajectories
   hold *more* than ``buffer_size`` agent steps (ML-Agents' ``RLTrainer.advance`` takes in every
   trajectory that is ready, then ``OnPolicyTrainer._is_ready_update`` compares
   ``num_experiences > buffer_size``; a slot's trajectory still open then goes to the next
   rollout: :class:`~trainers.common.buffers.experience.RolloutBuffer`). Where all agents cut
   their trajectories together and ``buffer_size`` is agents times ``time_horizon`` (Pyramids,
   PushBlock, 3DBall), the update therefore comes every twice ``buffer_size`` steps, as in
   ML-Agents. The critic evaluates all its observations and each group's current ones in one
   batch (acting needs no critic pass); generalized advantage estimation runs per slot, cut at
   episode ends and every ``time_horizon`` steps, bootstrapping from the value of the next
   observation unless the episode terminated (a truncated episode bootstraps from its final
   observation);
2. advantages are normalized over the rollout (with memory, its padding too: see below);
3. ``num_epoch`` passes over shuffled minibatches of ``batch_size``: clipped surrogate loss
   with one probability ratio per action dimension and per discrete branch, the squared error
   of the values against the returns as value loss (:func:`returns_value_loss`: what
   ML-Agents 1.1.0's clipped value loss computes), entropy bonus ``beta``; one Adam optimizer
   for policy and critic, gradients not clipped (all as in ML-Agents).

Before step 1 the observation normalizer absorbs the rollout's observations, so values and
updates see the statistics of the data they are computed on (as in ML-Agents, where each
trajectory updates the normalizer before its values are estimated).

Learning rate, ``epsilon`` and ``beta`` follow their schedules over ``max_steps``.

Reward signals (:mod:`trainers.reward_signals`), as in ML-Agents: every signal's rewards are
scaled by its ``strength`` (intrinsic ones are evaluated when the rollout closes, with the
signal's networks as they are then) and get a value head of their own; each signal has its own
advantages and returns with its own ``gamma`` (curiosity and RND bootstrap through episode ends);
the policy follows the mean of the signals' advantages, the value loss is the mean over the
heads, and the intrinsic signals' networks train on every minibatch after the policy's step.
With the extrinsic signal alone, this is the algorithm above.

With ``shared_critic`` the critic is value heads on the policy's encoder and body (ML-Agents'
``SharedActorCritic``): both losses train that one body, which the checkpoint holds once, with
the policy.

With ``network_settings.memory`` policy and critic each have an LSTM after the body (ML-Agents'
recurrent networks; with ``shared_critic`` they share the policy's). Acting carries every slot's
memory from step to step (:class:`~trainers.common.networks.acting.ActingPolicy`), reset to
zeros when its episode ends, and records the memory before each step; a step whose action the
environment ignored (``valid`` false) leaves the memory as it was before it (in ML-Agents an
agent that does not ask for a decision does not run the policy, and one whose episode ended
starts the next with zeros: ``AgentProcessor`` removes its memories). Since a rollout holds
whole trajectories, a sequence's only cuts are episode ends and ``time_horizon``. When the
rollout closes, the critic runs over each slot's steps in order (its memory carried across
rollouts, reset at episode ends, unchanged by ignored steps; ML-Agents'
``TorchOptimizer.get_trajectory_value_estimates``) for the values, recording its memory before
each step. The update then trains on sequences (:mod:`trainers.common.buffers.sequences`):
``batch_size // sequence_length`` sequences per minibatch (ML-Agents' ``n_sequences``), each
starting from the memories recorded at its first step (ML-Agents' ``TorchPPOOptimizer.update``
takes ``memory`` and ``critic_memory`` at each sequence's first step), padded steps masked out of
the losses, steps the environment ignored left out of the sequences. The padding counts where
ML-Agents counts it: the rollout closes once its completed trajectories, each padded to whole
sequences, hold *more* than ``buffer_size`` entries (``OnPolicyTrainer._is_ready_update``
compares the update buffer's ``num_experiences``, padding included), and the advantages are
normalized over the real and the padded positions, the padded ones as 0 (the values
``resequence_and_append`` pads them with). In Hallway, whose episodes last 30 to 90 decisions,
a third of the buffer is padding: the rollout updates after about 700 real steps, not 1024.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from trainers.assembly import PolicyTrainer
from trainers.common.buffers.experience import (
    Rollout,
    RolloutBuffer,
    assign_values,
    generalized_advantages,
)
from trainers.common.buffers.sequences import Sequences, cut_sequences, join_sequences
from trainers.common.networks.distributions import ActionDistribution
from trainers.common.networks.models import (
    StackedBodies,
    ValueNetwork,
    body_stacks,
    make_adam,
    share_policy_body,
)
from trainers.common.optimization.schedules import Schedule
from trainers.common.trainer import TrainerContext
from trainers.contract import BehaviorStep, PolicyDecision
from trainers.reward_signals import (
    SignalBatch,
    signal_modules,
    signal_optimizers,
)
from trainers.settings import PPOHyperparameters
from unity_gym.timers import hierarchical_timer

__all__ = [
    "PPOTrainer",
    "clipped_surrogate_loss",
    "clipped_value_loss",
    "normalized_advantages",
    "returns_value_loss",
]

logger = logging.getLogger("trainers")

VALUE_LOSS_COEF = 0.5
VALUE_CHUNK = 4096  # observations per critic pass when a rollout closes
# Floors of the linear schedules (ML-Agents' values).
MIN_LEARNING_RATE = 1e-10
MIN_EPSILON = 0.1
MIN_BETA = 1e-5


class PPOTrainer(PolicyTrainer):
    """PPO for one behavior (see the module docstring)."""

    trainer_type = "ppo"
    wait_for_running_update = True
    update_needs_settled_groups = True

    def __init__(self, context: TrainerContext) -> None:
        super().__init__(context)
        hyper = self.settings.hyperparameters
        assert isinstance(hyper, PPOHyperparameters)
        self.hyper = hyper
        net = self.settings.network_settings
        self.assemble_policy(squash=False)
        self.assemble_cloning(learning_rate=hyper.learning_rate, batch_size=hyper.batch_size)
        critic = self._build_critic()
        self.parameters = [*self.policy.parameters(), *critic.parameters()]
        self.recurrent = net.memory is not None
        stacks = self._body_stacks()
        self.optimizer = make_adam(self.parameters, hyper.learning_rate, stacks=stacks)
        #: Both bodies in one pass during updates, when they take the same parameter-free
        #: features (vector observations only, no goal conditioning).
        self.stacked_bodies = (
            StackedBodies([self.optimizer.buffer.stacked(i) for i in range(len(stacks))])
            if stacks
            else None
        )
        max_steps = self.settings.max_steps
        assert hyper.beta_schedule is not None and hyper.epsilon_schedule is not None
        self.learning_rate = Schedule(
            hyper.learning_rate_schedule, hyper.learning_rate, MIN_LEARNING_RATE, max_steps
        )
        self.epsilon = Schedule(
            hyper.epsilon_schedule, hyper.epsilon, min(MIN_EPSILON, hyper.epsilon), max_steps
        )
        self.beta = Schedule(hyper.beta_schedule, hyper.beta, min(MIN_BETA, hyper.beta), max_steps)
        self.deterministic = net.deterministic
        #: Steps per training sequence (1 without memory).
        self.sequence_length = net.memory.sequence_length if net.memory is not None else 1
        #: Per slot group: the critic's memory of every slot before the next rollout's first step.
        self._critic_memories: dict[int, np.ndarray] = {}
        # a recurrent critic values final observations when the rollout closes: keep them
        self._needs_next = self.recurrent or any(
            signal.needs_next_observations for signal in self.signals
        )
        #: Per slot group: each slot's scaled reward of every signal since its episode began.
        self._episode_sums: dict[int, np.ndarray] = {}
        # One rollout buffer per slot group (see BehaviorStep.group): groups step independently.
        self.buffers: dict[int, RolloutBuffer] = {}
        self._last_observations: dict[int, list[np.ndarray]] = {}

    def _build_critic(self) -> nn.Module:
        """Build the critic (``self.critic``) and return it (a subclass may build another)."""
        net = self.settings.network_settings
        layout = self.context.observation_layout
        self.critic = ValueNetwork(layout, net, self.normalizer, heads=len(self.signals)).to(
            self.device
        )
        if self.hyper.shared_critic:  # value heads on the policy's body, saved with the policy
            share_policy_body(self.critic, self.policy)
        return self.critic

    def _body_stacks(self) -> list[tuple[nn.Parameter, ...]]:
        """The parameter groups of the stacked update pass; none when it does not apply."""
        if self.hyper.shared_critic or self.recurrent:  # one body, or sequences: no stacking
            return []
        if self.policy.encoder.visual_index:  # image encoders have parameters of their own
            return []
        try:
            return body_stacks([self.policy.body, self.critic.body])
        except ValueError:
            return []

    def modules(self) -> dict[str, nn.Module]:
        modules: dict[str, nn.Module] = {"policy": self.policy, "critic": self.critic}
        return {**modules, **signal_modules(self.intrinsic)}

    def optimizers(self) -> dict[str, torch.optim.Optimizer]:
        optimizers: dict[str, torch.optim.Optimizer] = {"optimizer": self.optimizer}
        optimizers.update(signal_optimizers(self.intrinsic))
        if self.cloning is not None:
            optimizers["behavioral_cloning.optimizer"] = self.cloning.optimizer
        return optimizers

    def load_state_dict(self, state: dict[str, Any], *, restore_progress: bool) -> None:
        """As :meth:`Trainer.load_state_dict`; a critic saved without the intrinsic signals'
        value heads (before they were configured) gets fresh ones, with a warning (the
        optimizer's state then no longer fits: ``--initialize-from`` loads such a checkpoint,
        ``--resume`` refuses it)."""
        modules = state.get("modules")
        critic = modules.get("critic") if isinstance(modules, dict) else None
        if (
            self.intrinsic
            and isinstance(modules, dict)
            and isinstance(critic, dict)
            and not any(key.startswith("signal_heads.") for key in critic)
        ):
            fresh = {
                key: value
                for key, value in self.critic.state_dict().items()
                if key.startswith("signal_heads.")
            }
            logger.warning(
                "%s: the checkpoint's critic has no value heads for %s; they start fresh.",
                self.behavior_name,
                ", ".join(signal.key for signal in self.intrinsic),
            )
            state = {**state, "modules": {**modules, "critic": {**critic, **fresh}}}
        super().load_state_dict(state, restore_progress=restore_progress)

    # -- acting ----------------------------------------------------------------------------

    def decide(self, step: BehaviorStep) -> PolicyDecision:
        return self.decide_many([step])[0]

    def decide_many(self, steps: Sequence[BehaviorStep]) -> list[PolicyDecision]:
        """One forward pass for the slots of every group in ``steps``, recorded per group."""
        if not steps:
            return []
        recording = self.training and not self.is_done  # past max_steps: act, record nothing
        actions = self.acting.act(steps, log_probs=recording)
        decisions = []
        for index, step in enumerate(steps):
            rows = actions.part(index)
            if recording:
                assert actions.log_probs is not None
                buffer = self.buffers.get(step.group)
                if buffer is None:
                    buffer = RolloutBuffer(
                        self.settings.time_horizon,
                        len(step.valid),
                        sequence_length=self.sequence_length,
                    )
                    self.buffers[step.group] = buffer
                buffer.add_decision(
                    step.observations,
                    _pick(actions.raw, rows),
                    _pick(actions.discrete, rows),
                    step.action_mask,
                    actions.log_probs[rows],
                    _pick(actions.memories, rows),
                )
            decisions.append(
                PolicyDecision(_pick(actions.continuous, rows), _pick(actions.discrete, rows))
            )
        return decisions

    def observe(self, step: BehaviorStep) -> None:
        self.step += int(step.valid.sum())
        self.record_episodes(step)
        self.acting.observe(step)
        buffer = self.buffers.get(step.group)
        if buffer is None or not buffer.awaiting_outcome:  # the decision was not recorded
            return
        heads = len(self.signals)
        truncation_values = np.zeros(
            (len(step.valid), heads) if heads > 1 else len(step.valid), dtype=np.float32
        )
        # signals that ignore episode ends need the final observation's value there too
        bootstrap = step.done if heads > 1 else step.truncated & ~step.terminated
        if bootstrap.any() and not self.recurrent:  # a recurrent critic values them later
            rows = np.flatnonzero(bootstrap)
            truncation_values[rows] = self._bootstrap_values(step, rows)
        buffer.add_outcome(
            step.rewards,  # scaled by the extrinsic signal's strength when the rollout closes
            step.terminated,
            step.truncated,
            step.valid,
            truncation_values,
            list(step.final_observations) if self._needs_next else None,
        )
        self._last_observations[step.group] = step.observations

    def _bootstrap_values(self, step: BehaviorStep, rows: np.ndarray) -> np.ndarray:
        """The critic's values of ``step.final_observations`` at ``rows`` (an index array)."""
        final = [entry[rows] for entry in step.final_observations]
        with self.model_lock, torch.no_grad():
            return np.asarray(self.critic(self.tensors(final)).cpu().numpy())

    def interrupt_episodes(self, group: int) -> None:
        """End the group's episodes truncated at the last outcome (bootstrapping from the
        current observations) and, with memory, clear the slots' memories."""
        self.acting.clear(group)
        buffer = self.buffers.get(group)
        observations = self._last_observations.get(group)
        if buffer is None or observations is None or buffer.awaiting_outcome:
            return
        slots = np.ones(buffer.num_slots, dtype=bool)
        if self.recurrent:  # the recurrent critic values them when the rollout closes
            buffer.truncate_last(slots, None)
            return
        buffer.truncate_last(slots, self._current_values(observations, group))

    def _current_values(self, observations: list[np.ndarray], group: int) -> np.ndarray:
        """The critic's values of slot group ``group``'s current ``observations``."""
        with self.model_lock, torch.no_grad():
            return np.asarray(self.critic(self.tensors(observations)).cpu().numpy())

    # -- learning --------------------------------------------------------------------------

    def _update_ready(self) -> bool:
        # ML-Agents' OnPolicyTrainer._is_ready_update: num_experiences > buffer_size, over the
        # whole trajectories completed so far (padding included with memory).
        return self._update_size() > self.hyper.buffer_size

    def _update_size(self) -> int:
        """Agent steps in the rollout; with memory, as ML-Agents' update buffer counts them:
        each completed trajectory padded to whole sequences (``OnPolicyTrainer._is_ready_update``
        compares ``num_experiences``, padding included, with ``buffer_size``)."""
        return sum(buffer.num_padded for buffer in self.buffers.values())

    def _closing_groups(self) -> list[int]:
        """The slot groups whose buffers the update closes: those with recorded steps, except
        a group whose last decision awaits its outcome. (Updates wait for every game to
        settle, so that happens only in the run's last loop, when ``max_steps`` was reached
        while another game's outcome came in and was not recorded; that group's steps stay.)"""
        return [
            group
            for group, buffer in self.buffers.items()
            if buffer.num_steps and not buffer.awaiting_outcome
        ]

    def _take_update_job(self) -> Callable[[], None]:
        self._absorb_observations()
        rollouts = []
        for group in self._closing_groups():
            last = self._last_observations[group]
            rollout = self.buffers[group].finish(None if self.recurrent else self._values, last)
            rollout.group = group
            if self.recurrent:
                self._recurrent_values(rollout, last)
            rollouts.append(rollout)
        step = self.step
        return lambda: self._update(rollouts, step)

    def _absorb_observations(self) -> None:
        """Merge the rollout's valid observations into the normalizer before its values are
        estimated and the networks trained on it (ML-Agents does this per trajectory, as
        trajectories arrive)."""
        normalizer = self.normalizer
        if not normalizer.normalizers:
            return
        buffers = [self.buffers[group] for group in self._closing_groups()]
        observations: list[torch.Tensor | None] = [None] * len(
            self.context.observation_layout.entries
        )
        for index in normalizer.entry_index:
            joined = np.concatenate([buffer.valid_observations(index) for buffer in buffers])
            observations[index] = (
                torch.as_tensor(joined, device=self.device)
                .reshape(len(joined), -1)
                .to(torch.float32)
            )
        with self.model_lock:
            normalizer.update(observations)

    def _values(self, observations: list[np.ndarray]) -> np.ndarray:
        """The critic's values of a batch of raw observations, evaluated in chunks (``(B,)``,
        or ``(B, heads)`` with several reward signals)."""
        size = len(observations[0])
        heads = len(self.signals)
        values = np.empty((size, heads) if heads > 1 else size, dtype=np.float32)
        with self.model_lock, torch.no_grad():
            for start in range(0, size, VALUE_CHUNK):
                chunk = [entry[start : start + VALUE_CHUNK] for entry in observations]
                values[start : start + VALUE_CHUNK] = self.critic(self.tensors(chunk)).cpu().numpy()
        return values

    def _recurrent_values(self, rollout: Rollout, last_observations: list[np.ndarray]) -> None:
        """Value ``rollout`` with the recurrent critic: each slot's steps in order, its memory
        carried over from the group's previous rollout, reset after each episode end and left
        as it was by steps the rollout does not train on (not ``valid``: ignored by the
        environment, or held by another rollout); records the critic's memory before every
        step in ``rollout.critic_memories``. The memory carried to the next rollout is then
        each slot's memory before its first step that rollout trains on, as ML-Agents'
        ``critic_memory_dict`` keeps it per agent between trajectories."""
        memory = self.critic.memory
        assert memory is not None and rollout.episode_ends is not None
        length, n = rollout.valid.shape
        carried = self._critic_memories.get(rollout.group)
        if carried is None or len(carried) != n:
            carried = np.zeros((n, memory.memory_size), dtype=np.float32)
        nexts = rollout.next_observations
        assert nexts is not None, "a recurrent critic needs the rollout's final observations"
        ends = rollout.episode_ends
        device = self.device
        with self.model_lock, torch.no_grad():
            flat = [entry.reshape(length * n, *entry.shape[2:]) for entry in rollout.observations]
            hidden = torch.cat(
                [
                    self.critic.encode(self.tensors([entry[i : i + VALUE_CHUNK] for entry in flat]))
                    for i in range(0, length * n, VALUE_CHUNK)
                ]
            ).reshape(length, n, -1)
            keep = torch.as_tensor(~ends, device=device).unsqueeze(2).to(torch.float32)
            advance = torch.as_tensor(rollout.valid, device=device).unsqueeze(2)
            state = torch.as_tensor(carried, device=device)
            before = torch.empty((length, n, memory.memory_size), device=device)
            after = torch.empty_like(before)
            outputs = torch.empty((length, n, memory.output_size), device=device)
            for t in range(length):
                before[t] = state
                outputs[t], after[t] = memory.step(hidden[t], state)
                state = torch.where(advance[t], after[t], state) * keep[t]
            heads = self.critic.value(outputs.reshape(length * n, -1)).reshape(length, n, -1)
            last_out, _ = memory.step(self.critic.encode(self.tensors(last_observations)), state)
            last_heads = self.critic.value(last_out).reshape(n, -1)
            final_heads = torch.zeros_like(heads)
            times, slots = np.nonzero(ends)
            if len(times):
                finals = self.tensors([entry[times, slots] for entry in nexts])
                final_out, _ = memory.step(self.critic.encode(finals), after[times, slots])
                final_heads[times, slots] = self.critic.value(final_out).reshape(len(times), -1)
        self._critic_memories[rollout.group] = state.cpu().numpy()
        rollout.critic_memories = before.cpu().numpy()
        assign_values(
            rollout, heads.cpu().numpy(), last_heads.cpu().numpy(), final_heads.cpu().numpy()
        )

    def _signal_rewards(
        self, rollouts: list[Rollout], flat: _SignalRows | None
    ) -> list[np.ndarray]:
        """Every signal's scaled rewards per rollout, ``(T, n, signals)`` (0 on invalid steps).

        The intrinsic signals first absorb the valid steps of ``flat`` (the rollouts' rows;
        ``None`` without intrinsic signals) into their normalization, then evaluate them in
        chunks.
        """
        extrinsic = self.signals[0]
        rewards = [
            np.zeros((*rollout.valid.shape, len(self.signals)), dtype=np.float32)
            for rollout in rollouts
        ]
        for rollout, out in zip(rollouts, rewards, strict=True):
            batch = SignalBatch([], None, None, None, torch.as_tensor(rollout.rewards))
            out[..., 0] = extrinsic.evaluate(batch).reshape(rollout.valid.shape)
            out[..., 0] *= np.float32(extrinsic.strength)
            out[~rollout.valid] = 0.0
        if flat is None:
            return rewards
        valid = np.concatenate([rollout.valid.reshape(-1) for rollout in rollouts])
        valid_rows = np.flatnonzero(valid)
        rows = torch.as_tensor(valid_rows, dtype=torch.long, device=self.device)
        whole = flat.batch(self, rows)
        with self.model_lock:
            for signal in self.intrinsic:
                signal.absorb(whole)
        evaluated = np.zeros((len(valid), len(self.intrinsic)), dtype=np.float32)
        for start in range(0, len(valid_rows), VALUE_CHUNK):
            batch = flat.batch(self, rows[start : start + VALUE_CHUNK])
            for j, signal in enumerate(self.intrinsic):
                scaled = signal.evaluate(batch) * np.float32(signal.strength)
                evaluated[valid_rows[start : start + VALUE_CHUNK], j] = scaled
        start = 0
        for rollout, out in zip(rollouts, rewards, strict=True):
            size = rollout.valid.size
            out[..., 1:] = evaluated[start : start + size].reshape(*rollout.valid.shape, -1)
            start += size
        return rewards

    def _estimates(self, rollout: Rollout, rewards: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Advantages ``(T, n)`` (the mean over the signals) and returns (``(T, n)``, or
        ``(T, n, signals)`` with several signals), each signal with its own ``gamma``."""
        lambd = self.hyper.lambd
        if len(self.signals) == 1:
            return generalized_advantages(
                rewards[..., 0],
                rollout.values,
                rollout.next_values,
                rollout.terminated,
                rollout.chain_breaks,
                self.signals[0].gamma,
                lambd,
            )
        assert rollout.head_values is not None and rollout.head_next_values is not None
        never = np.zeros_like(rollout.terminated)
        advantages, returns = [], []
        for j, signal in enumerate(self.signals):
            advantage, returned = generalized_advantages(
                rewards[..., j],
                rollout.head_values[..., j],
                rollout.head_next_values[..., j],
                never if signal.ignore_done else rollout.terminated,
                rollout.chain_breaks,
                signal.gamma,
                lambd,
            )
            advantages.append(advantage)
            returns.append(returned)
        mean = np.asarray(np.mean(advantages, axis=0), dtype=np.float32)
        return mean, np.stack(returns, axis=-1)

    def _record_signal_rewards(self, rollouts: list[Rollout], rewards: list[np.ndarray]) -> None:
        """Add each finished episode's sum of every signal's scaled rewards to the statistics
        (``Policy/<Name> Reward``, as ML-Agents)."""
        for rollout, scaled in zip(rollouts, rewards, strict=True):
            sums = self._episode_sums.get(rollout.group)
            if sums is None or sums.shape != scaled.shape[1:]:
                sums = np.zeros(scaled.shape[1:], dtype=np.float64)
            ends = rollout.episode_ends
            for t in range(len(scaled)):
                sums += scaled[t]
                if ends is not None and ends[t].any():
                    for slot in np.flatnonzero(ends[t] & rollout.valid[t]):
                        for j, signal in enumerate(self.signals):
                            self.context.stats.add(
                                f"Policy/{signal.name} Reward", float(sums[slot, j])
                            )
                    sums[ends[t]] = 0.0
            self._episode_sums[rollout.group] = sums

    def _update(self, rollouts: list[Rollout], step: int) -> None:
        hyper = self.hyper
        signal_rows = (
            _SignalRows(rollouts, self.device, with_next=self._needs_next)
            if self.intrinsic
            else None
        )
        with hierarchical_timer("compute_advantages"):
            rewards = self._signal_rewards(rollouts, signal_rows)
            estimates = [
                self._estimates(rollout, scaled)
                for rollout, scaled in zip(rollouts, rewards, strict=True)
            ]
        self._record_signal_rewards(rollouts, rewards)
        data = self._update_data(rollouts, estimates)
        signal_losses: dict[str, list[float]] = {}
        if self.stacked_bodies is not None:
            # The normalizer is fixed during the update: encode every row once.
            with self.model_lock, torch.no_grad():
                data.features = self.policy.encoder(self.tensors(data.observations))[0]
        learning_rate = self.learning_rate.value(step)
        epsilon = self.epsilon.value(step)
        beta = self.beta.value(step)
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate
        if data.sequences is not None:  # recurrent: minibatches of whole sequences
            size = len(data.sequences)
            batch_size = min(max(hyper.batch_size // self.sequence_length, 1), size)
        else:
            size = data.valid_rows.numel()
            batch_size = min(hyper.batch_size, size)
        num_batches = max(size // batch_size, 1)
        totals = torch.zeros(3)
        for _ in range(hyper.num_epoch):
            order = torch.as_tensor(self.rng.permutation(size), device=self.device)
            if data.sequences is None:
                order = data.valid_rows[order]
            for b in range(num_batches):
                picked = order[b * batch_size : (b + 1) * batch_size]
                minibatch = data.minibatch(picked)
                rows = minibatch.rows
                totals += self._minibatch_step(minibatch, epsilon, beta)
                if signal_rows is not None:
                    batch = signal_rows.batch(self, rows)
                    for signal in self.intrinsic:
                        with self.model_lock:
                            losses = signal.update(batch)
                        for key, value in losses.items():
                            signal_losses.setdefault(key, []).append(value)
        means = (totals / (hyper.num_epoch * num_batches)).tolist()
        self.update_count += 1
        stats = {
            "Losses/Policy Loss": means[0],
            "Losses/Value Loss": means[1],
            "Policy/Entropy": means[2],
            "Policy/Learning Rate": learning_rate,
            "Policy/Epsilon": epsilon,
            "Policy/Beta": beta,
        }
        for signal, value in zip(self.signals, data.mean_values, strict=True):
            stats[f"Policy/{signal.name} Value Estimate"] = value
        stats.update({key: float(np.mean(values)) for key, values in signal_losses.items()})
        if self.cloning is not None:
            stats.update(self.cloning.update(step))
        self.context.stats.add_many(stats)

    def _update_data(
        self, rollouts: list[Rollout], estimates: list[tuple[np.ndarray, np.ndarray]]
    ) -> _UpdateData:
        """The update's flat tensors (a subclass may keep more of the rollouts)."""
        return _UpdateData(rollouts, estimates, self.device, self.sequence_length)

    def _evaluate(self, batch: _Minibatch) -> tuple[ActionDistribution, torch.Tensor]:
        """The policy's distribution and the critic's values on ``batch``, with gradients (one
        stacked pass over both bodies when the batch carries encoded features)."""
        if batch.features is not None:
            assert self.stacked_bodies is not None
            hidden = self.stacked_bodies(batch.features)
            return self.policy.distribution(hidden[0], batch.masks), self.critic.value(hidden[1])
        observations = self.tensors(batch.observations)
        if batch.memories is not None:  # sequences of a recurrent policy and critic
            if self.hyper.shared_critic:
                hidden = self.policy.sequence_features(observations, batch.memories)
                return self.policy.distribution(hidden, batch.masks), self.critic.value(hidden)
            assert batch.critic_memories is not None
            return (
                self.policy.sequences(observations, batch.masks, batch.memories),
                self.critic.sequences(observations, batch.critic_memories),
            )
        if self.hyper.shared_critic:  # one pass through the shared body
            hidden = self.policy.body(*self.policy.encoder(observations))
            return self.policy.distribution(hidden, batch.masks), self.critic.value(hidden)
        return self.policy(observations, batch.masks), self.critic(observations)

    def _minibatch_step(self, batch: _Minibatch, epsilon: float, beta: float) -> torch.Tensor:
        advantages = batch.advantages
        with self.model_lock:
            dist, values = self._evaluate(batch)
            log_probs = dist.log_probs(batch.continuous, batch.discrete)
            entropies = dist.entropy()
            if batch.counted is not None:  # sequences: only real, valid steps count
                log_probs = log_probs[batch.counted]
                entropies = entropies[batch.counted]
                values = values[batch.counted]
            entropy = entropies.mean()
            policy_loss = clipped_surrogate_loss(log_probs, batch.log_probs, advantages, epsilon)
            value_loss = returns_value_loss(values, batch.returns)
            loss = policy_loss + VALUE_LOSS_COEF * value_loss - beta * entropy
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
        return torch.stack([policy_loss.abs(), value_loss, entropy]).detach().cpu()


def normalized_advantages(advantages: torch.Tensor, padding: int = 0) -> torch.Tensor:
    """``advantages`` minus their mean, over their standard deviation (plus 1e-8).

    With ``padding`` (a recurrent policy's padded sequence positions), the mean and deviation
    are taken as ML-Agents takes them: over the update buffer with its padding, whose advantages
    are 0 (``OnPolicyTrainer._update_policy`` normalizes ``BufferKey.ADVANTAGES`` after
    ``resequence_and_append`` padded each trajectory's last sequence with zeros).
    """
    if padding == 0:
        return (advantages - advantages.mean()) / (advantages.std(unbiased=False) + 1e-8)
    count = advantages.numel() + padding
    mean = advantages.sum() / count
    variance = (((advantages - mean) ** 2).sum() + padding * mean**2) / count
    return (advantages - mean) / (variance.sqrt() + 1e-8)


def clipped_surrogate_loss(
    log_probs: torch.Tensor, old_log_probs: torch.Tensor, advantages: torch.Tensor, epsilon: float
) -> torch.Tensor:
    """PPO's clipped surrogate policy loss, with one probability ratio per action dimension
    and per discrete branch (``log_probs`` ``(B, d)``, ``advantages`` ``(B,)``), as in
    ML-Agents."""
    ratio = torch.exp(log_probs - old_log_probs)
    advantages = advantages.unsqueeze(1)
    surrogate = torch.min(
        ratio * advantages, torch.clamp(ratio, 1.0 - epsilon, 1.0 + epsilon) * advantages
    )
    return -surrogate.mean()


def clipped_value_loss(
    values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, epsilon: float
) -> torch.Tensor:
    """The value loss with the change from ``old_values`` clipped to ``epsilon`` (ML-Agents'
    ``ModelUtils.trust_region_value_loss``; MA-POCA's baseline loss)."""
    clipped = old_values + torch.clamp(values - old_values, -epsilon, epsilon)
    return torch.max((returns - values).square(), (returns - clipped).square()).mean()


def returns_value_loss(values: torch.Tensor, returns: torch.Tensor) -> torch.Tensor:
    """The mean squared error of ``values`` against ``returns`` (over every head): the value
    loss ML-Agents 1.1.0 trains its critics with.

    ML-Agents calls the clipped loss (:func:`clipped_value_loss`) with the update buffer's
    value estimates as the old values, but ``RewardSignalUtil.value_estimates_key`` gives the
    same buffer key as ``returns_key`` (``(RewardSignalKeyPrefix.RETURNS, name)``), so the
    returns overwrite the estimates when a trajectory is processed and the clipping is around
    the returns themselves: ``max((r - v)^2, clamp(v - r, -eps, eps)^2)`` is ``(r - v)^2``.
    (ML-Agents issue 6281 asks about the shared key.) With the clipping the critic moved at
    most about ``epsilon`` per update: on 3DBall its value estimate was 2.8 where
    ``mlagents-learn``'s was 9.6, after the same 16 updates.
    """
    return (returns - values).square().mean()


@dataclass
class _Minibatch:
    """Tensors of one minibatch: observations in the environment's raw format, or their
    encoded ``features`` (then ``observations`` is empty).

    For a recurrent policy the minibatch is whole sequences: observations, actions and masks
    hold every position of them in sequence order, ``memories`` / ``critic_memories`` the
    memories before each sequence, ``counted`` the positions the losses count (real, valid
    steps), and the other fields only those positions' values. ``rows`` are the update data's
    rows of the counted steps.
    """

    rows: torch.Tensor
    observations: list[torch.Tensor]
    features: torch.Tensor | None
    continuous: torch.Tensor | None
    discrete: torch.Tensor | None
    masks: torch.Tensor | None
    log_probs: torch.Tensor
    values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    memories: torch.Tensor | None = None
    critic_memories: torch.Tensor | None = None
    counted: torch.Tensor | None = None


class _UpdateData:
    """Rollouts as flat ``(sum of time * slots, ...)`` tensors on the device, advantages normalized.

    Converted once per update; minibatches are then cheap index operations. ``features``, when
    set, are the encoded observations, which minibatches then carry instead. Rollouts of a
    recurrent policy (``sequence_length`` > 1 or recorded memories) are also cut into
    ``sequences``, which minibatches are then drawn from.
    """

    features: torch.Tensor | None = None

    def __init__(
        self,
        rollouts: list[Rollout],
        estimates: list[tuple[np.ndarray, np.ndarray]],
        device: torch.device,
        sequence_length: int = 1,
    ) -> None:
        def flat(arrays: list[np.ndarray]) -> torch.Tensor:
            joined = np.concatenate([a.reshape(-1, *a.shape[2:]) for a in arrays])
            return torch.as_tensor(joined, device=device)

        def optional(arrays: list[np.ndarray | None]) -> torch.Tensor | None:
            present = next((a for a in arrays if a is not None), None)
            if present is None:
                return None
            # a group that never saw an action mask: everything allowed
            return flat(
                [
                    a if a is not None else np.ones((*r.valid.shape, *present.shape[2:]), bool)
                    for a, r in zip(arrays, rollouts, strict=True)
                ]
            )

        valid = np.concatenate([rollout.valid.reshape(-1) for rollout in rollouts])
        self.valid_rows = torch.as_tensor(np.flatnonzero(valid), dtype=torch.long, device=device)
        self.observations = [
            flat([rollout.observations[i] for rollout in rollouts])
            for i in range(len(rollouts[0].observations))
        ]
        self.continuous = optional([rollout.continuous for rollout in rollouts])
        self.discrete = optional([rollout.discrete for rollout in rollouts])
        masks = optional([rollout.masks for rollout in rollouts])
        self.masks = None if masks is None else masks.to(torch.float32)
        self.log_probs = flat([rollout.log_probs for rollout in rollouts])
        self.values = flat(
            [
                rollout.values if rollout.head_values is None else rollout.head_values
                for rollout in rollouts
            ]
        )
        self.returns = flat([returns for _, returns in estimates])
        self.advantages = flat([advantages for advantages, _ in estimates])
        self.sequences: Sequences | None = None
        self.memories: torch.Tensor | None = None
        self.critic_memories: torch.Tensor | None = None
        if rollouts[0].memories is not None:
            offsets = np.cumsum([0] + [rollout.valid.size for rollout in rollouts])
            self.sequences = join_sequences(
                [
                    cut_sequences(rollout.chain_breaks, sequence_length, int(offset), rollout.valid)
                    for rollout, offset in zip(rollouts, offsets, strict=False)
                ]
            )
            self.memories = flat([r.memories for r in rollouts if r.memories is not None])
            self.critic_memories = flat(
                [r.critic_memories for r in rollouts if r.critic_memories is not None]
            )
            self.sequence_rows = torch.as_tensor(self.sequences.rows, device=device)
            counted = self.sequences.real & valid[self.sequences.rows]
            self.sequence_counted = torch.as_tensor(counted, device=device)
        padding = 0 if self.sequences is None else int((~self.sequences.real).sum())
        self.advantages[self.valid_rows] = normalized_advantages(
            self.advantages[self.valid_rows], padding
        )
        valid_values = self.values[self.valid_rows]
        #: The mean value estimate of every head (one entry with a single head).
        self.mean_values: list[float] = (
            valid_values.mean(dim=0).tolist()
            if valid_values.dim() > 1
            else [float(valid_values.mean())]
        )

    def minibatch(self, picked: torch.Tensor) -> _Minibatch:
        """The rows ``picked`` of every field, or with sequences, the sequences ``picked``."""
        if self.sequences is None:
            features = None if self.features is None else self.features[picked]
            return self._select(picked, picked, features=features)
        assert self.memories is not None and self.critic_memories is not None
        positions = self.sequence_rows[picked]
        every = positions.reshape(-1)
        counted = torch.nonzero(self.sequence_counted[picked].reshape(-1)).squeeze(1)
        return self._select(
            every,
            every[counted],
            memories=self.memories[positions[:, 0]],
            critic_memories=self.critic_memories[positions[:, 0]],
            counted=counted,
        )

    def _select(
        self,
        every: torch.Tensor,
        rows: torch.Tensor,
        features: torch.Tensor | None = None,
        **sequences: torch.Tensor,
    ) -> _Minibatch:
        """A minibatch with the inputs of rows ``every`` and the targets of rows ``rows``
        (the same rows without sequences); ``sequences``: the memory fields."""

        def pick(tensor: torch.Tensor | None) -> torch.Tensor | None:
            return None if tensor is None else tensor[every]

        return _Minibatch(
            rows=rows,
            observations=[entry[every] for entry in self.observations] if features is None else [],
            features=features,
            continuous=pick(self.continuous),
            discrete=pick(self.discrete),
            masks=pick(self.masks),
            log_probs=self.log_probs[rows],
            values=self.values[rows],
            advantages=self.advantages[rows],
            returns=self.returns[rows],
            **sequences,
        )


class _SignalRows:
    """The rollouts' steps flattened like :class:`_UpdateData`'s rows, for reward signals."""

    def __init__(self, rollouts: list[Rollout], device: torch.device, *, with_next: bool) -> None:
        def flat(arrays: list[np.ndarray]) -> torch.Tensor:
            return torch.as_tensor(
                np.concatenate([a.reshape(-1, *a.shape[2:]) for a in arrays]), device=device
            )

        count = len(rollouts[0].observations)
        self.observations = [flat([r.observations[i] for r in rollouts]) for i in range(count)]
        self.next_observations: list[torch.Tensor] | None = None
        if with_next:
            nexts = [r.next_observations for r in rollouts]
            if any(entry is None for entry in nexts):
                raise RuntimeError("a reward signal needs next observations the rollout lacks.")
            self.next_observations = [
                flat([entry[i] for entry in nexts if entry is not None]) for i in range(count)
            ]
        continuous = [r.continuous for r in rollouts if r.continuous is not None]
        discrete = [r.discrete for r in rollouts if r.discrete is not None]
        self.continuous = flat(continuous) if continuous else None
        self.discrete = flat(discrete) if discrete else None
        self.rewards = flat([r.rewards for r in rollouts])
        self.dones = flat(
            [
                r.episode_ends if r.episode_ends is not None else np.zeros_like(r.valid)
                for r in rollouts
            ]
        ).to(torch.float32)

    def batch(self, trainer: PPOTrainer, rows: torch.Tensor) -> SignalBatch:
        """The steps ``rows`` in network format."""
        nexts = self.next_observations
        return SignalBatch(
            observations=trainer.tensors([entry[rows] for entry in self.observations]),
            next_observations=(
                None if nexts is None else trainer.tensors([entry[rows] for entry in nexts])
            ),
            continuous=None if self.continuous is None else self.continuous[rows],
            discrete=None if self.discrete is None else self.discrete[rows],
            rewards=self.rewards[rows],
            dones=self.dones[rows],
        )


def _pick(array: np.ndarray | None, rows: slice) -> np.ndarray | None:
    return None if array is None else array[rows]
