"""The progress bar draws only on terminals and keeps log lines apart from itself."""

from __future__ import annotations

import io
import logging

from trainers.common.bookkeeping.progress import ProgressAwareHandler, ProgressBar


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_output_when_not_a_terminal() -> None:
    stream = io.StringIO()
    bar = ProgressBar(100, stream, interval=0.0)
    bar.update(50)
    bar.close()
    assert stream.getvalue() == ""


def test_terminal_bar_and_log_lines_do_not_mix() -> None:
    stream = _Terminal()
    bar = ProgressBar(200, stream, interval=0.0)
    bar.update(50)
    assert "25.0%" in stream.getvalue() and "50/200 steps" in stream.getvalue()
    logger = logging.getLogger("tests.trainers.progress")
    handler = ProgressAwareHandler(stream)
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("a log line")
    finally:
        logger.removeHandler(handler)
    before, after = stream.getvalue().split("a log line\n")
    assert before.endswith("\r\033[K")  # the bar's line was erased before the message
    assert after.startswith("\r[") and "50/200 steps" in after  # and redrawn after it
    bar.close()
    assert stream.getvalue().endswith("\r\033[K")
