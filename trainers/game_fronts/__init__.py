"""Fronts: how the env manager reaches the agents of each kind of environment.

:class:`GameFront` is the contract (:mod:`trainers.game_fronts.base`); :class:`VectorFront`
drives a Gymnasium vector env, :class:`PettingZooFront` PettingZoo parallel envs. The one
:class:`trainers.env_manager.EnvManager` drives either.
"""

from trainers.game_fronts.base import (
    FrontActions,
    FrontAgent,
    FrontRows,
    FrontStep,
    GameFront,
)
from trainers.game_fronts.pettingzoo import PettingZooFront, close_all
from trainers.game_fronts.vector import VectorFront, apply_env_params

__all__ = [
    "FrontActions",
    "FrontAgent",
    "FrontRows",
    "FrontStep",
    "GameFront",
    "PettingZooFront",
    "VectorFront",
    "apply_env_params",
    "close_all",
]
