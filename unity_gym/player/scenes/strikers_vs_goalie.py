"""StrikersVsGoalie: two strikers attack one goalie (ML-Agents' ``StrikersVsGoalie`` scene).

An asymmetric game on SoccerTwos' field and physics (:mod:`.soccer_twos`, which states the
facts of the field, the ball, the kick and the kickoff). Facts followed, from ml-agents
``Project/Assets/ML-Agents/Examples/Soccer`` (``Prefabs/StrikersVsGoalieField.prefab``,
``Scenes/StrikersVsGoalie.unity``, ``Scripts/AgentSoccer.cs``, ``Scripts/SoccerEnvController.cs``):

* 8 fields (``StrikersVsGoalieField`` and its copies (1) to (7)); each holds two blue strikers
  (``BlueStriker``, ``BlueStriker (1)``: behavior ``Striker``, ``TeamId`` 0, ``position``
  Striker) and one purple goalie (``PurpleGoalie``: behavior ``Goalie``, ``TeamId`` 1,
  ``position`` Goalie). Behaviors ``Striker?team=0`` (16 agents) and ``Goalie?team=1``
  (8 agents); agent ids run field by field (strikers, then the goalie).
* Striker observations, stacked 3x (``m_ObservationStacks``), wire order:
  ``StackingSensor_size3_BlueRayPerceptionSensor`` (231,) = 11 rays over +-60 degrees ahead and
  ``StackingSensor_size3_BlueRayPerceptionSensorReverse`` (63,) = 3 rays over +-45 degrees behind,
  each ray 5 tags + 2 values; detectable tags ``ball``, ``purpleGoal`` (the goal it attacks),
  ``wall``, ``blueAgent`` (its teammate), ``purpleAgent`` (the goalie). Its own goal is not a
  detectable tag: a ray hitting it reports the distance and no tag.
* Goalie observations: ``StackingSensor_size3_PurpleGoalieRayPerceptionSensor`` (738,) = 41 rays
  (20 per direction, ``m_MaxRayDegrees`` 180), each 4 tags + 2 values; detectable tags
  ``ball``, ``purpleGoal`` (the goal it defends), ``wall``, ``blueAgent`` (a striker); the blue
  goal is seen without a tag. All rays reach 20 with a cast radius of 0.5.
* Actions as SoccerTwos: discrete (3, 3, 3); decision period 5 with actions between. Speeds by
  ``AgentSoccer.Position``: strikers ``m_ForwardSpeed`` 1.3 and ``m_LateralSpeed`` 0.3, the
  goalie 1.0 and 1.0 (times ``agentRunSpeed`` 2 of the scene's ``SoccerSettings``). The goalie
  kicks on every new touch of the ball (``force = k_Power``), a striker only after pushing
  forward.
* Rewards: each action adds the existential reward ``-1 / MaxEnvironmentSteps`` to a striker and
  ``+1 / MaxEnvironmentSteps`` to the goalie (``OnActionReceived``; ``MaxEnvironmentSteps`` 5000
  in the prefab). A goal pays the scoring team's group ``1 - t / 5000`` and the other group -1,
  ends both groups' episodes and kicks off again; 5000 steps without a goal interrupt both
  groups; ``ball_touch`` (environment parameter, default 0) pays ``0.2 * ball_touch`` per touch.
  The agents' ``MaxStep`` is 3000: each agent's own episode is interrupted after 3000 steps.
* Kickoff (``AgentSoccer.Initialize``, ``SoccerEnvController.ResetScene``): strikers 5 behind
  their prefab spots (-3.19, +-1.2), at x = -8.19; the goalie 5 behind its spot (4, 0), at
  x = 9; x jittered by +-5, facing the other end within +-10 degrees.

Options as SoccerTwos: ``max_environment_steps`` and ``kickoff`` (``shot_blue`` shoots at the
goalie's goal).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..raycast import RayPerceptionSpec
from .registry import register_scene
from .soccer_twos import (
    BACKWARD_RAYS,
    FORWARD_RAYS,
    LATERAL_SPEED,
    SoccerFieldScene,
)

__all__ = [
    "GOALIE_RAYS",
    "STRIKER_BACKWARD_RAYS",
    "STRIKER_FORWARD_RAYS",
    "StrikersVsGoalieScene",
]

#: The strikers' forward and reverse rays: SoccerTwos' geometry with 5 detectable tags.
STRIKER_FORWARD_RAYS = RayPerceptionSpec(
    rays_per_direction=FORWARD_RAYS.rays_per_direction,
    max_ray_degrees=FORWARD_RAYS.max_ray_degrees,
    ray_length=FORWARD_RAYS.ray_length,
    num_tags=5,
    cast_radius=FORWARD_RAYS.cast_radius,
)
STRIKER_BACKWARD_RAYS = RayPerceptionSpec(
    rays_per_direction=BACKWARD_RAYS.rays_per_direction,
    max_ray_degrees=BACKWARD_RAYS.max_ray_degrees,
    ray_length=BACKWARD_RAYS.ray_length,
    num_tags=5,
    cast_radius=BACKWARD_RAYS.cast_radius,
    heading_offset_degrees=BACKWARD_RAYS.heading_offset_degrees,
)
#: ``PurpleGoalieRayPerceptionSensor``: 20 rays per direction over 180 degrees, 4 tags.
GOALIE_RAYS = RayPerceptionSpec(
    rays_per_direction=20, max_ray_degrees=180.0, ray_length=20.0, num_tags=4, cast_radius=0.5
)
#: ``AgentSoccer`` speeds for ``Position.Striker`` and ``Position.Goalie``.
STRIKER_FORWARD_SPEED = 1.3
GOALIE_FORWARD_SPEED = 1.0
GOALIE_LATERAL_SPEED = 1.0
_UNTAGGED = -1


@register_scene
class StrikersVsGoalieScene(SoccerFieldScene):
    """Two strikers (``Striker``) against one goalie (``Goalie``) per field; 8 fields."""

    name = "StrikersVsGoalie"
    summary = (
        "2 strikers vs 1 goalie, asymmetric self-play (stacked rays 231+63 / 738, "
        "discrete 3x3x3, 24 agents)"
    )
    behavior_names = ("Striker", "Goalie")
    agent_max_step = 3000
    team_sizes = (2, 1)
    start_positions = np.array([[-8.19, 1.2], [-8.19, -1.2], [9.0, 0.0]])
    start_headings = np.array([0.0, 0.0, np.pi])
    forward_speeds = np.array([STRIKER_FORWARD_SPEED, STRIKER_FORWARD_SPEED, GOALIE_FORWARD_SPEED])
    lateral_speeds = np.array([LATERAL_SPEED, LATERAL_SPEED, GOALIE_LATERAL_SPEED])
    always_kicks = np.array([False, False, True])
    existential_signs = np.array([-1.0, -1.0, 1.0])
    chasers = np.array([True, True, False])

    def sensor_names(self, team: int) -> Sequence[str]:
        """Strikers: ``BlueRayPerceptionSensor`` and its ``Reverse``; the goalie:
        ``PurpleGoalieRayPerceptionSensor``."""
        if team == 0:
            return ("BlueRayPerceptionSensor", "BlueRayPerceptionSensorReverse")
        return ("PurpleGoalieRayPerceptionSensor",)

    def ray_sensors(self, team: int) -> Sequence[RayPerceptionSpec]:
        """Strikers: 11 rays ahead and 3 behind, 5 tags; the goalie: 41 rays all round, 4 tags."""
        if team == 0:
            return (STRIKER_FORWARD_RAYS, STRIKER_BACKWARD_RAYS)
        return (GOALIE_RAYS,)

    def ray_tags(self, team: int) -> tuple[int, int, int, int, int, int]:
        """Ball, own goal, opposing goal, wall, teammate, opponent, as the prefab's
        ``m_DetectableTags`` list them (-1 where the team cannot tell the object)."""
        if team == 0:  # ball, purpleGoal, wall, blueAgent, purpleAgent
            return (0, _UNTAGGED, 1, 2, 3, 4)
        return (0, 1, _UNTAGGED, 2, _UNTAGGED, 3)  # ball, purpleGoal, wall, blueAgent
