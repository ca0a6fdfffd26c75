"""Observation stacking, like Unity's ``StackingSensor``, vectorized over agents.

Each report pushes the newest observation; the stacked observation lists the last ``k``
observations oldest first (zeros before there are ``k``), concatenated along the first dimension
(channels for visual sensors). Stacks are cleared when an agent's episode ends.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ObservationStack"]


class ObservationStack:
    """The last ``stack_size`` observations of every agent of a batch.

    Args:
        agents: number of agents (slots).
        shape: shape of one unstacked observation.
        stack_size: number of observations kept.
    """

    def __init__(self, agents: int, shape: tuple[int, ...], stack_size: int) -> None:
        self.shape = shape
        self.stack_size = stack_size
        self._history = np.zeros((agents, stack_size, *shape), dtype=np.float32)

    def push(self, slots: np.ndarray, observations: np.ndarray) -> np.ndarray:
        """Append ``observations`` (one row per slot) and return the stacked observations."""
        history = self._history
        history[slots, :-1] = history[slots, 1:]
        history[slots, -1] = observations
        stacked = history[slots]
        return stacked.reshape(len(slots), self.stack_size * self.shape[0], *self.shape[1:])

    def reset(self, slots: np.ndarray) -> None:
        """Forget the history of ``slots``."""
        self._history[slots] = 0.0
