"""The player's own cost: time per Academy step and per exchange, excluding the trainer's time.

Always measured (a few ``perf_counter`` calls per step) and logged at exit; with ``--profile``
the Academy also times each phase of a step and the summary is logged periodically.
"""

from __future__ import annotations

import time
from collections import defaultdict

__all__ = ["StepProfiler"]


class StepProfiler:
    """Accumulates timings; all durations are in seconds.

    Args:
        detailed: also time the phases of each step (``record_phase``).
    """

    def __init__(self, detailed: bool = False) -> None:
        self.detailed = detailed
        self.steps = 0
        self.step_seconds = 0.0
        self.exchanges = 0
        self.exchange_own_seconds = 0.0
        self.wait_seconds = 0.0
        self.phase_seconds: dict[str, float] = defaultdict(float)
        self._started = time.perf_counter()

    def record_step(self, seconds: float) -> None:
        """One Academy step took ``seconds`` of wall time (trainer wait included)."""
        self.steps += 1
        self.step_seconds += seconds

    def record_exchange(self, own_seconds: float, wait_seconds: float) -> None:
        """One exchange: ``own_seconds`` building/encoding/decoding, ``wait_seconds`` blocked."""
        self.exchanges += 1
        self.exchange_own_seconds += own_seconds
        self.wait_seconds += wait_seconds

    def record_phase(self, phase: str, seconds: float) -> None:
        """Add ``seconds`` to ``phase`` (only called when :attr:`detailed`)."""
        self.phase_seconds[phase] += seconds

    @property
    def own_seconds_per_step(self) -> float:
        """Player time per Academy step, excluding the wait for the trainer."""
        if not self.steps:
            return 0.0
        return (self.step_seconds - self.wait_seconds) / self.steps

    @property
    def own_seconds_per_exchange(self) -> float:
        """Player time to build, encode and decode one exchange."""
        return self.exchange_own_seconds / self.exchanges if self.exchanges else 0.0

    def summary(self) -> str:
        """One line (plus one per phase when detailed) describing the player's cost."""
        wall = time.perf_counter() - self._started
        wait_per_exchange = self.wait_seconds / self.exchanges if self.exchanges else 0.0
        lines = [
            f"profile: {self.steps} Academy steps in {wall:.2f} s; player time "
            f"{self.own_seconds_per_step * 1e6:.1f} us/step; {self.exchanges} exchanges, "
            f"player time {self.own_seconds_per_exchange * 1e6:.1f} us/exchange, "
            f"waiting for the trainer {wait_per_exchange * 1e3:.3f} ms/exchange"
        ]
        if self.detailed and self.steps:
            for phase, seconds in sorted(self.phase_seconds.items()):
                lines.append(f"profile:   {phase:<16} {seconds / self.steps * 1e6:9.1f} us/step")
        return "\n".join(lines)
