"""Visual3DBall: ML-Agents' 3DBall seen through the agent's camera, on 3DBall's physics.

It subclasses :class:`~unity_gym.player.scenes.ball3d.Ball3DScene`: the platform, the ball,
the tilt actions, the rewards (every executed action *sets* 0.1; a fallen ball sets -1 and ends
the episode), the episode begin and the environment parameters ``mass``, ``gravity`` and
``scale`` are 3DBall's. What differs is what the agent observes.

ML-Agents facts followed (``Visual3DBall`` scene and prefab, ``Ball3DAgent`` with ``useVecObs``
off): behavior ``Visual3DBall?team=0``, 8 areas (the scene's 4 x 2 grid), decision period 5 with
actions between decisions, max step 5000, two continuous actions, no vector observation. Its
only sensor is the prefab's ``CameraSensorComponent``: name ``CameraSensor``, 84 x 84 RGB (not
grayscale), PNG compression, 4 observation stacks: ``StackingSensor_size4_CameraSensor``
(12, 84, 84), sent as four concatenated PNGs.

What the camera shows is drawn by :meth:`Ball3DScene.render` (module
:mod:`unity_gym.player.render`): the prefab camera's pose (7 above and 8 behind the platform
centre, pitched 30 degrees down, field of view 60) over a black background (its solid clear
colour), the platform as a blue 5 x 0.5 x 5 box tilted as the agent tilted it and the ball as a
white sphere, Lambert-shaded by one directional light.

Heuristic: 3DBall's PD controller reading the scene's state (a privileged heuristic: it does
not parse pixels); it keeps the ball up far longer than random actions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..academy import AgentBatch
from ..render import to_chw_floats
from ..specs import ActionSpec, BehaviorSpec, Compression, DecisionSettings, SensorSpec
from .ball3d import Ball3DScene
from .registry import register_scene

__all__ = ["Visual3DBallScene"]

#: Stack size of the camera sensor (``m_ObservationStacks``).
CAMERA_STACK = 4


@register_scene
class Visual3DBallScene(Ball3DScene):
    """Balance a ball seen through the agent's camera (4 stacked 84 x 84 RGB pictures)."""

    name = "Visual3DBall"
    summary = "3DBall seen by a camera: 4 stacked 84x84 RGB PNG pictures, 8 agents"
    default_area_count = 8

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``Visual3DBall?team=0``: camera (12, 84, 84) PNG, continuous 2, period 5."""
        return [
            BehaviorSpec(
                name="Visual3DBall",
                sensors=(
                    SensorSpec(
                        "CameraSensor", (3, 84, 84), Compression.PNG, stack_size=CAMERA_STACK
                    ),
                ),
                action_spec=ActionSpec(continuous_size=2),
                decision=DecisionSettings(period=5, take_actions_between_decisions=True),
                max_step=5000,
            )
        ]

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """The camera picture of each agent's area, ``(3, 84, 84)`` floats in [0, 1]."""
        return [to_chw_floats(self.render(slots))]

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """3DBall's PD controller on the scene's own state (privileged: no pixels parsed)."""
        rows = np.empty((slots.size, 8), dtype=np.float32)
        rows[:, 0:2] = np.sin(np.radians(self.tilt[slots]) / 2.0)
        rows[:, 2:5:2] = self.planar[slots]
        rows[:, 3] = self.height[slots]
        rows[:, 5:8:2] = self.planar_velocity[slots]
        rows[:, 6] = self.vertical_velocity[slots]
        return self._pd_actions(rows, slots.size)
