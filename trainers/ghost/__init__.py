"""Self-play: a ghost trainer that trains one team at a time against snapshots of its policy.

:class:`GhostTrainer` wraps the trainer of a behavior with ``self_play``: the learning team acts
with it, the other teams with snapshots (each through its own acting policy); the
:class:`GhostController` decides which team learns, and :mod:`trainers.ghost.elo` rates games.
"""

from trainers.behavior_ids import team_of
from trainers.ghost.controller import GhostController
from trainers.ghost.elo import ELO_K_FACTOR, elo_change, expected_score, game_result
from trainers.ghost.trainer import SELF_PLAY_STATE_KEY, GhostTrainer

__all__ = [
    "ELO_K_FACTOR",
    "SELF_PLAY_STATE_KEY",
    "GhostController",
    "GhostTrainer",
    "elo_change",
    "expected_score",
    "game_result",
    "team_of",
]
