"""The ELO rating of a self-play policy, as ML-Agents computes it.

ML-Agents facts followed (``mlagents/trainers/ghost/controller.py`` and ``trainer.py``): the
expected score of a player rated ``R`` against one rated ``R_opp`` is
``1 / (1 + 10 ** ((R_opp - R) / 400))``; the rating changes by ``K * (result - expected)``,
where ``result`` is 1 for a win, 0.5 for a draw and 0 for a loss, read from the sign of the last
reward of the episode; the opponent's rating changes by the opposite amount. ML-Agents uses no
K-factor (``K = 1``): each game moves a rating by at most one point.
"""

from __future__ import annotations

__all__ = ["ELO_K_FACTOR", "elo_change", "expected_score", "game_result"]

ELO_K_FACTOR = 1.0
"""The largest change of one game (ML-Agents multiplies by nothing, so 1)."""


def expected_score(rating: float, opponent_rating: float) -> float:
    """The expected score (win probability) of a player rated ``rating`` against
    ``opponent_rating``: ``1 / (1 + 10 ** ((opponent_rating - rating) / 400))``."""
    return 1.0 / (1.0 + 10.0 ** ((opponent_rating - rating) / 400.0))


def elo_change(
    rating: float, opponent_rating: float, result: float, k_factor: float = ELO_K_FACTOR
) -> float:
    """How much the player's rating changes after one game (the opponent's changes by minus
    this): ``k_factor * (result - expected_score(rating, opponent_rating))``.

    Args:
        result: 1 (win), 0.5 (draw) or 0 (loss), from the player's side.
    """
    return k_factor * (result - expected_score(rating, opponent_rating))


def game_result(final_reward: float) -> float:
    """The result of an episode from the sign of its last reward: 1 if positive (win), 0 if
    negative (loss), 0.5 if zero (draw)."""
    if final_reward > 0:
        return 1.0
    if final_reward < 0:
        return 0.0
    return 0.5
