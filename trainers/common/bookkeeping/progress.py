"""A one-line training progress bar, shown only on interactive terminals.

Log lines and the bar share stderr: a :class:`ProgressAwareHandler` clears the active bar's line
before printing a log record and redraws it afterwards.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TextIO

__all__ = ["ProgressAwareHandler", "ProgressBar"]

_WIDTH = 30
_active: ProgressBar | None = None


class ProgressBar:
    """Draws ``[#####.....] 42% step/max steps/s`` at most every ``interval`` seconds.

    Disabled (every method a no-op) unless ``stream`` is a TTY.
    """

    def __init__(self, total: int, stream: TextIO | None = None, interval: float = 0.5) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.total = max(total, 1)
        self.interval = interval
        self._last_draw = 0.0
        self._start = time.monotonic()
        self._start_step: int | None = None
        self._text = ""

    def update(self, step: int) -> None:
        """Redraw for ``step`` if the interval has passed."""
        if not self.enabled:
            return
        now = time.monotonic()
        if self._start_step is None:
            self._start_step = step
        if now - self._last_draw < self.interval:
            return
        self._last_draw = now
        fraction = min(step / self.total, 1.0)
        filled = int(fraction * _WIDTH)
        rate = (step - self._start_step) / max(now - self._start, 1e-9)
        global _active
        _active = self
        self._text = (
            f"[{'#' * filled}{'.' * (_WIDTH - filled)}] {fraction * 100:5.1f}% "
            f"{step}/{self.total} steps {rate:,.0f} steps/s"
        )
        self.stream.write("\r" + self._text)
        self.stream.flush()

    def clear(self) -> None:
        """Erase the bar's line (before other output)."""
        if self.enabled and self._text:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def redraw(self) -> None:
        """Draw the last bar text again (after other output)."""
        if self.enabled and self._text:
            self.stream.write("\r" + self._text)
            self.stream.flush()

    def close(self) -> None:
        """Remove the bar for good."""
        global _active
        self.clear()
        self._text = ""
        if _active is self:
            _active = None


class ProgressAwareHandler(logging.StreamHandler):
    """A stream logging handler whose lines do not mix with an active :class:`ProgressBar`."""

    def emit(self, record: logging.LogRecord) -> None:
        bar = _active
        if bar is not None:
            bar.clear()
        super().emit(record)
        if bar is not None:
            bar.redraw()
