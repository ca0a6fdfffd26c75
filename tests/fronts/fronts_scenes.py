"""A headless-player scene for the fronts tests: ``Stress`` whose size the game's environment sets.

The player loads it as ``--scene fronts_scenes:ResizableStress`` when this folder is on
``PYTHONPATH`` (``process_utils.python_path_with(SCENE_FOLDER)``), so it runs as a real game
process over gRPC. Its vector observation size is ``$FRONTS_STRESS_OBS_SIZE`` (default 8) when
the game starts: a relaunch with another value stands for a build replaced between two launches.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from unity_gym.player.scenes.stress import StressScene

RESIZABLE_SCENE = "fronts_scenes:ResizableStress"
OBS_SIZE_VARIABLE = "FRONTS_STRESS_OBS_SIZE"
SCENE_FOLDER = Path(__file__).resolve().parent
"""The folder to put on a game's ``PYTHONPATH`` so that it finds this module."""


class ResizableStress(StressScene):
    """``Stress`` with ``obs_size`` read from ``$FRONTS_STRESS_OBS_SIZE`` (module docs)."""

    name = "ResizableStress"

    def __init__(
        self, options: Mapping[str, object] | None = None, *, num_agents: int | None = None
    ) -> None:
        super().__init__(options, num_agents=num_agents)
        self.options["obs_size"] = int(os.environ.get(OBS_SIZE_VARIABLE, "8"))
