"""Hyperparameter schedules over training steps (``*_schedule: linear | constant``)."""

from __future__ import annotations

from dataclasses import dataclass

from trainers.settings import ScheduleType

__all__ = ["Schedule"]


@dataclass(frozen=True)
class Schedule:
    """A value that stays at ``initial`` (constant) or decays linearly to ``minimum``.

    Linear schedules reach ``minimum`` at ``max_steps`` and stay there.
    """

    kind: ScheduleType
    initial: float
    minimum: float
    max_steps: int

    def value(self, step: int) -> float:
        """The scheduled value at ``step``."""
        if self.kind == "constant" or self.max_steps <= 0:
            return self.initial
        fraction = min(max(step / self.max_steps, 0.0), 1.0)
        return max(self.initial - (self.initial - self.minimum) * fraction, self.minimum)
