"""The restart rules of a game, under their earlier import path.

They live in :mod:`unity_gym.game.faults` (one home for every front); this module re-exports
them so that ``from unity_gym.vector.faults import RestartPolicy`` keeps working.
"""

from __future__ import annotations

from unity_gym.game.faults import (
    RestartLimitError,
    RestartPolicy,
    RestartTracker,
    describe_game_failure,
    editor_wait_message,
)

__all__ = [
    "RestartLimitError",
    "RestartPolicy",
    "RestartTracker",
    "describe_game_failure",
    "editor_wait_message",
]
