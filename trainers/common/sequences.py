"""Cutting a rollout into fixed-length sequences for training recurrent networks.

As in ML-Agents, each agent's experience is split into trajectories (at episode ends and every
``time_horizon`` steps: the rollout's ``chain_breaks``), and each trajectory into sequences of
``sequence_length`` steps; the leftover is padded to full length, and padded steps are masked out
of every loss. Where ML-Agents pads the *front* of a trajectory's first sequence (so the LSTM
reads the padding before the real steps), the padding here is at the *end* of the last one: every
sequence then starts at a real step whose recorded memory is exactly what the policy had when it
acted, and padding, coming last, cannot change a real step's output.
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


def cut_sequences(chain_breaks: np.ndarray, length: int, offset: int = 0) -> Sequences:
    """The sequences of one rollout.

    Args:
        chain_breaks: ``(T, n)``, true at the last step of a trajectory (the last step of the
            rollout must be one).
        length: steps per sequence.
        offset: added to every row index.

    Raises:
        ValueError: ``length`` is not positive or a slot's last step does not end a trajectory.
    """
    if length <= 0:
        raise ValueError(f"sequence length must be positive, got {length}")
    steps, slots = chain_breaks.shape
    if steps and not chain_breaks[-1].all():
        raise ValueError("the rollout's last step must end every slot's trajectory")
    rows: list[np.ndarray] = []
    real: list[np.ndarray] = []
    positions = np.arange(length)
    for slot in range(slots):
        ends = np.flatnonzero(chain_breaks[:, slot]) + 1
        starts = np.concatenate([[0], ends[:-1]])
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            count = -(-(end - start) // length)
            times = start + np.arange(count)[:, None] * length + positions
            inside = times < end
            rows.append(np.where(inside, times, end - 1) * slots + slot + offset)
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
