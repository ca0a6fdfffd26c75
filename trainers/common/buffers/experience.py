"""Experience storage: the on-policy rollout (PPO) and the replay ring buffers (SAC).

The rollout and the transition replay store whole env steps for all slots at once (``n`` =
number of slots), so recording costs a few array copies per env step, not per agent. The
sequence replay (SAC with memory) gathers each agent's consecutive steps into fixed-length
sequences.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "ReplayBuffer",
    "Rollout",
    "RolloutBuffer",
    "SequenceReplayBuffer",
    "ValueFunction",
    "assign_values",
    "compute_gae",
    "generalized_advantages",
]

ValueFunction = Callable[[list[np.ndarray]], np.ndarray]
"""Maps a batch of observations (one ``(B, ...)`` array per entry) to their values ``(B,)``, or
``(B, k)`` for a critic with ``k`` value heads (the first is the extrinsic one)."""


@dataclass
class Rollout:
    """A finished on-policy rollout: arrays shaped ``(T, n, ...)``.

    ``next_values[t]`` is the value of the successor state of step ``t`` (0 after a terminal
    step); ``chain_breaks[t]`` is true where the advantage recursion must not look past step
    ``t`` (episode end, ``time_horizon`` cut, end of rollout); ``valid[t]`` is false for steps
    whose action the environment ignored (next-step autoreset).

    With several value heads, ``values`` and ``next_values`` are those of the first (extrinsic)
    head and ``head_values`` / ``head_next_values`` ``(T, n, k)`` hold every head's; there,
    the successor value of an episode's last step is the value of its final observation
    whether or not the episode terminated (for signals that ignore episode ends).
    ``next_observations`` (recorded on request) are the successors of each step's
    observations; ``episode_ends[t]`` is true where an episode ended at step ``t``.

    A rollout also holds steps it does not train on (:class:`RolloutBuffer` carries open
    trajectories over): steps an earlier rollout trained on and steps of
    trajectories still open when it closed, which the next rollout trains on. They are not
    ``valid`` here, and episode ends among them are not in ``episode_ends``.

    Recurrent policies also record ``memories`` ``(T, n, memory_size)``, the policy's memory
    before each step; ``critic_memories`` holds the critic's (filled when the values are).
    """

    observations: list[np.ndarray]
    continuous: np.ndarray | None
    discrete: np.ndarray | None
    masks: np.ndarray | None
    log_probs: np.ndarray
    values: np.ndarray
    next_values: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    chain_breaks: np.ndarray
    valid: np.ndarray
    head_values: np.ndarray | None = None
    head_next_values: np.ndarray | None = None
    next_observations: list[np.ndarray] | None = None
    episode_ends: np.ndarray | None = None
    memories: np.ndarray | None = None
    critic_memories: np.ndarray | None = None
    group: int = 0

    @property
    def num_valid(self) -> int:
        """Number of usable agent steps."""
        return int(self.valid.sum())


def assign_values(
    rollout: Rollout, heads: np.ndarray, last_heads: np.ndarray, final_heads: np.ndarray
) -> None:
    """Set ``rollout``'s values from the critic's outputs.

    Args:
        heads: every head's value of each recorded observation, ``(T, n, k)``.
        last_heads: the values of the observations that follow the last step, ``(n, k)``.
        final_heads: the values of each episode's final observation at the step it ended
            ``(T, n, k)`` (read only where an episode ended; terminated episodes bootstrap from
            0 in the first head, and from this value in the others).
    """
    episode_ends = rollout.episode_ends
    assert episode_ends is not None, "the rollout does not say where its episodes ended"
    following = np.concatenate([heads[1:], last_heads[None]])
    bootstrap = np.where(rollout.terminated, 0.0, final_heads[..., 0])
    rollout.values = np.ascontiguousarray(heads[..., 0], dtype=np.float32)
    rollout.next_values = np.where(episode_ends, bootstrap, following[..., 0]).astype(np.float32)
    if heads.shape[2] > 1:
        rollout.head_values = heads.astype(np.float32, copy=False)
        rollout.head_next_values = np.where(episode_ends[..., None], final_heads, following).astype(
            np.float32
        )


def compute_gae(rollout: Rollout, gamma: float, lambd: float) -> tuple[np.ndarray, np.ndarray]:
    """Generalized advantage estimates and returns ``(T, n)`` (float32) of the extrinsic head."""
    return generalized_advantages(
        rollout.rewards,
        rollout.values,
        rollout.next_values,
        rollout.terminated,
        rollout.chain_breaks,
        gamma,
        lambd,
    )


def generalized_advantages(
    rewards: np.ndarray,
    values: np.ndarray,
    next_values: np.ndarray,
    terminated: np.ndarray,
    chain_breaks: np.ndarray,
    gamma: float,
    lambd: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Advantages and returns ``(T, n)`` (float32) of one reward stream (see :class:`Rollout`
    for the arguments' meaning; ``terminated`` steps do not bootstrap)."""
    steps = rewards.shape[0]
    advantages = np.zeros_like(rewards, dtype=np.float32)
    last = np.zeros(rewards.shape[1], dtype=np.float32)
    not_terminal = 1.0 - terminated.astype(np.float32)
    continues = 1.0 - chain_breaks.astype(np.float32)
    deltas = (rewards + gamma * next_values * not_terminal - values).astype(np.float32)
    decay = np.float32(gamma * lambd)
    for t in range(steps - 1, -1, -1):
        last = deltas[t] + decay * continues[t] * last
        advantages[t] = last
    return advantages, advantages + values


#: The per-step fields a :class:`RolloutBuffer` records itself.
_FIELDS = (
    "observations", "continuous", "discrete", "masks", "log_probs", "bootstrap", "rewards",
    "terminated", "done", "cut", "valid", "final_values", "next_observations", "memories",
)  # fmt: skip


@dataclass
class RolloutBuffer:
    """Collects env steps of all slots until a rollout is complete.

    Record order per env step: :meth:`add_decision` (what the policy did) then :meth:`add_outcome`
    (what the environment answered). State values are not recorded while acting: :meth:`finish`
    evaluates all observations of the rollout in one batch (as ML-Agents does when it processes a
    trajectory), which is cheaper than one critic pass per env step.

    Trajectories end at episode ends and every ``time_horizon`` valid steps of a slot (or
    where :meth:`truncate_last` ends them). As in ML-Agents, whose agent processor hands a
    trajectory to the trainer only at an episode end or after ``time_horizon`` steps
    (``AgentProcessor._process_step``) and whose trainer updates on whole trajectories, a
    rollout holds the trajectories completed since the last one, :attr:`num_valid` counts
    their valid steps, and each slot's open trajectory stays in the buffer for the next
    rollout. (A recurrent policy so trains on sequences as long as ML-Agents', instead of
    having one more cut, with its truncated backpropagation and bootstrapped value, wherever
    a rollout happened to close.) An open trajectory without valid steps is not kept.
    """

    time_horizon: int
    num_slots: int
    #: Steps per training sequence of a recurrent policy (:attr:`num_padded`).
    sequence_length: int = 1
    _steps: dict[str, list[Any]] = field(default_factory=dict)
    _since_cut: np.ndarray = field(init=False)
    #: Per slot: the first recorded step no rollout has held yet.
    _start: np.ndarray = field(init=False)
    #: Valid steps of the trajectories completed since the last rollout.
    _closed_valid: int = 0
    #: The same rounded up to whole sequences per trajectory.
    _closed_padded: int = 0

    def __post_init__(self) -> None:
        self._since_cut = np.zeros(self.num_slots, dtype=np.int64)
        self._start = np.zeros(self.num_slots, dtype=np.int64)
        self.clear()

    def clear(self) -> None:
        """Drop all recorded steps (the horizon counters continue)."""
        self._steps = {name: [] for name in _FIELDS}
        self._closed_valid = 0
        self._closed_padded = 0

    def add_field(self, name: str, value: np.ndarray) -> None:
        """Record ``value`` as the current step's entry of a field of the caller's own (such as
        MA-POCA's group ids, with each decision, or its group rewards, with each outcome): kept
        for the next rollout and dropped with the recorded steps, step for step.

        Raises:
            ValueError: ``name`` is one of the buffer's own fields.
        """
        if name in _FIELDS:
            raise ValueError(f"{name!r} is a field of the rollout buffer itself.")
        self._steps.setdefault(name, []).append(value)

    def stacked(self, name: str) -> np.ndarray:
        """The recorded steps' entries of field ``name`` (one of the buffer's, such as
        ``valid``, or one of :meth:`add_field`), ``(T, ...)``; after :meth:`finish`, those of
        the steps kept for the next rollout."""
        return np.stack(self._steps[name])

    def latest(self, name: str) -> np.ndarray:
        """The last recorded entry of field ``name``."""
        return np.asarray(self._steps[name][-1])

    @property
    def num_valid(self) -> int:
        """Usable agent steps the next rollout would hold: those of the trajectories completed
        since the last rollout."""
        return self._closed_valid

    @property
    def num_padded(self) -> int:
        """The entries ML-Agents' update buffer would hold for the trajectories completed since
        the last rollout, each trajectory's valid steps rounded up to whole sequences of
        :attr:`sequence_length` (``AgentBuffer.resequence_and_append`` pads the last sequence;
        ``num_experiences`` counts the padding); :attr:`num_valid` without sequences."""
        return self._closed_padded

    @property
    def num_open(self) -> int:
        """Valid steps of the slots' open trajectories (a later rollout's)."""
        return int(self._since_cut.sum())

    @property
    def num_steps(self) -> int:
        """Env steps recorded so far."""
        return len(self._steps["rewards"])

    def valid_observations(self, entry: int) -> np.ndarray:
        """Observation entry ``entry`` of every valid recorded step the next rollout would
        hold, ``(valid steps, ...)``."""
        steps = self._steps
        recorded = len(steps["valid"])  # the last decision may await its outcome
        if recorded == 0:
            return np.zeros((0, *steps["observations"][0][entry].shape[1:]), dtype=np.float32)
        stacked = np.stack([obs[entry] for obs in steps["observations"][:recorded]])
        valid = np.stack(steps["valid"])
        breaks = np.stack(steps["done"]) | np.stack(steps["cut"])
        return stacked[valid & self._held(self._open_from(valid, breaks), len(valid))]

    def _open_from(self, valid: np.ndarray, breaks: np.ndarray) -> np.ndarray:
        """``(n,)``: each slot's first recorded step the next rollout leaves for the one after
        (``T`` for none), given the steps' ``valid`` and trajectory ``breaks`` (episode ends and
        horizon cuts) ``(T, n)``: the steps after the slot's last break, unless none of them is
        valid."""
        steps = len(valid)
        times = np.arange(steps)[:, None]
        fresh = times >= self._start  # no earlier rollout held these
        last_break = np.where(fresh & breaks, times, -1).max(axis=0)
        open_valid = (fresh & valid & (times > last_break)).any(axis=0)
        open_from = np.maximum(last_break + 1, self._start)
        return np.where(open_valid, open_from, steps).astype(np.int64)

    def _held(self, open_from: np.ndarray, steps: int) -> np.ndarray:
        """``(T, n)``: the recorded steps the next rollout holds: each slot's from its
        :attr:`_start` to before ``open_from``."""
        times = np.arange(steps)[:, None]
        return (times >= self._start) & (times < open_from)

    @property
    def awaiting_outcome(self) -> bool:
        """Whether the last decision has no outcome yet."""
        return len(self._steps["log_probs"]) > len(self._steps["rewards"])

    def add_decision(
        self,
        observations: list[np.ndarray],
        continuous: np.ndarray | None,
        discrete: np.ndarray | None,
        masks: np.ndarray | None,
        log_probs: np.ndarray,
        memories: np.ndarray | None = None,
    ) -> None:
        """Record the observations the policy saw, what it chose and (recurrent policies) its
        memories before the step."""
        steps = self._steps
        steps["memories"].append(memories)
        steps["observations"].append(observations)
        steps["continuous"].append(continuous)
        steps["discrete"].append(discrete)
        steps["masks"].append(masks)
        steps["log_probs"].append(log_probs)

    def add_outcome(
        self,
        rewards: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        valid: np.ndarray,
        truncation_values: np.ndarray,
        next_observations: list[np.ndarray] | None = None,
    ) -> None:
        """Record the environment's answer to the last decision.

        ``truncation_values`` holds the value of the final observation where a slot was truncated
        (bootstrapping); other entries are ignored. With several value heads it is ``(n, k)``
        and must hold every head's value of the final observation wherever an episode ended.
        ``next_observations``: the successors of the decision's observations (the final
        observation where an episode ended), recorded for :attr:`Rollout.next_observations`.
        """
        done = terminated | truncated
        self._since_cut += valid
        cut = (self._since_cut >= self.time_horizon) & ~done
        self._close_trajectories(done | cut)
        final_values = np.asarray(truncation_values, dtype=np.float32)
        first = final_values if final_values.ndim == 1 else final_values[:, 0]
        bootstrap = np.where(truncated & ~terminated, first, 0.0).astype(np.float32)
        steps = self._steps
        steps["final_values"].append(final_values if final_values.ndim == 2 else None)
        steps["next_observations"].append(next_observations)
        steps["rewards"].append(rewards.astype(np.float32, copy=False))
        steps["terminated"].append(terminated.copy())
        steps["done"].append(done)
        steps["cut"].append(cut)
        steps["valid"].append(valid.copy())
        steps["bootstrap"].append(bootstrap)

    def _close_trajectories(self, slots: np.ndarray) -> None:
        """The open trajectories of ``slots`` (a bool mask) end at the last recorded outcome:
        their valid steps, and the same padded to whole sequences, count towards the next
        rollout; the horizon counters restart."""
        closed = self._since_cut[slots]
        self._closed_valid += int(closed.sum())
        length = self.sequence_length
        self._closed_padded += int((-(-closed // length) * length).sum())
        self._since_cut[slots] = 0

    def truncate_last(self, slots: np.ndarray, final_values: np.ndarray | None) -> None:
        """End the episodes of ``slots`` (a bool mask) at the last recorded outcome, truncated:
        they bootstrap from ``final_values`` (the values of the observations that followed,
        ``(n,)`` or ``(n, k)`` as in :meth:`add_outcome`; ``None`` for a caller that values
        them itself). Nothing happens before the first outcome."""
        steps = self._steps
        if not steps["done"]:
            return
        slots = slots & ~steps["done"][-1]
        steps["done"][-1] = steps["done"][-1] | slots
        self._close_trajectories(slots)
        if final_values is None:
            return
        values = np.asarray(final_values, dtype=np.float32)
        if values.ndim == 2:
            stored = steps["final_values"][-1]
            if stored is None:
                stored = np.zeros_like(values)
            stored[slots] = values[slots]
            steps["final_values"][-1] = stored
            values = values[:, 0]
        steps["bootstrap"][-1] = np.where(slots, values, steps["bootstrap"][-1]).astype(np.float32)

    def finish(
        self, value_of: ValueFunction | None, last_observations: list[np.ndarray]
    ) -> Rollout:
        """Assemble the rollout, with the values of every recorded observation.

        The rollout holds the recorded steps up to each slot's last trajectory end (and none of
        those an earlier rollout held); the steps of its open trajectory stay recorded for the
        next rollout (see :class:`Rollout`).

        Args:
            value_of: the critic, called with the ``T * n`` recorded observations (step by
                step, slots in order; a view, not a copy), then with ``last_observations``.
                ``None``: the values are left at 0 for the caller to :func:`assign_values`
                (a recurrent critic, which must see each slot's steps in order).
            last_observations: the slots' current observations (the successors of the last
                step), one ``(n, ...)`` array per entry.

        Raises:
            RuntimeError: the last decision has no outcome yet (its step is still running).
        """
        if self.awaiting_outcome:
            raise RuntimeError("the rollout cannot close while a decision awaits its outcome.")
        steps = self._steps
        observations = [
            np.stack([obs[i] for obs in steps["observations"]])
            for i in range(len(steps["observations"][0]))
        ]
        length, n = len(steps["log_probs"]), self.num_slots
        done = np.stack(steps["done"])
        next_observations = None
        recorded = steps["next_observations"]
        if recorded and all(entry is not None for entry in recorded):
            next_observations = [
                np.stack([entry[i] for entry in recorded]) for i in range(len(recorded[0]))
            ]
        chain_breaks = done | np.stack(steps["cut"])
        valid = np.stack(steps["valid"])
        open_from = self._open_from(valid, chain_breaks)
        held = self._held(open_from, length)
        chain_breaks[-1] = True
        rollout = Rollout(
            observations=observations,
            continuous=_stack_optional(steps["continuous"]),
            discrete=_stack_optional(steps["discrete"]),
            masks=_stack_optional(steps["masks"]),
            log_probs=np.stack(steps["log_probs"]).astype(np.float32),
            values=np.zeros((length, n), dtype=np.float32),
            next_values=np.zeros((length, n), dtype=np.float32),
            rewards=np.stack(steps["rewards"]),
            terminated=np.stack(steps["terminated"]),
            chain_breaks=chain_breaks,
            valid=valid & held,
            next_observations=next_observations,
            episode_ends=done & held,
            memories=_stack_optional(steps["memories"]),
        )
        if value_of is not None:
            flat = [entry.reshape(length * n, *entry.shape[2:]) for entry in observations]
            heads = np.asarray(value_of(flat), dtype=np.float32).reshape(length, n, -1)
            last_heads = np.asarray(value_of(list(last_observations)), dtype=np.float32)
            if heads.shape[2] > 1:
                final = np.stack(
                    [v if v is not None else np.zeros_like(heads[0]) for v in steps["final_values"]]
                )
            else:
                final = np.stack(steps["bootstrap"])[..., None]
            assign_values(rollout, heads, last_heads.reshape(n, -1), final)
        self._keep_open(open_from, valid)
        return rollout

    def _keep_open(self, open_from: np.ndarray, valid: np.ndarray) -> None:
        """After a rollout: keep the recorded steps from the first slot's open trajectory on
        (:meth:`_open_from`), each slot's own from its ``open_from``; or clear everything."""
        first = int(open_from.min())
        if first >= len(valid):
            self._start[:] = 0
            self.clear()
            return
        kept = {name: values[first:] for name, values in self._steps.items()}
        self.clear()
        self._steps = kept
        self._start = open_from - first


def _stack_optional(items: list[np.ndarray | None]) -> np.ndarray | None:
    """Stack per-step arrays; ``None`` steps of a partly present field become all-true masks."""
    present = next((item for item in items if item is not None), None)
    if present is None:
        return None
    filler = np.ones_like(present)
    return np.stack([filler if item is None else item for item in items])


class ReplayBuffer:
    """Fixed-capacity ring buffer of transitions for off-policy learning.

    Arrays are allocated on the first :meth:`add` from the shapes of the data.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.size = 0
        self._cursor = 0
        self._arrays: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return self.size

    def add(self, batch: dict[str, np.ndarray]) -> None:
        """Append ``k`` transitions (every array's first dimension is ``k``)."""
        count = next(iter(batch.values())).shape[0]
        if count == 0:
            return
        if not self._arrays:
            self._arrays = {
                key: np.zeros((self.capacity, *value.shape[1:]), dtype=value.dtype)
                for key, value in batch.items()
            }
        if count > self.capacity:
            batch = {key: value[-self.capacity :] for key, value in batch.items()}
            count = self.capacity
        indices = (self._cursor + np.arange(count)) % self.capacity
        for key, value in batch.items():
            self._arrays[key][indices] = value
        self._cursor = int((self._cursor + count) % self.capacity)
        self.size = min(self.size + count, self.capacity)

    def sample(self, batch_size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """``batch_size`` transitions drawn uniformly with replacement."""
        indices = rng.integers(0, self.size, size=batch_size)
        return {key: array[indices] for key, array in self._arrays.items()}

    def state(self) -> dict[str, Any]:
        """Contents for a checkpoint (the filled part, oldest first)."""
        if self.size < self.capacity:
            order = np.arange(self.size)
        else:
            order = (self._cursor + np.arange(self.capacity)) % self.capacity
        return {key: array[order] for key, array in self._arrays.items()}

    def load(self, contents: dict[str, np.ndarray]) -> None:
        """Replace the contents with a :meth:`state` dict."""
        self._arrays = {}
        self.size = 0
        self._cursor = 0
        if contents:
            self.add(contents)


class SequenceReplayBuffer:
    """Replay of fixed-length sequences of one agent's consecutive steps (SAC with memory).

    Each agent (a slot of a slot group) gathers its transitions, in order, into an open
    sequence that starts with the policy's memory before its first step. The sequence enters
    the replay when it holds ``sequence_length`` steps, when its episode ends, or when
    :meth:`close` ends it (an environment reset); a short one is padded at the end by
    repeating its last step, ``real`` false there. As in ML-Agents' replay of a recurrent
    trainer, the capacity and the size count sequence positions, padding included, and a batch
    of ``batch_size`` positions is ``batch_size // sequence_length`` whole sequences (at least
    one). As in ML-Agents (which pads the back of a trajectory's last sequence since its pull
    request #5206: ``AgentBufferField.get_batch``), the padding is at the end, so every sequence
    starts at a real step with the memory the policy acted with.

    Stored items hold every transition key ``(sequence_length, ...)``, ``real``
    ``(sequence_length,)`` and ``memory`` ``(memory_size,)``.
    """

    def __init__(self, capacity: int, sequence_length: int) -> None:
        if sequence_length <= 0:
            raise ValueError(f"sequence length must be positive, got {sequence_length}")
        self.sequence_length = sequence_length
        self._sequences = ReplayBuffer(max(1, capacity // sequence_length))
        # per (group, slot): the memory before the open sequence's first step, and its steps
        self._open: dict[tuple[int, int], tuple[np.ndarray, list[dict[str, np.ndarray]]]] = {}

    def __len__(self) -> int:
        """Sequence positions stored (padding included)."""
        return len(self._sequences) * self.sequence_length

    @property
    def num_sequences(self) -> int:
        """Sequences stored."""
        return len(self._sequences)

    def add(
        self,
        group: int,
        slots: np.ndarray,
        batch: dict[str, np.ndarray],
        memories: np.ndarray,
        ends: np.ndarray,
    ) -> None:
        """Append one transition of each of ``group``'s ``slots``.

        Args:
            slots: ``(k,)`` slot indices, each once.
            batch: the transitions, every array ``(k, ...)``.
            memories: ``(k, memory_size)``, the policy's memory before each transition (used
                where it starts a sequence).
            ends: ``(k,)``, true where the slot's episode ended with the transition.
        """
        finished: list[tuple[np.ndarray, list[dict[str, np.ndarray]]]] = []
        for i, slot in enumerate(slots.tolist()):
            key = (group, int(slot))
            sequence = self._open.get(key)
            if sequence is None:
                sequence = (np.array(memories[i], dtype=np.float32), [])
                self._open[key] = sequence
            sequence[1].append({name: value[i] for name, value in batch.items()})
            if len(sequence[1]) >= self.sequence_length or ends[i]:
                finished.append(self._open.pop(key))
        self._store(finished)

    def close(self, group: int) -> None:
        """End ``group``'s open sequences now (padded as needed)."""
        keys = [key for key in self._open if key[0] == group]
        self._store([self._open.pop(key) for key in keys])

    def _store(self, sequences: list[tuple[np.ndarray, list[dict[str, np.ndarray]]]]) -> None:
        if not sequences:
            return
        length = self.sequence_length
        items: dict[str, list[np.ndarray]] = {"memory": [], "real": []}
        for memory, steps in sequences:
            padded = steps + [steps[-1]] * (length - len(steps))
            for name in steps[0]:
                items.setdefault(name, []).append(np.stack([step[name] for step in padded]))
            items["memory"].append(memory)
            items["real"].append(np.arange(length) < len(steps))
        self._sequences.add({name: np.stack(values) for name, values in items.items()})

    def sample(self, batch_size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """``batch_size // sequence_length`` sequences (at least one) drawn uniformly with
        replacement: every transition key ``(S, sequence_length, ...)``, ``real``
        ``(S, sequence_length)``, ``memory`` ``(S, memory_size)``."""
        count = max(1, batch_size // self.sequence_length)
        return self._sequences.sample(count, rng)

    def state(self) -> dict[str, Any]:
        """The stored sequences for a checkpoint, oldest first (open ones are not saved)."""
        return self._sequences.state()

    def load(self, contents: dict[str, np.ndarray]) -> None:
        """Replace the stored sequences with a :meth:`state` dict (open ones are dropped).

        Raises:
            ValueError: ``contents`` are not sequences of this buffer's length.
        """
        real = contents.get("real")
        if contents and (real is None or "memory" not in contents):
            raise ValueError(
                "the saved replay buffer holds single transitions, not sequences (it was saved "
                "without network_settings.memory)"
            )
        if real is not None and real.ndim == 2 and real.shape[1] != self.sequence_length:
            raise ValueError(
                f"the saved replay buffer holds sequences of {real.shape[1]} steps, not "
                f"{self.sequence_length} (network_settings.memory.sequence_length changed)"
            )
        self._open = {}
        self._sequences.load(contents)
