"""3DBallHard: ML-Agents' 3DBall without the ball's velocity, on 3DBall's physics.

It subclasses :class:`~unity_gym.player.scenes.ball3d.Ball3DScene`: the platform, the ball,
the tilt actions, the rewards (every executed action *sets* 0.1; a fallen ball sets -1 and ends
the episode), the episode begin and the environment parameters ``mass``, ``gravity`` and
``scale`` are 3DBall's. What differs is what the agent observes.

ML-Agents facts followed (``3DBallHard`` scene, ``3DBallHardNew`` prefab, ``Ball3DHardAgent``):
behavior ``3DBallHard?team=0``, 12 areas (the scene's 4 x 3 grid of platforms), decision period
5 with actions between decisions, max step 5000, two continuous actions. The agent has no vector
observation (Behavior Parameters' space size 0): its two ``[Observable(numStackedObservations:
9)]`` properties (Observable Attribute Handling *Exclude Inherited*) make two stacked reflection
sensors named ``ObservableAttribute:<class>.<property>``, sorted by name as Unity sorts sensors:

* ``StackingSensor_size9_ObservableAttribute:Ball3DHardAgent.PositionDelta`` (27,): the ball's
  position minus the platform's (x, y, z), the last 9 decisions, oldest first (zeros before);
* ``StackingSensor_size9_ObservableAttribute:Ball3DHardAgent.Rotation`` (18,): the platform
  rotation's quaternion components z and x, the last 9 decisions.

Without the ball's velocity the agent must infer it from the stack. Unity's ``Ball3DHardAgent``
reads ``mass`` and ``scale`` once when it starts; the player re-reads them (and ``gravity``) at
every episode begin, as its 3DBall does, which is the same while they do not change.

Heuristic: 3DBall's PD controller fed with the newest stacked rotation and position and a
velocity estimated from the two newest positions (zero until there are two); it keeps the ball
up far longer than random actions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..academy import AgentBatch
from ..specs import ActionSpec, BehaviorSpec, DecisionSettings, SensorSpec
from .ball3d import Ball3DScene
from .registry import register_scene

__all__ = ["Ball3DHardScene"]

#: Decision period of both scenes (their prefabs' Decision Requester).
DECISION_PERIOD = 5
#: Stack size of 3DBallHard's observable attributes.
HARD_STACK = 9
POSITION_SENSOR = "ObservableAttribute:Ball3DHardAgent.PositionDelta"
ROTATION_SENSOR = "ObservableAttribute:Ball3DHardAgent.Rotation"


@register_scene
class Ball3DHardScene(Ball3DScene):
    """Balance a ball seen only through stacked positions and rotations (no velocity)."""

    name = "3DBallHard"
    summary = "3DBall without the ball's velocity: 9 stacked positions/rotations (45 floats)"
    default_area_count = 12

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``3DBallHard?team=0``: stacked (27,) and (18,), continuous 2, period 5, max 5000."""
        return [
            BehaviorSpec(
                name="3DBallHard",
                sensors=(
                    SensorSpec(POSITION_SENSOR, (3,), stack_size=HARD_STACK),
                    SensorSpec(ROTATION_SENSOR, (2,), stack_size=HARD_STACK),
                ),
                action_spec=ActionSpec(continuous_size=2),
                decision=DecisionSettings(
                    period=DECISION_PERIOD, take_actions_between_decisions=True
                ),
                max_step=5000,
            )
        ]

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """``[ball dx, dy, dz]`` and ``[rot z, rot x]`` (unstacked; the Academy stacks them)."""
        position = np.empty((slots.size, 3), dtype=np.float32)
        position[:, 0:3:2] = self.planar[slots]
        position[:, 1] = self.height[slots]
        rotation = np.sin(np.radians(self.tilt[slots]) / 2.0).astype(np.float32)
        return [position, rotation]

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """3DBall's PD controller with the velocity estimated from the position stack."""
        positions, rotations = observations  # wire order: PositionDelta, Rotation
        newest = positions[:, -3:]
        previous = positions[:, -6:-3]
        known = np.any(rotations[:, -4:-2] != 0.0, axis=1)  # a previous decision is stacked
        interval = DECISION_PERIOD * self.fixed_delta_time
        velocity = np.where(known[:, None], (newest - previous) / interval, 0.0)
        rows = np.concatenate([rotations[:, -2:], newest, velocity], axis=1)
        return self._pd_actions(rows, slots.size)
