"""Self-play: a ghost trainer that trains one team at a time against snapshots of its policy."""

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
