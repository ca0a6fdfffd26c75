"""Soft Actor-Critic with twin Q networks, target networks and automatic entropy tuning.

Continuous actions: a tanh-squashed Gaussian policy; ``Q(s, a)`` critics; the entropy target is
``-continuous_size``. Discrete actions (one or more branches): a categorical policy per branch;
critics output one value per choice of every branch; expectations over the policy replace
sampling; one entropy coefficient per branch with target ``0.2 * log(branch_size)`` (ML-Agents'
scale). Action masks are stored with each transition and applied to both the current and the
next state's policy.

Hybrid actions (continuous and discrete at once) combine both in one code path, of which the
two kinds above are the special cases. Facts followed from ML-Agents' SAC
(``TorchSACOptimizer``): the Q networks take the continuous action as input and output one
value per choice of every discrete branch; one entropy coefficient for the continuous part
(target ``-1.0 * continuous_size``) and one per branch (target ``0.2 * log(branch_size)``), all
starting at ``init_entcoef`` and trained by one Adam optimizer; the Q loss regresses the values
of the taken discrete choices at the replayed continuous action; the policy loss sums the
discrete part ``sum_b sum_i p_bi * (alpha_b * log p_bi - Q_bi)`` and the continuous part
``alpha_c * log pi(a_c) - sum_b sum_i p_bi * Q_bi``, with ``Q`` at a reparameterized continuous
sample ``a_c``; the entropy loss sums ``-log alpha_c * (log pi(a_c) + target_c)`` and per branch
``-log alpha_b * (sum_i p_bi * log p_bi + target_b)`` (ML-Agents averages the branches' terms;
each coefficient has its own Adam moments, so this only rescales gradients that Adam normalizes);
both ``Policy/Continuous Entropy Coeff``
and ``Policy/Discrete Entropy Coeff`` (the branches' mean) are reported. The soft value of a
state is the mean over branches of ``sum_i p_bi * (Q_bi - alpha_b * log p_bi)`` minus
``alpha_c * log pi(a_c)`` at a sampled ``a_c``. Differences: as for discrete actions alone,
``min(Q1, Q2)`` is taken per choice (ML-Agents takes it after the expectation over the
branches) and each branch's taken-choice value regresses to the target on its own (ML-Agents
regresses their mean); the policy reads ``min(Q1, Q2)`` (ML-Agents: ``Q1``); and the soft value
subtracts the continuous entropy term (ML-Agents' hybrid value backup adds
``alpha_c * log pi(a_c)``, the opposite sign of its continuous-only backup and of the soft
value's definition). The replay holds hybrid actions as ``action`` (continuous) and
``discrete_action``.

Update schedule (ML-Agents semantics): once ``buffer_init_steps`` agent steps are collected and
the buffer holds a batch, ``update_count`` follows ``(step - buffer_init_steps) /
steps_per_update``. One update: critic regression to
``r + gamma * (1 - terminated) * soft V(s')`` from the target critics, policy step, entropy
coefficient step, Polyak averaging of the targets with ``tau``. As in ML-Agents'
``TorchSACOptimizer.update``, every loss is computed at the parameters before the update (the
policy reads the critics before their step), each reaches only its own parameters (the critics'
pass at the policy's actions passes gradients to the actions alone), so one backward pass serves
all three optimizers. Truncated episodes bootstrap from their final observation.

Speed (not semantics): with vector observations only, no memory and no goal conditioning, each
update encodes each side's observations once for every network (the encoders have no
parameters), and Q1 and Q2 (and their targets) run as one batched product per layer (their
parameters stacked in one buffer, :class:`_TwinQ`); the targets follow the critics with one
whole-buffer Polyak step.

Reward signals (:mod:`trainers.reward_signals`), as in ML-Agents' SAC: both Q networks and
their targets have one output stream per signal (extrinsic first); every update evaluates each
signal's rewards on the sampled replay batch (times its ``strength``); each stream regresses to
``r_j + gamma_j * (1 - done_j) * soft V_j(s')`` with the signal's own ``gamma``, where
``done_j`` is 0 for signals that ignore episode ends (curiosity, RND); the Q losses are the
means over the streams and the policy maximizes the mean over the streams of ``min(Q1, Q2)``.
The signals' networks train on batches sampled for them, ``reward_signal_steps_per_update``
setting their pace as ``steps_per_update`` does the policy's, after the policy's steps. The
signals' episode rewards are evaluated as experience arrives (``Policy/<Name> Reward``); the
mean of ``min(Q1, Q2)`` at the policy's actions over each update's batch is reported per stream
(``Policy/<Name> Value``, ML-Agents' SAC tag). With the extrinsic signal alone, this is the
algorithm above.

With ``network_settings.memory`` (a recurrent policy; facts from ML-Agents' SAC: its optimizer's
``update``, its trainer and ``buffer.sample_mini_batch``): the policy and both Q networks (and
their targets) have an LSTM after the body. Acting carries every slot's policy memory from step
to step (:class:`~trainers.common.networks.acting.ActingPolicy`, shared with PPO, POCA and the ghost
trainer), reset to zeros where its episode ended, left as it was before a step whose action the
environment ignored (after an ended episode: zeros), and cleared by
:meth:`SACTrainer.interrupt_episodes`. The replay holds sequences of
``sequence_length`` consecutive steps of one agent (:class:`SequenceReplayBuffer`), each with
the policy's memory before its first step, padded at the end where an episode ended sooner; an
update samples ``batch_size // sequence_length`` of them. The policy reads each sampled sequence
from its recorded memory, and the successors' sequence from its memory after the first step
(as ML-Agents' target network starts from the memory recorded at the second step), so the target
of step ``t`` uses the successor's soft value computed along the same sequence. The Q networks,
current and target, start every sequence from zero memories, as ML-Agents' Q networks do (our
SAC has no separate value network: its targets come from the twin target Q networks, which
replace ML-Agents' target value network there). Padded steps are left out of every loss and
statistic. The reward signals are memoryless and read the sequences' real steps.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn
from torch.nn import functional

from trainers.assembly import PolicyTrainer
from trainers.common.buffers.experience import ReplayBuffer, SequenceReplayBuffer
from trainers.common.checkpoints.files import atomic_write
from trainers.common.networks.distributions import ActionDistribution
from trainers.common.networks.models import (
    ObservationEncoder,
    PolicyNetwork,
    QNetwork,
    StackedBodies,
    body_stacks,
    make_adam,
)
from trainers.common.optimization.parameter_buffer import ParameterBuffer, polyak_update
from trainers.common.optimization.schedules import Schedule
from trainers.common.trainer import CheckpointMismatchError, TrainerContext
from trainers.contract import BehaviorStep, PolicyDecision
from trainers.reward_signals import (
    SignalBatch,
    signal_modules,
    signal_optimizers,
)
from trainers.settings import SACHyperparameters

__all__ = ["SACTrainer"]

logger = logging.getLogger("trainers")

DISCRETE_TARGET_ENTROPY_SCALE = 0.2
CONTINUOUS_TARGET_ENTROPY_SCALE = 1.0
MIN_LEARNING_RATE = 1e-10
REPLAY_FILE = "replay_buffer.pt"
Q_NETWORKS = ("q1", "q2", "q1_target", "q2_target")
# The keys of a sampled sequence that are not transition rows.
SEQUENCE_KEYS = ("real", "memory")
# Replay buffers saved before the reward signals held the extrinsic reward times its strength.
LEGACY_REWARD_KEY = "reward"
# The update statistics before the streams' values: Q1, Q2 and policy losses, entropy, the
# continuous and the (mean) discrete entropy coefficients.
STAT_COLUMNS = 6


def _branch_q_loss(
    q_per_branch: tuple[torch.Tensor, ...], actions: torch.Tensor, target: torch.Tensor
) -> torch.Tensor:
    """Mean over discrete branches of the MSE (over rows and streams) between the taken
    choice's Q and ``target`` ``(n, streams)``; each branch's Q is ``(n, streams, size)``."""
    streams = target.shape[1]
    return torch.stack(
        [
            functional.mse_loss(
                q.gather(2, actions[:, None, b : b + 1].expand(-1, streams, 1)).squeeze(2), target
            )
            for b, q in enumerate(q_per_branch)
        ]
    ).mean()


def _flat_rows(array: np.ndarray) -> np.ndarray:
    """A ``(S, L, ...)`` array of sequences as ``(S * L, ...)`` rows in sequence order."""
    return array.reshape(-1, *array.shape[2:])


class _Inputs(Protocol):
    """What an update evaluates the networks on: each sampled step's observations (or, with
    ``following``, its successor's), one output row per step the losses count."""

    def policy(
        self, policy: PolicyNetwork, mask: torch.Tensor | None = None, *, following: bool = False
    ) -> ActionDistribution:
        """The policy's distribution at the steps (``mask``: per counted step)."""
        ...

    def q(
        self, network: QNetwork, actions: torch.Tensor | None = None, *, following: bool = False
    ) -> torch.Tensor:
        """``network``'s Q values at the steps (``actions``: continuous, per counted step)."""
        ...

    def encoded(self, *, following: bool = False) -> torch.Tensor | None:
        """The steps' observations encoded once for every network (``None`` when each
        network encodes them itself)."""
        ...


class _FlatInputs:
    """Independent transitions: the networks read each row on its own.

    Args:
        encoder: a parameter-free encoder that every network's encoding equals (vector
            observations only, one normalizer): each side is then encoded once, and the
            policy reads that encoding; ``None``: each network encodes on its own.
    """

    def __init__(
        self,
        observations: list[torch.Tensor],
        next_observations: list[torch.Tensor],
        encoder: ObservationEncoder | None = None,
    ) -> None:
        self.observations = observations
        self.next_observations = next_observations
        self.encoder = encoder
        self._encoded: dict[bool, torch.Tensor] = {}

    def encoded(self, *, following: bool = False) -> torch.Tensor | None:
        if self.encoder is None:
            return None
        if following not in self._encoded:
            side = self.next_observations if following else self.observations
            self._encoded[following] = self.encoder(side)[0]
        return self._encoded[following]

    def policy(
        self, policy: PolicyNetwork, mask: torch.Tensor | None = None, *, following: bool = False
    ) -> ActionDistribution:
        features = self.encoded(following=following)
        if features is not None:
            return policy.distribution(policy.body(features, None), mask)
        return policy(self.next_observations if following else self.observations, mask)

    def q(
        self, network: QNetwork, actions: torch.Tensor | None = None, *, following: bool = False
    ) -> torch.Tensor:
        return network(self.next_observations if following else self.observations, actions)


class _SequenceInputs:
    """Sampled sequences (SAC with memory; see the module docstring): the networks read whole
    sequences, rows in sequence order, and the outputs keep the real (unpadded) rows.

    Args:
        observations / next_observations: every sequence position's, ``S * L`` rows.
        real: ``(S * L,)`` bool, false at padded positions.
        memories: ``(S, memory_size)``, the policy's memory before each sequence.
        q_memory_size: the Q networks' memory size (they start each sequence from zeros).
    """

    def __init__(
        self,
        observations: list[torch.Tensor],
        next_observations: list[torch.Tensor],
        real: torch.Tensor,
        memories: torch.Tensor,
        q_memory_size: int,
    ) -> None:
        self.observations = observations
        self.next_observations = next_observations
        self.rows = int(real.shape[0])
        self.index = torch.nonzero(real).squeeze(1)
        self.memories = memories
        self.q_memories = memories.new_zeros((len(memories), q_memory_size))

    def policy(
        self, policy: PolicyNetwork, mask: torch.Tensor | None = None, *, following: bool = False
    ) -> ActionDistribution:
        if following:
            features = policy.sequence_features(
                self.next_observations, self._memories_after_first_step(policy)
            )
        else:
            features = policy.sequence_features(self.observations, self.memories)
        return policy.distribution(features[self.index], mask)

    def _memories_after_first_step(self, policy: PolicyNetwork) -> torch.Tensor:
        """The policy's memory after each sequence's first step: the one it held before the
        first step's successor (ML-Agents starts the successors' sequence there)."""
        assert policy.memory is not None
        sequences = len(self.memories)
        first = [obs.reshape(sequences, -1, *obs.shape[1:])[:, 0] for obs in self.observations]
        _, after = policy.memory.step(policy.body(*policy.encoder(first)), self.memories)
        return after

    def q(
        self, network: QNetwork, actions: torch.Tensor | None = None, *, following: bool = False
    ) -> torch.Tensor:
        observations = self.next_observations if following else self.observations
        rows = None
        if actions is not None:  # padded positions get zeros: they come last and are dropped
            rows = actions.new_zeros((self.rows, *actions.shape[1:]))
            rows = rows.index_put((self.index,), actions)
        return network.sequences(observations, rows, self.q_memories)[self.index]

    def encoded(self, *, following: bool = False) -> torch.Tensor | None:
        return None  # the networks' memories read whole sequences: each encodes on its own


def _twin_stacks(first: QNetwork, second: QNetwork) -> list[tuple[nn.Parameter, ...]]:
    """The parameter groups of :class:`_TwinQ`'s stacked pass over ``first`` and ``second``;
    none where it does not apply (memory, encoders with parameters, goal conditioning)."""
    if first.memory is not None or any(True for _ in first.encoder.parameters()):
        return []
    try:
        return body_stacks([first.body, second.body])
    except ValueError:
        return []


class _TwinQ:
    """A pair of Q networks (Q1 and Q2, or their targets) evaluated together.

    With stacked bodies (the networks' parameters in ``buffer`` with :func:`_twin_stacks`'
    ``stacks`` groups) and inputs encoded once (:meth:`_Inputs.encoded`), both bodies run as one
    batched product per layer; otherwise each network runs on its own. Both ways compute the
    same values.
    """

    def __init__(
        self, first: QNetwork, second: QNetwork, buffer: ParameterBuffer, stacks: int
    ) -> None:
        self.first = first
        self.second = second
        leaves = [buffer.stacked(i) for i in range(stacks)]
        self.stacked = StackedBodies(leaves) if stacks else None
        #: Every tensor the passes read as a parameter (the members and the stacked leaves).
        self.leaves: list[torch.Tensor] = [*first.parameters(), *second.parameters(), *leaves]

    def __call__(
        self,
        inputs: _Inputs,
        actions: torch.Tensor | None = None,
        *,
        following: bool = False,
        frozen: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Both networks' Q values at the steps (as :meth:`_Inputs.q`); with ``frozen``,
        gradients reach the inputs (``actions``) but not the networks' parameters."""
        if not frozen:
            return self._evaluate(inputs, actions, following)
        for leaf in self.leaves:
            leaf.requires_grad_(False)
        try:
            return self._evaluate(inputs, actions, following)
        finally:
            for leaf in self.leaves:
                leaf.requires_grad_(True)

    def _evaluate(
        self, inputs: _Inputs, actions: torch.Tensor | None, following: bool
    ) -> tuple[torch.Tensor, torch.Tensor]:
        features = inputs.encoded(following=following) if self.stacked is not None else None
        if features is None or self.stacked is None:
            return (
                inputs.q(self.first, actions, following=following),
                inputs.q(self.second, actions, following=following),
            )
        if self.first.continuous:
            assert actions is not None
            features = torch.cat([features, actions], dim=1)
        hidden = self.stacked(features)
        return self.first.values(hidden[0]), self.second.values(hidden[1])


class SACTrainer(PolicyTrainer):
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
        self.continuous = actions.has_continuous
        net = self.settings.network_settings
        layout = context.observation_layout
        device = self.device
        self.assemble_policy(squash=True)
        streams = len(self.signals)
        self.q1, self.q2, self.q1_target, self.q2_target = (
            QNetwork(layout, actions, net, self.normalizer, streams=streams).to(device)
            for _ in range(4)
        )
        self.q1_target.load_state_dict(self.q1.state_dict())
        self.q2_target.load_state_dict(self.q2.state_dict())
        for target in (self.q1_target, self.q2_target):
            target.requires_grad_(False)
        branches = list(actions.discrete_branches)
        # The entropy coefficients: the continuous one first (when there are continuous
        # actions), then one per discrete branch; each with its target entropy.
        entropy_targets: list[float] = []
        if self.continuous:
            entropy_targets.append(-CONTINUOUS_TARGET_ENTROPY_SCALE * actions.continuous_size)
        entropy_targets += [DISCRETE_TARGET_ENTROPY_SCALE * math.log(b) for b in branches]
        self.log_alpha = nn.Parameter(
            torch.full((len(entropy_targets),), math.log(hyper.init_entcoef), device=device)
        )
        self.target_entropy = torch.tensor(entropy_targets, dtype=torch.float32, device=device)
        #: The discrete branches' sizes (empty without discrete actions).
        self.branch_sizes = branches
        #: Index in ``log_alpha`` of the first discrete branch's coefficient.
        self.discrete_alpha = 1 if self.continuous else 0
        #: The replay key of the discrete actions (``action`` holds the continuous ones of
        #: hybrid actions).
        self.discrete_key = "discrete_action" if self.continuous else "action"
        lr = hyper.learning_rate
        self.policy_optimizer = make_adam(list(self.policy.parameters()), lr)
        self.q_parameters = [*self.q1.parameters(), *self.q2.parameters()]
        stacks = _twin_stacks(self.q1, self.q2)
        self.q_optimizer = make_adam(self.q_parameters, lr, stacks=stacks)
        #: The target critics' parameters, laid out as the critics' (one Polyak step for all).
        self.target_buffer = ParameterBuffer(
            [*self.q1_target.parameters(), *self.q2_target.parameters()],
            _twin_stacks(self.q1_target, self.q2_target),
        )
        if not self.target_buffer.same_layout(self.q_optimizer.buffer):
            raise RuntimeError("the target critics are not laid out as the critics")
        self.critics = _TwinQ(self.q1, self.q2, self.q_optimizer.buffer, len(stacks))
        self.target_critics = _TwinQ(
            self.q1_target, self.q2_target, self.target_buffer, len(stacks)
        )
        #: The encoder every network's encoding equals when the critics run stacked (their
        #: encoders have no parameters), so that each update encodes each side once.
        self.shared_encoder = self.q1.encoder if stacks else None
        self.alpha_optimizer = make_adam([self.log_alpha], lr)
        #: Behavioral cloning after every round of updates (``None`` without it).
        self.assemble_cloning(learning_rate=lr, batch_size=hyper.batch_size)
        self.learning_rate = Schedule(
            hyper.learning_rate_schedule, lr, MIN_LEARNING_RATE, self.settings.max_steps
        )
        #: Per stream: the discount, and 1 where episode ends stop the bootstrap (0 for
        #: signals that ignore them).
        self.gammas = torch.tensor([s.gamma for s in self.signals], device=device)
        self.use_dones = torch.tensor(
            [0.0 if s.ignore_done else 1.0 for s in self.signals], device=device
        )
        self.signal_update_count = 0
        #: Per slot group: each slot's scaled reward of every intrinsic signal this episode.
        self._episode_sums: dict[int, np.ndarray] = {}
        self.deterministic = net.deterministic
        #: Whether the networks are recurrent (``network_settings.memory``).
        self.recurrent = net.memory is not None
        self.replay: ReplayBuffer | SequenceReplayBuffer
        if net.memory is not None:
            self.replay = SequenceReplayBuffer(hyper.buffer_size, net.memory.sequence_length)
        else:
            self.replay = ReplayBuffer(hyper.buffer_size)
        # The last decision of each slot group (see BehaviorStep.group), until its outcome.
        self._pending_decisions: dict[int, dict[str, Any]] = {}
        self.num_entries = len(layout.entries)

    def modules(self) -> dict[str, nn.Module]:
        modules: dict[str, nn.Module] = {
            "policy": self.policy,
            "q1": self.q1,
            "q2": self.q2,
            "q1_target": self.q1_target,
            "q2_target": self.q2_target,
        }
        return {**modules, **signal_modules(self.intrinsic)}

    def optimizers(self) -> dict[str, torch.optim.Optimizer]:
        optimizers: dict[str, torch.optim.Optimizer] = {
            "policy_optimizer": self.policy_optimizer,
            "q_optimizer": self.q_optimizer,
            "alpha_optimizer": self.alpha_optimizer,
        }
        optimizers.update(signal_optimizers(self.intrinsic))
        if self.cloning is not None:
            optimizers["behavioral_cloning.optimizer"] = self.cloning.optimizer
        return optimizers

    def load_state_dict(self, state: dict[str, Any], *, restore_progress: bool) -> None:
        """As :meth:`Trainer.load_state_dict`; Q networks saved without the intrinsic signals'
        streams (before they were configured) get fresh ones, with a warning (the Q optimizer's
        state then no longer fits: ``--initialize-from`` loads such a checkpoint, ``--resume``
        refuses it)."""
        modules = state.get("modules")
        if self.intrinsic and isinstance(modules, dict):
            patched = dict(modules)
            stale = False
            for name in Q_NETWORKS:
                saved = modules.get(name)
                if isinstance(saved, dict) and not any(
                    key.startswith("signal_heads.") for key in saved
                ):
                    fresh = {
                        key: value
                        for key, value in getattr(self, name).state_dict().items()
                        if key.startswith("signal_heads.")
                    }
                    patched[name] = {**saved, **fresh}
                    stale = True
            if stale:
                logger.warning(
                    "%s: the checkpoint's Q networks have no streams for %s; they start fresh.",
                    self.behavior_name,
                    ", ".join(signal.key for signal in self.intrinsic),
                )
                state = {**state, "modules": patched}
        super().load_state_dict(state, restore_progress=restore_progress)

    def extra_state(self) -> dict[str, Any]:
        state: dict[str, Any] = {"log_alpha": self.log_alpha.detach().clone()}
        if self.intrinsic:
            state["signal_update_count"] = self.signal_update_count
        return state

    def load_extra_state(self, state: dict[str, Any]) -> None:
        if "log_alpha" in state:
            with torch.no_grad():
                self.log_alpha.copy_(state["log_alpha"])
        count = state.get("signal_update_count")
        if isinstance(count, int):
            self.signal_update_count = count
        else:  # saved without the signals: their updates start at the pace due now
            self.signal_update_count = self._signal_updates_target()

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
        arrays = {key: value.numpy() for key, value in contents.items()}
        if LEGACY_REWARD_KEY in arrays and "env_reward" not in arrays:
            scaled = arrays.pop(LEGACY_REWARD_KEY)
            strength = np.float32(self.signals[0].strength)
            arrays["env_reward"] = scaled / strength if strength else np.zeros_like(scaled)
        if "done" not in arrays and "terminated" in arrays:  # saved before episode ends were
            arrays["done"] = arrays["terminated"].copy()  # kept: truncations are unknown
        try:
            if isinstance(self.replay, SequenceReplayBuffer):
                self.replay.load(arrays)
            elif "real" in arrays:
                raise ValueError(
                    "the saved replay buffer holds sequences (it was saved with "
                    "network_settings.memory)"
                )
            else:
                self.replay.load(arrays)
        except ValueError as exc:
            raise CheckpointMismatchError(
                f"{path} does not fit behavior {self.behavior_name}: {exc}; restore the "
                "network_settings it was saved with, or delete the file to start with an empty "
                "replay buffer."
            ) from exc

    # -- acting ----------------------------------------------------------------------------

    def decide(self, step: BehaviorStep) -> PolicyDecision:
        actions = self.acting.act([step])
        if self.training and not self.is_done:  # past max_steps: act, record nothing
            self._pending_decisions[step.group] = {
                "observations": step.observations,
                "mask": step.action_mask,
                "continuous": actions.continuous,
                "discrete": actions.discrete,
                "memories": actions.memories,
            }
        return PolicyDecision(actions.continuous, actions.discrete)

    def interrupt_episodes(self, group: int) -> None:
        """With memory: clear the group's memories and end its open replay sequences (the
        episodes restart). Without memory there is nothing to do (truncated transitions
        bootstrap from their final observation)."""
        self.acting.clear(group)
        if isinstance(self.replay, SequenceReplayBuffer):
            with self.model_lock:
                self.replay.close(group)

    def observe(self, step: BehaviorStep) -> None:
        self.step += int(step.valid.sum())
        self.record_episodes(step)
        self.acting.observe(step)
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
        if self.branch_sizes:
            batch[self.discrete_key] = decision["discrete"][rows].astype(np.int64)
            batch["mask"] = self._mask_rows(decision["mask"], rows)
            batch["next_mask"] = self._mask_rows(step.final_action_mask, rows)
        batch["env_reward"] = step.rewards[rows].astype(np.float32)
        batch["terminated"] = step.terminated[rows].astype(np.float32)
        batch["done"] = step.done[rows].astype(np.float32)  # GAIL's done flag (use_actions)
        with self.model_lock:
            if isinstance(self.replay, SequenceReplayBuffer):
                self.replay.add(
                    step.group, rows, batch, decision["memories"][rows], step.done[rows]
                )
            else:
                self.replay.add(batch)
            if self.normalizer.normalizers:
                self.normalizer.update(
                    self.tensors([obs[rows] for obs in decision["observations"]])
                )
        self._record_signal_rewards(step, batch, rows)

    def _record_signal_rewards(
        self, step: BehaviorStep, transitions: dict[str, np.ndarray], rows: np.ndarray
    ) -> None:
        """Add ``Policy/<Name> Reward`` of the episodes that ended at ``step``: every signal's
        scaled rewards summed over the episode (as ML-Agents' SAC evaluates each trajectory as
        it arrives). The extrinsic sum is the episode's reward times the strength; the intrinsic
        signals first absorb ``transitions`` (the valid ``rows``) and then evaluate them."""
        extrinsic = self.signals[0]
        for reward, _ in step.episodes:
            self.context.stats.add(f"Policy/{extrinsic.name} Reward", reward * extrinsic.strength)
        if not self.intrinsic:
            return
        batch = self._signal_batch(transitions)
        with self.model_lock:
            for signal in self.intrinsic:
                signal.absorb(batch)
            scaled = np.stack(
                [signal.evaluate(batch) * np.float32(signal.strength) for signal in self.intrinsic],
                axis=1,
            )
        sums = self._episode_sums.get(step.group)
        if sums is None or len(sums) != len(step.valid):
            sums = np.zeros((len(step.valid), len(self.intrinsic)), dtype=np.float64)
            self._episode_sums[step.group] = sums
        sums[rows] += scaled
        ended = rows[step.done[rows]]
        for slot in ended:
            for j, signal in enumerate(self.intrinsic):
                self.context.stats.add(f"Policy/{signal.name} Reward", float(sums[slot, j]))
        sums[ended] = 0.0

    def _signal_batch(self, transitions: dict[str, np.ndarray]) -> SignalBatch:
        """Replay-format ``transitions`` (stored or sampled) as the signals read them."""
        count = self.num_entries
        continuous = discrete = None
        if self.continuous:
            continuous = torch.as_tensor(transitions["action"], device=self.device)
        if self.branch_sizes:
            discrete = torch.as_tensor(transitions[self.discrete_key], device=self.device)
        return SignalBatch(
            observations=self.tensors([transitions[f"obs_{i}"] for i in range(count)]),
            next_observations=self.tensors([transitions[f"next_obs_{i}"] for i in range(count)]),
            continuous=continuous,
            discrete=discrete,
            rewards=torch.as_tensor(transitions["env_reward"], device=self.device),
            dones=torch.as_tensor(transitions["done"], device=self.device) > 0,
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

    def _signal_updates_target(self) -> int:
        """How many reward-signal update rounds are due in all at the current step (ML-Agents'
        pace: one per ``reward_signal_steps_per_update`` steps after ``buffer_init_steps``)."""
        hyper = self.hyper
        if self.step < hyper.buffer_init_steps:
            return 0
        pace = hyper.reward_signal_steps_per_update
        assert pace is not None  # set by validation
        return int((self.step - hyper.buffer_init_steps) / pace) + 1

    def _due_signal_updates(self) -> int:
        """Reward-signal update rounds due (0 without intrinsic signals)."""
        if not self.intrinsic or len(self.replay) < self.hyper.batch_size:
            return 0
        return max(self._signal_updates_target() - self.signal_update_count, 0)

    def _update_ready(self) -> bool:
        return self._due_updates() > 0 or self._due_signal_updates() > 0

    def _update_size(self) -> int:
        """Gradient steps due (the policy's and the reward signals' rounds)."""
        return self._due_updates() + self._due_signal_updates()

    def _take_update_job(self) -> Callable[[], None]:
        count = self._due_updates()
        signal_count = self._due_signal_updates()
        step = self.step
        return lambda: self._run_updates(count, step, signal_count)

    def _run_updates(self, count: int, step: int, signal_count: int = 0) -> None:
        learning_rate = self.learning_rate.value(step)
        for optimizer in (self.policy_optimizer, self.q_optimizer, self.alpha_optimizer):
            for group in optimizer.param_groups:
                group["lr"] = learning_rate
        totals = np.zeros(STAT_COLUMNS + len(self.signals))
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
            if self.continuous:
                stats["Policy/Continuous Entropy Coeff"] = means[4]
            if self.branch_sizes:
                stats["Policy/Discrete Entropy Coeff"] = means[5]
            for j, signal in enumerate(self.signals):
                stats[f"Policy/{signal.name} Value"] = means[STAT_COLUMNS + j]
            if self.cloning is not None:
                stats.update(self.cloning.update(step))
            self.context.stats.add_many(stats)
        self._update_signals(signal_count)

    def _update_signals(self, rounds: int) -> None:
        """``rounds`` times, train every intrinsic signal once on a batch sampled for it (as
        ML-Agents' SAC does after the policy's steps)."""
        losses: dict[str, list[float]] = {}
        for _ in range(rounds):
            for signal in self.intrinsic:
                with self.model_lock:
                    sample = self.replay.sample(self.hyper.batch_size, self.rng)
                if self.recurrent:  # the signals read the sequences' real steps
                    real = sample["real"].reshape(-1)
                    sample = {
                        key: _flat_rows(value)[real]
                        for key, value in sample.items()
                        if key not in SEQUENCE_KEYS
                    }
                batch = self._signal_batch(sample)
                with self.model_lock:
                    for name, value in signal.update(batch).items():
                        losses.setdefault(name, []).append(value)
            self.signal_update_count += 1
        if losses:
            self.context.stats.add_many({k: float(np.mean(v)) for k, v in losses.items()})

    def _stream_rewards(self, batch: SignalBatch) -> torch.Tensor:
        """Every signal's rewards of ``batch`` times its strength, ``(n, streams)``."""
        columns = [signal.evaluate(batch) * np.float32(signal.strength) for signal in self.signals]
        return torch.as_tensor(np.stack(columns, axis=1), device=self.device)

    def _not_done(self, terminated: torch.Tensor) -> torch.Tensor:
        """Per stream ``1 - done``, ``(n, streams)``: 1 for signals that ignore episode ends."""
        return 1.0 - terminated.unsqueeze(1) * self.use_dones

    def _update_once(self, sample: dict[str, np.ndarray]) -> np.ndarray:
        """One update on a replay sample (transitions, or sequences with memory)."""
        inputs: _Inputs | None = None
        if self.recurrent:
            sample, inputs = self._sequence_inputs(sample)
        batch = self._signal_batch(sample)
        not_done = self._not_done(torch.as_tensor(sample["terminated"], device=self.device))
        with self.model_lock:
            rewards = self._stream_rewards(batch)
            assert batch.next_observations is not None
            if inputs is None:
                inputs = _FlatInputs(
                    batch.observations, batch.next_observations, self.shared_encoder
                )
            mask = next_mask = None
            if self.branch_sizes:
                mask = self.mask_tensor(sample["mask"])
                next_mask = self.mask_tensor(sample["next_mask"])
            return self._update(
                inputs, batch.continuous, batch.discrete, rewards, not_done, mask, next_mask
            )

    def _sequence_inputs(
        self, sample: dict[str, np.ndarray]
    ) -> tuple[dict[str, np.ndarray], _SequenceInputs]:
        """A sample of sequences as the transitions of its real steps (for the rewards,
        actions and episode ends) and the networks' inputs over whole sequences."""
        real = sample["real"].reshape(-1)
        flat = {key: _flat_rows(value) for key, value in sample.items() if key not in SEQUENCE_KEYS}
        count = self.num_entries
        inputs = _SequenceInputs(
            observations=self.tensors([flat[f"obs_{i}"] for i in range(count)]),
            next_observations=self.tensors([flat[f"next_obs_{i}"] for i in range(count)]),
            real=torch.as_tensor(real, device=self.device),
            memories=torch.as_tensor(sample["memory"], device=self.device),
            q_memory_size=self.q1.memory.memory_size if self.q1.memory is not None else 0,
        )
        return {key: value[real] for key, value in flat.items()}, inputs

    def _streams(self, values: torch.Tensor) -> torch.Tensor:
        """Q outputs with a stream dimension, ``(n, streams[, choices])``."""
        return values if len(self.signals) > 1 else values.unsqueeze(1)

    def _soft_value(
        self,
        q: torch.Tensor,
        branch_log_probs: list[torch.Tensor],
        log_prob: torch.Tensor | None,
        alpha: torch.Tensor,
    ) -> torch.Tensor:
        """The soft state value of every stream, ``(n, streams)``, from ``min(Q1, Q2)`` ``q``
        (``(n, streams)`` without discrete actions, else ``(n, streams, sum(branches))``, taken
        at the policy's sampled continuous action when there is one), the policy's
        per-branch log-probabilities and its continuous log-likelihood ``(n,)`` (``None``
        without continuous actions).

        Discrete part: the mean over branches of ``sum_i p_i * (Q_i - alpha_b * log p_i)``;
        continuous part: ``- alpha_c * log pi(a_c)``; hybrid actions combine both."""
        value = q
        if self.branch_sizes:
            alpha_d = alpha[self.discrete_alpha :]
            values = [
                (lp.exp().unsqueeze(1) * (qb - alpha_d[b] * lp.unsqueeze(1))).sum(dim=-1)
                for b, (lp, qb) in enumerate(
                    zip(branch_log_probs, q.split(self.branch_sizes, dim=-1), strict=True)
                )
            ]
            value = torch.stack(values, dim=-1).mean(dim=-1)
        if log_prob is not None:
            value = value - alpha[0] * log_prob.unsqueeze(1)
        return value

    def _targets(
        self,
        successors: _Inputs | list[torch.Tensor],
        rewards: torch.Tensor,
        not_done: torch.Tensor,
        alpha: torch.Tensor,
        next_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        """The Q targets ``r_j + gamma_j * (1 - done_j) * soft V_j(s')`` of every stream,
        ``(n, streams)``, from the target critics (no gradients; :meth:`_soft_value` at a
        continuous action sampled from the policy at ``s'``). ``successors``: the update's
        inputs, or the next observations of independent transitions."""
        if isinstance(successors, list):
            inputs: _Inputs = _FlatInputs(successors, successors, self.shared_encoder)
        else:
            inputs = successors
        with torch.no_grad():
            dist = inputs.policy(self.policy, next_mask, following=True)
            actions = log_prob = None
            if self.continuous:
                actions, log_prob = dist.rsample_squashed()
            next_q = torch.min(
                *(self._streams(q) for q in self.target_critics(inputs, actions, following=True))
            )
            next_value = self._soft_value(next_q, dist.branch_log_probs(), log_prob, alpha)
            return rewards + self.gammas * not_done * next_value

    def _update(
        self,
        inputs: _Inputs,
        continuous: torch.Tensor | None,
        discrete: torch.Tensor | None,
        rewards: torch.Tensor,
        not_done: torch.Tensor,
        mask: torch.Tensor | None,
        next_mask: torch.Tensor | None,
    ) -> np.ndarray:
        """One SAC step (continuous, discrete or hybrid actions; see the module docstring);
        ``rewards`` and ``not_done`` are ``(n, streams)``, ``continuous`` / ``discrete`` the
        replayed actions (``None`` for a missing part). Returns the Q1, Q2 and policy losses,
        the entropy, the continuous entropy coefficient and the discrete ones' mean (NaN for a
        missing part) and every stream's mean ``min(Q1, Q2)`` at the policy's actions."""
        sizes = self.branch_sizes
        alpha = self.log_alpha.exp().detach()
        target = self._targets(inputs, rewards, not_done, alpha, next_mask)
        q1, q2 = (self._streams(q) for q in self.critics(inputs, continuous))
        if sizes:
            assert discrete is not None
            q1_loss = _branch_q_loss(q1.split(sizes, dim=-1), discrete, target)
            q2_loss = _branch_q_loss(q2.split(sizes, dim=-1), discrete, target)
        else:
            q1_loss = functional.mse_loss(q1, target)
            q2_loss = functional.mse_loss(q2, target)

        dist = inputs.policy(self.policy, mask)
        new_actions = log_probs = None
        if self.continuous:
            new_actions, log_probs = dist.rsample_squashed()
            # The critics at the policy's actions: gradients reach the actions, not the critics.
            stream_q = torch.min(
                *(self._streams(q) for q in self.critics(inputs, new_actions, frozen=True))
            )
        else:  # the Q values do not depend on the policy: the critics' outputs above
            stream_q = torch.min(q1, q2).detach()
        branch_log_probs = dist.branch_log_probs()
        q_mean = stream_q.mean(dim=1)  # (n,) or (n, sum(branches)): the streams' mean
        policy_rows: list[torch.Tensor] = []
        alpha_terms: list[torch.Tensor] = []
        entropies: list[torch.Tensor] = []
        expected_q = q_mean
        stream_values = stream_q.detach()
        if sizes:
            first = self.discrete_alpha
            expected: list[torch.Tensor] = []
            branch_values: list[torch.Tensor] = []
            for b, (lp, qb) in enumerate(
                zip(branch_log_probs, q_mean.split(sizes, dim=1), strict=True)
            ):
                probs = lp.exp()
                policy_rows.append((probs * (alpha[first + b] * lp - qb)).sum(dim=1))
                expected.append((probs * qb).sum(dim=1))
                entropy = -(probs * lp).sum(dim=1).detach()
                entropies.append(entropy.mean())
                alpha_terms.append(
                    self.log_alpha[first + b] * (entropy - self.target_entropy[first + b]).mean()
                )
                branch_q = stream_values[..., sum(sizes[:b]) : sum(sizes[: b + 1])]
                branch_values.append((probs.detach().unsqueeze(1) * branch_q).sum(dim=-1))
            expected_q = torch.stack(expected).sum(dim=0)
            stream_values = torch.stack(branch_values, dim=-1).mean(dim=-1)
        if log_probs is not None:
            policy_rows.append(alpha[0] * log_probs - expected_q)
            entropies.append(-log_probs.detach().mean())
            alpha_terms.append(
                -self.log_alpha[0] * (log_probs.detach() + self.target_entropy[0]).mean()
            )
        policy_loss = torch.stack(policy_rows).sum(dim=0).mean()
        alpha_loss = torch.stack(alpha_terms).sum()
        # Every loss reads the parameters before this update, and each reaches only its own
        # parameters: one backward pass, then each optimizer's step.
        optimizers = (self.q_optimizer, self.policy_optimizer, self.alpha_optimizer)
        for optimizer in optimizers:
            optimizer.zero_grad(set_to_none=True)
        (q1_loss + q2_loss + policy_loss + alpha_loss).backward()
        for optimizer in optimizers:
            optimizer.step()

        polyak_update(self.q_optimizer.buffer, self.target_buffer, self.hyper.tau)
        continuous_coef = float(alpha[0]) if self.continuous else math.nan
        discrete_coef = float(alpha[self.discrete_alpha :].mean()) if sizes else math.nan
        return np.array(
            [
                q1_loss.item(),
                q2_loss.item(),
                policy_loss.item(),
                float(torch.stack(entropies).sum()),
                continuous_coef,
                discrete_coef,
                *stream_values.mean(dim=0).tolist(),
            ]
        )
