"""Cutting a rollout into fixed-length sequences for training recurrent networks.

As in ML-Agents (1.1.0: ``AgentBufferField.get_batch`` and
``TorchOptimizer._evaluate_by_sequence``), each agent's experience is split into trajectories
(at episode ends and every ``time_horizon`` steps: the rollout's ``chain_breaks``), and each
trajectory into sequences of ``sequence_length`` steps from its first step on; the leftover is
padded at the *end* to full length (ML-Agents pads the back since its pull request #5206), and
padded steps are masked out of every loss. Every sequence therefore starts at a real step whose
recorded memory is exactly what the policy had when it acted, and padding, coming last, cannot
change a real step's output.

Rows that are not ``included`` (steps whose action the environment ignored, which never moved
the policy's memory, and steps another rollout trains on) are left out of the sequences
altogether: the recurrence runs over a trajectory's included steps only, as it did when acting.
ML-Agents has no such steps: an agent that does not ask for a decision records no experience.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Sequences", "cut_sequences", "join_sequences"]


@dataclass
class Sequences:
    """Sequences over flat step rows (row ``t * n + slot`` of a ``(T, n)`` rollout, plus an
    offset for rollouts after the first).

    Attributes:
        rows: ``(S, L)`` row indices; a padded position repeats its sequence's last real row.
        real: ``(S, L)`` false at padded positions.
    """

    rows: np.ndarray
    real: np.ndarray

    def __len__(self) -> int:
        return len(self.rows)


def cut_sequences(
    chain_breaks: np.ndarray,
    length: int,
    offset: int = 0,
    included: np.ndarray | None = None,
) -> Sequences:
    """The sequences of one rollout.

    Args:
        chain_breaks: ``(T, n)``, true at the last step of a trajectory (the last step of the
            rollout must be one).
        length: steps per sequence.
        offset: added to every row index.
        included: ``(T, n)``, the steps the sequences hold (``None``: all); a trajectory's
            sequences run over its included steps in order, and a trajectory without any has
            none.

    Raises:
        ValueError: ``length`` is not positive, a slot's last step does not end a trajectory,
            or ``included`` is not shaped like ``chain_breaks``.
    """
    if length <= 0:
        raise ValueError(f"sequence length must be positive, got {length}")
    steps, slots = chain_breaks.shape
    if steps and not chain_breaks[-1].all():
        raise ValueError("the rollout's last step must end every slot's trajectory")
    if included is not None and included.shape != chain_breaks.shape:
        raise ValueError(
            f"included is shaped {included.shape}, the chain breaks {chain_breaks.shape}"
        )
    rows: list[np.ndarray] = []
    real: list[np.ndarray] = []
    positions = np.arange(length)
    for slot in range(slots):
        ends = np.flatnonzero(chain_breaks[:, slot]) + 1
        starts = np.concatenate([[0], ends[:-1]])
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            times = np.arange(start, end)
            if included is not None:
                times = times[included[start:end, slot]]
            if not len(times):
                continue
            count = -(-len(times) // length)
            index = np.arange(count)[:, None] * length + positions
            inside = index < len(times)
            picked = times[np.minimum(index, len(times) - 1)]
            rows.append(picked * slots + slot + offset)
            real.append(inside)
    if not rows:
        return Sequences(np.zeros((0, length), np.int64), np.zeros((0, length), bool))
    return Sequences(np.concatenate(rows).astype(np.int64), np.concatenate(real))


def join_sequences(parts: list[Sequences]) -> Sequences:
    """The sequences of several rollouts (rows already offset)."""
    return Sequences(
        np.concatenate([part.rows for part in parts]),
        np.concatenate([part.real for part in parts]),
    )
