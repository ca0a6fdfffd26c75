"""``mlagents_envs.logging_util``: the official logging helpers, driving unity_gym's loggers.

Official facts followed (ml-agents 1.1.0 ``logging_util``): the level constants are
:mod:`logging`'s; :func:`get_logger` returns ``logging.getLogger(name)`` with one more handler
writing to :data:`sys.stdout` in :data:`LOG_FORMAT` (:data:`DEBUG_LOG_FORMAT` with
:data:`DATE_FORMAT` once the level is DEBUG), applies the level set so far, and remembers the
logger; :func:`set_log_level` sets that level on every remembered logger and switches their
handlers' format.

How it reaches unity_gym: the official loggers are the ``mlagents_envs.*`` ones, each made by
:func:`get_logger` when its module is imported. unity_gym's modules log under ``unity_gym.*``
(and the trainers under ``trainers.*``) with plain :func:`logging.getLogger` and no handler of
their own, so :func:`set_log_level` treats the two package loggers, :data:`PACKAGE_LOGGERS`, as
if :func:`get_logger` had made them: on its first call it gives each the stdout handler, and it
sets their level, which every ``unity_gym.*`` / ``trainers.*`` logger inherits. Until
:func:`set_log_level` is called, unity_gym's logging is left exactly as the application
configured it.
"""

from __future__ import annotations

import logging
import sys
from typing import Final

__all__ = [
    "CRITICAL",
    "DATE_FORMAT",
    "DEBUG",
    "DEBUG_LOG_FORMAT",
    "ERROR",
    "FATAL",
    "INFO",
    "LOG_FORMAT",
    "NOTSET",
    "PACKAGE_LOGGERS",
    "WARNING",
    "get_logger",
    "set_log_level",
]

CRITICAL: Final = logging.CRITICAL
FATAL: Final = logging.FATAL
ERROR: Final = logging.ERROR
WARNING: Final = logging.WARNING
INFO: Final = logging.INFO
DEBUG: Final = logging.DEBUG
NOTSET: Final = logging.NOTSET

DATE_FORMAT: Final = "%Y-%m-%d %H:%M:%S"
"""Date format of :data:`DEBUG_LOG_FORMAT`."""
DEBUG_LOG_FORMAT: Final = "%(asctime)s %(levelname)s [%(filename)s:%(lineno)d] %(message)s"
"""Record format once the level is DEBUG."""
LOG_FORMAT: Final = "[%(levelname)s] %(message)s"
"""Record format at every other level."""

PACKAGE_LOGGERS: Final = ("unity_gym", "trainers")
"""unity_gym's package loggers, which :func:`set_log_level` adopts as :func:`get_logger`'s."""

_loggers: set[logging.Logger] = set()
_log_level: int = NOTSET


def _formatter(level: int) -> logging.Formatter:
    if level == DEBUG:
        return logging.Formatter(fmt=DEBUG_LOG_FORMAT, datefmt=DATE_FORMAT)
    return logging.Formatter(fmt=LOG_FORMAT)


def get_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)`` with a stdout handler, at the level :func:`set_log_level` set.

    As officially, each call adds one handler, so call it once per name (at module import).
    """
    logger = logging.getLogger(name)
    handler = logging.StreamHandler(stream=sys.stdout)
    handler.setFormatter(_formatter(_log_level))
    logger.addHandler(handler)
    if _log_level != NOTSET:
        logger.setLevel(_log_level)
    _loggers.add(logger)
    return logger


def set_log_level(log_level: int) -> None:
    """Set the level of every :func:`get_logger` logger and of unity_gym's package loggers.

    Also switches their handlers to :data:`DEBUG_LOG_FORMAT` at DEBUG level and to
    :data:`LOG_FORMAT` otherwise (module docstring: how unity_gym's loggers are reached).
    """
    global _log_level
    _log_level = log_level
    remembered = {logger.name for logger in _loggers}
    for name in PACKAGE_LOGGERS:
        if name not in remembered:
            get_logger(name)
    formatter = _formatter(log_level)
    for logger in _loggers:
        logger.setLevel(log_level)
        for handler in logger.handlers:
            handler.setFormatter(formatter)
