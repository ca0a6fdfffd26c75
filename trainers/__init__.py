"""PPO, SAC and MA-POCA trainers behind ``unity-train``, configured like ``mlagents-learn``.

From the top down: :mod:`trainers.cli` and :mod:`trainers.learn` run a training from the
settings (:mod:`trainers.settings`); :mod:`trainers.envs` creates the environment and
:mod:`trainers.env_manager` routes its agents, through a front (:mod:`trainers.game_fronts`),
to one trainer per behavior, which :mod:`trainers.trainer_controller` steps. Trainers and env
manager speak through :mod:`trainers.contract`. The algorithms (:mod:`trainers.ppo`,
:mod:`trainers.sac`, :mod:`trainers.poca`, self-play in :mod:`trainers.ghost`) are assembled
from :mod:`trainers.assembly` and :mod:`trainers.common`, with :mod:`trainers.reward_signals`
and :mod:`trainers.imitation`. Environments are used only through public Gymnasium vector and
PettingZoo interfaces, so Unity games and plain Gymnasium environments train alike.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
