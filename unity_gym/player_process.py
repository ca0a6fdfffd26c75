"""What a game process (the headless player) settles before anything else is imported.

``import unity_gym`` runs :func:`runs_the_player` first: in a game process it calls
:func:`limit_player_threads` and skips registering the Gymnasium ids (a game never makes a
Gymnasium env; importing Gymnasium was about a seventh of a game's start-up CPU). This module
imports nothing heavy, so that both happen before numpy is imported.
"""

from __future__ import annotations

import os
import sys

__all__ = ["PLAYER_BLAS_THREADS", "limit_player_threads", "runs_the_player"]

#: Thread limits a game process sets for numpy's BLAS before numpy is imported (a value in the
#: environment wins). A game's matrices are small (a camera's 7056 rays at most): a second BLAS
#: thread only busy-waits beside the trainer, which doubled VisualFoodCollector's CPU per step on
#: 2 cores.
PLAYER_BLAS_THREADS = {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def runs_the_player() -> bool:
    """Whether this interpreter was started as ``python -m unity_gym.player`` or as the
    ``unity-gym-player`` script: a game process."""
    argv = getattr(sys, "orig_argv", [])
    if len(argv) > 1 and os.path.basename(argv[1]) == "unity-gym-player":
        return True
    return any(argv[i : i + 2] == ["-m", "unity_gym.player"] for i in range(1, len(argv) - 1))


def limit_player_threads() -> None:
    """Set :data:`PLAYER_BLAS_THREADS` in the environment where it is not set (effective only
    before numpy is first imported)."""
    for variable, value in PLAYER_BLAS_THREADS.items():
        os.environ.setdefault(variable, value)
