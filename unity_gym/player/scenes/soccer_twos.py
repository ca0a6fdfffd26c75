"""SoccerTwos: two teams of two play soccer (ML-Agents' ``SoccerTwos`` scene), top-down in 2-D.

Behaviors ``SoccerTwos?team=0`` (blue) and ``SoccerTwos?team=1`` (purple), 8 fields with two
agents of each team (16 agents per behavior). Two ray sensors, stacked over 3 reports, named
after the team (wire order, blue shown): ``StackingSensor_size3_BlueRayPerceptionSensor`` (264,)
= 11 rays over +-60 degrees ahead, and ``StackingSensor_size3_BlueRayPerceptionSensorReverse``
(72,) = 3 rays over +-45 degrees behind; each ray reports 6 tags + 2 values in Unity's
``RayPerceptionSensor`` layout (see :mod:`unity_gym.player.raycast`). As in Unity, the tag order
is relative to the team: ball, own goal, opposing goal, wall, teammate, opponent. Rays reach 20
units with a cast radius of 0.5.

Three discrete branches of 3: forward (0 none, 1 forward, 2 back), sideways (0 none, 1 right,
2 left, at 0.3 of the forward push, replacing it) and turn (0 none, 1 left, 2 right, 2 degrees
per step).
Decision period 5 with actions between, agent max step 0. Multi-agent groups: one per team per
field, created blue then purple field by field (ids from 1). When the ball enters a goal, the
scoring team's group gets ``1 - t / 5000`` (``t`` = steps since kickoff), the other group -1,
both groups end their episode and the field kicks off again; after 5000 steps without a goal
both groups' episodes are interrupted (option ``max_environment_steps``, Unity's
``MaxEnvironmentSteps``, changes the 5000). Individual reward: ``0.2 * ball_touch`` for each
touch of the ball (environment parameter ``ball_touch``, default 0, read at each episode begin).

Physics: top-down 2-D on the field of ``Prefabs/SoccerFieldTwos.prefab`` (see Field below),
stepped as Unity's Rigidbodies are, every 0.02 s (ml-agents
``Project/Assets/ML-Agents/Examples/Soccer``; the module constants name their sources). Agents are
discs of radius 0.5 (the ``SphereCollider`` of ``BlueStriker`` / ``PurpleStriker`` in
``Prefabs/SoccerFieldTwos.prefab``, ``position: 2`` = ``Generic``). ``AgentSoccer.MoveAgent``
turns 100 degrees/s (2 per step) and adds ``dir * agentRunSpeed`` to the velocity with
``ForceMode.VelocityChange`` on every step (decision period 5, actions between decisions):
``agentRunSpeed`` = 2 (``SoccerTwos.unity``, ``SoccerSettings``) times 1.0 forward or backward
(``m_ForwardSpeed``) or 0.3 sideways (``m_LateralSpeed``); a sideways action replaces the
forward/backward push, as in Unity's switch. Then the Rigidbody's ``m_Drag`` 3 keeps
1 - 3 * 0.02 = 0.94 of the speed and kinetic friction takes 0.6 * 9.81 * 0.02 = 0.118 units/s off
(Unity's default material 0.6 on the agent; the scene's ``gravityMultiplier`` is 1; the pitch's
own material is referenced by GUID only), so holding forward levels off near 29 units/s.
Agents meeting each other stop closing (bounciness 0, equal masses 50); walls stop them.

The ball (``Soccer Ball``: ``m_Mass`` 3, ``m_Drag`` 1, ``m_AngularDrag`` 1, radius
41.61146 x scale 0.015 = 0.624) keeps 1 - 1 * 0.02 = 0.98 of its velocity per step. It rolls, so
friction does not slow it in PhysX: only drag (linear and angular, both 1) is modelled. It bounces
off walls with bounciness 0.8 and off agents with 0.8 (the ``Bouncy`` material, 0.8 with combine
Maximum; see below), both only above Unity's default bounce threshold of 2 units/s; an agent
(mass 50) and the ball share the contact impulse by their masses. A kick: when an agent first
touches the ball (``OnCollisionEnter``) after a step with forward pushed (``m_KickPower`` 1),
``AgentSoccer`` adds ``k_Power`` = 2000 along the agent-to-contact direction with ``AddForce`` in
its default ``ForceMode.Force``, which over one step is 2000 * 0.02 / 3 = 13.3 units/s. Moves are
split into sub-steps of at most 0.25 units (agents and ball together), so nothing passes through a
wall, an agent or the ball. Not from the Unity files: the ball's physic material (referenced by
GUID only; ``Bouncy`` is assumed) and the ball's contact with the ground it sinks into.

Field (the prefab's colliders, scale 0.01 under ``Field``): the goal lines at x = +-15.5 (the
ground box ends there; blue defends -15.5), the side walls' inner faces at y = +-7.508, and four
corner walls at 60 degrees from the goal posts (+-15.5, +-4.15) to the side walls at
x = +-13.56, so the ends slope into 8.3 wide goal mouths. As in Unity (``SoccerBallController``
scores on ``OnCollisionEnter`` with a goal-tagged collider), the ball scores when it touches a
goal: a post, or the goal floor, which its centre reaches within 0.37 of the goal line (its
height is frozen at 0.5 with radius 0.624, so it sinks into the ground). Players stop at the goal
lines (in Unity they may enter the 1.9 deep nets), and rays see a goal as its mouth on the goal
line (Unity's rays hit the net up to 1.9 behind it).

Kickoff (``AgentSoccer.Initialize`` and ``SoccerEnvController.ResetScene``): each striker 5
behind its prefab spot (blue at x = -8.19, purple at +8.19, y = +-1.2), x jittered by +-5, facing
the opposing goal within +-10 degrees; the ball at rest within 2.5 of the centre on each axis.
Option ``kickoff`` = ``shot_blue`` or ``shot_purple`` instead starts the ball 10 from the centre
(3.5 to the side, clear of the strikers) flying into a goal at 30 units/s (for tests).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np

from .. import render
from ..academy import AgentBatch, SceneContext
from ..errors import PlayerError
from ..raycast import RayPerceptionSpec, RayTargets
from ..specs import ActionSpec, BehaviorSpec, DecisionSettings, SensorSpec
from .base import Scene, SceneOption
from .registry import register_scene

__all__ = ["SoccerFieldScene", "SoccerTwosScene"]

MAX_ENVIRONMENT_STEPS = 5000
#: The goal lines: the ``Field`` ground box (3100 x 1500 at scale 0.01) ends at x = +-15.5,
#: where the goal floors (``GoalBlue`` / ``GoalPurple``) begin.
HALF_LENGTH = 15.5
#: The inner faces of the side walls (``WallColliders`` ``Side`` boxes, 0.4607 thick, centred
#: 7.738 from the middle).
HALF_WIDTH = 7.508
#: The inner faces of the goal nets' side panels (``GoalNetBlue`` / ``GoalNetPurple``, boxes
#: 10 wide at z = +-420, scale 0.01): the mouth is 8.3 wide.
GOAL_HALF_WIDTH = 4.15
#: Where the four corner walls (``Wall Angle`` boxes at +-60 degrees) meet the side walls; they
#: run from the goal posts ``(+-HALF_LENGTH, +-GOAL_HALF_WIDTH)`` to ``(+-CORNER_X, +-HALF_WIDTH)``.
CORNER_X = 13.56
FIXED_DELTA_TIME = 0.02  # the scene's fixedDeltaTime override (SoccerTwos.unity)
#: The strikers' ``SphereCollider`` ``m_Radius`` (SoccerFieldTwos.prefab).
AGENT_RADIUS = 0.5
#: ``SoccerSettings.agentRunSpeed`` (SoccerTwos.unity): the velocity change per push step.
AGENT_RUN_SPEED = 2.0
#: ``m_ForwardSpeed`` and ``m_LateralSpeed`` of ``AgentSoccer`` for ``Position.Generic``.
FORWARD_SPEED = 1.0
LATERAL_SPEED = 0.3
#: The strikers' Rigidbody ``m_Mass`` and ``m_Drag`` (SoccerFieldTwos.prefab).
AGENT_MASS = 50.0
AGENT_DRAG = 3.0
AGENT_DRAG_FACTOR = 1.0 - AGENT_DRAG * FIXED_DELTA_TIME
#: ``gravityMultiplier`` of the scene's project-settings override (SoccerTwos.unity).
GRAVITY_MULTIPLIER = 1.0
GRAVITY = 9.81 * GRAVITY_MULTIPLIER
#: Dynamic friction of Unity's default physics material (the agents' colliders).
DYNAMIC_FRICTION = 0.6
#: Speed that kinetic friction removes from an agent per step (units/s).
FRICTION_PER_STEP = DYNAMIC_FRICTION * GRAVITY * FIXED_DELTA_TIME
#: The speed at which pushing forward every step is balanced by drag and friction (about 29).
TOP_SPEED = (AGENT_RUN_SPEED * FORWARD_SPEED * AGENT_DRAG_FACTOR - FRICTION_PER_STEP) / (
    1.0 - AGENT_DRAG_FACTOR
)
#: ``AgentSoccer.MoveAgent`` rotates 100 degrees/s.
TURN_DEGREES_PER_STEP = 100.0 * FIXED_DELTA_TIME
#: The ball's Rigidbody ``m_Mass`` and ``m_Drag`` (``Soccer Ball``, SoccerFieldTwos.prefab).
BALL_MASS = 3.0
BALL_DRAG = 1.0
BALL_DRAG_FACTOR = 1.0 - BALL_DRAG * FIXED_DELTA_TIME
#: The ball's ``SphereCollider`` ``m_Radius`` 41.61146 times its ``m_LocalScale`` 0.015.
BALL_RADIUS = 41.61146 * 0.015
#: ``bounciness`` of ``Bouncy.physicMaterial`` (combine Maximum: also against walls and agents).
BALL_BOUNCINESS = 0.8
#: Unity's default ``Physics.bounceThreshold``: slower contacts do not bounce.
BOUNCE_THRESHOLD = 2.0
#: ``AgentSoccer.k_Power``: the kick's force, added with ``ForceMode.Force`` for one step.
KICK_POWER = 2000.0
#: The ball's velocity change from a kick (units/s).
KICK_SPEED = KICK_POWER * FIXED_DELTA_TIME / BALL_MASS
#: Unity's default contact offset: a touch lasts while the gap stays below it.
CONTACT_OFFSET = 0.01
#: The longest move of one collision sub-step (units).
MAX_SUBSTEP = 0.25
SHOT_SPEED = 30.0
#: Where a shot kickoff starts the ball (x towards the goal it flies at, y).
SHOT_START = np.array([10.0, 3.5])
#: The heuristic's speed limit (units/s), assumed braking (units/s^2), the largest angle
#: (degrees) between its facing and the velocity error at which it pushes, and the velocity
#: error it accepts without pushing.
HEURISTIC_SPEED = 12.0
HEURISTIC_BRAKING = 20.0
HEURISTIC_ALIGN_DEGREES = 30.0
HEURISTIC_TOLERANCE = 1.5
BLUE, PURPLE = 0, 1
TEAM_NAMES = ("Blue", "Purple")
BALL_TAG, OWN_GOAL_TAG, OPPOSING_GOAL_TAG, WALL_TAG, TEAMMATE_TAG, OPPONENT_TAG = range(6)

FORWARD_RAYS = RayPerceptionSpec(
    rays_per_direction=5, max_ray_degrees=60.0, ray_length=20.0, num_tags=6, cast_radius=0.5
)
BACKWARD_RAYS = RayPerceptionSpec(
    rays_per_direction=1,
    max_ray_degrees=45.0,
    ray_length=20.0,
    num_tags=6,
    cast_radius=0.5,
    heading_offset_degrees=180.0,
)

_WALLS = np.array(
    [
        [-CORNER_X, -HALF_WIDTH, CORNER_X, -HALF_WIDTH],
        [-CORNER_X, HALF_WIDTH, CORNER_X, HALF_WIDTH],
        [-HALF_LENGTH, -GOAL_HALF_WIDTH, -CORNER_X, -HALF_WIDTH],
        [-HALF_LENGTH, GOAL_HALF_WIDTH, -CORNER_X, HALF_WIDTH],
        [HALF_LENGTH, -GOAL_HALF_WIDTH, CORNER_X, -HALF_WIDTH],
        [HALF_LENGTH, GOAL_HALF_WIDTH, CORNER_X, HALF_WIDTH],
    ]
)
#: Goal mouths: the goal each team defends (blue at -x, purple at +x).
_GOAL_MOUTHS = np.array(
    [
        [-HALF_LENGTH, -GOAL_HALF_WIDTH, -HALF_LENGTH, GOAL_HALF_WIDTH],
        [HALF_LENGTH, -GOAL_HALF_WIDTH, HALF_LENGTH, GOAL_HALF_WIDTH],
    ]
)
#: The pitch's outline (corner walls included) and colours, for :meth:`SoccerFieldScene.draw`.
_FIELD_OUTLINE = np.array(
    [
        [-CORNER_X, -HALF_WIDTH],
        [CORNER_X, -HALF_WIDTH],
        [HALF_LENGTH, -GOAL_HALF_WIDTH],
        [HALF_LENGTH, GOAL_HALF_WIDTH],
        [CORNER_X, HALF_WIDTH],
        [-CORNER_X, HALF_WIDTH],
        [-HALF_LENGTH, GOAL_HALF_WIDTH],
        [-HALF_LENGTH, -GOAL_HALF_WIDTH],
    ]
)
_PITCH = (0.2, 0.45, 0.25)
_LINES = (0.55, 0.75, 0.55)
#: What stops the players: the walls, and the goal mouths (players stay on the pitch).
_PLAYER_WALLS = np.concatenate([_WALLS, _GOAL_MOUTHS])
#: The goal posts (the front ends of the nets' side panels), each touch of which scores.
_POSTS = np.array(
    [
        [-HALF_LENGTH, -GOAL_HALF_WIDTH],
        [-HALF_LENGTH, GOAL_HALF_WIDTH],
        [HALF_LENGTH, -GOAL_HALF_WIDTH],
        [HALF_LENGTH, GOAL_HALF_WIDTH],
    ]
)
#: The ball's height is frozen at 0.5 (``m_Constraints`` 4) with radius 0.624, so it sinks into
#: the ground and touches a goal floor (a goal) once its centre is this close to the goal line.
FLOOR_CONTACT = float(np.sqrt(BALL_RADIUS**2 - 0.5**2))
#: Starting spots of the four players of a field: blue 0, blue 1, purple 0, purple 1.
#: ``AgentSoccer.Initialize`` moves each striker's prefab spot (x = -+3.19, z = +-1.2) 5 further
#: back; ``SoccerEnvController.ResetScene`` adds a uniform +-5 to x.
_START = np.array([[-8.19, 1.2], [-8.19, -1.2], [8.19, 1.2], [8.19, -1.2]])
START_JITTER = 5.0
_START_HEADING = np.array([0.0, 0.0, np.pi, np.pi])
_KICKOFFS = ("random", "shot_blue", "shot_purple")
_TURN = np.radians(TURN_DEGREES_PER_STEP) * np.array([0.0, 1.0, -1.0])
_AXIS = np.array([0.0, 1.0, -1.0])


class _Walls:
    """Straight walls ``(m, 4)`` (``x0, y0, x1, y1`` each) that discs cannot overlap; no wall's
    line may pass through the origin (the pitch's centre)."""

    def __init__(self, segments: np.ndarray) -> None:
        self.start = segments[:, :2].copy()
        self.along = segments[:, 2:] - segments[:, :2]
        self.inverse_length2 = 1.0 / np.einsum("mi,mi->m", self.along, self.along)
        self._clear_boxes: dict[float, np.ndarray] = {}

    def clear_box(self, radius: float) -> np.ndarray:
        """Half-extents ``(X, Y)`` of a box around the origin where no disc of ``radius`` can
        touch a wall: each corner lies on the origin's side of every wall's line, farther from
        it than ``radius`` (with a margin far above rounding), so the whole box does, and a
        segment is never nearer than its line. The box is the walls' extent scaled down until
        it fits (all zeros when none does)."""
        box = self._clear_boxes.get(radius)
        if box is None:
            normal = np.stack([-self.along[:, 1], self.along[:, 0]], axis=1)
            normal /= np.sqrt(np.einsum("mi,mi->m", normal, normal))[:, None]
            offset = np.einsum("mi,mi->m", normal, self.start)
            normal[offset < 0] *= -1.0  # point away from the origin
            offset = np.abs(offset)
            extent = np.abs(np.concatenate([self.start, self.start + self.along])).max(axis=0)
            room = offset - radius * (1.0 + 1e-6) - 1e-9
            scale = max(0.0, float((room / (np.abs(normal) @ extent)).min()))
            box = self._clear_boxes[radius] = extent * min(scale, 1.0)
        return box

    def push_out(
        self, position: np.ndarray, velocity: np.ndarray, radius: float, bounciness: float
    ) -> None:
        """Discs ``(N, 2)`` of ``radius`` overlapping a wall are moved out along the contact
        normal, in place, wall by wall; the velocity into the wall is removed, or reflected with
        ``bounciness`` above Unity's bounce threshold."""
        # Discs inside the clear box touch no wall; the others are tested wall by wall.
        near = np.flatnonzero((np.abs(position) >= self.clear_box(radius)).any(axis=1))
        if not near.size:
            return
        touching = self._gaps(position[near])[1] < radius * radius
        if not touching.any():  # near the walls, but touching none
            return
        # Only discs touching a wall now can move: one that touches none is pushed by none, so
        # the walls' pushes run on those rows alone (each row's arithmetic is its own).
        rows = near[touching.any(axis=1)]
        touched, moving = position[rows], velocity[rows]
        for wall in np.flatnonzero(touching.any(axis=0)):
            gap, distance2 = self._gaps(touched, int(wall))
            hit = np.flatnonzero(distance2 < radius * radius)
            if not hit.size:  # an earlier wall pushed it clear
                continue
            distance = np.sqrt(distance2[hit])
            normal = gap[hit] / np.maximum(distance, 1e-9)[:, None]
            touched[hit] += normal * (radius - distance)[:, None]
            into = np.maximum(-np.einsum("ij,ij->i", moving[hit], normal), 0.0)
            bounce = np.where(into > BOUNCE_THRESHOLD, bounciness, 0.0)
            moving[hit] += normal * (into * (1.0 + bounce))[:, None]
        position[rows], velocity[rows] = touched, moving

    def _gaps(
        self, position: np.ndarray, wall: int | slice = slice(None)
    ) -> tuple[np.ndarray, np.ndarray]:
        """From the nearest point of each wall (or of ``wall``) to each position: the vector
        and its squared length, ``(N, m, 2)`` and ``(N, m)`` (``(N, 2)``, ``(N,)`` for one)."""
        start, along = self.start[wall], self.along[wall]
        relative = position[:, None, :] - start if start.ndim == 2 else position - start
        t = np.minimum(
            np.maximum((relative * along).sum(-1) * self.inverse_length2[wall], 0.0), 1.0
        )
        gap = relative - t[..., None] * along
        return gap, (gap * gap).sum(-1)


#: Squared centre distance below which two players may overlap (a margin over ``(2 r)^2`` that
#: covers rounding, so the test never misses a pair that :meth:`SoccerFieldScene._collide_players`
#: pushes apart).
_CLOSE_PAIR = (2.0 * AGENT_RADIUS) ** 2 * (1.0 + 1e-6)

#: What stops the ball (the walls) and the players (the walls and the goal lines).
_BALL_BOUNDS = _Walls(_WALLS)
_PLAYER_BOUNDS = _Walls(_PLAYER_WALLS)


class SoccerFieldScene(Scene):
    """The soccer field of ML-Agents' Soccer examples: physics, goals, kickoffs, group rewards.

    Subclasses set the players through class attributes (each a per-player array, players
    ordered team by team: blue's, then purple's) and implement :meth:`behaviors` (one behavior
    per team, ``agents_per_area`` = the team's size) and :meth:`ray_sensors`. Facts of
    ``AgentSoccer`` that differ by ``Position``: ``m_ForwardSpeed`` / ``m_LateralSpeed``
    (Generic 1.0 / 0.3, Striker 1.3 / 0.3, Goalie 1.0 / 1.0), the goalie's kick on every touch
    (``force = k_Power`` whatever it pushed) and the existential reward added in
    ``OnActionReceived`` (Goalie ``+1 / MaxEnvironmentSteps``, Striker ``-1 / MaxEnvironmentSteps``,
    Generic none).
    """

    default_area_count = 8
    fixed_delta_time = FIXED_DELTA_TIME
    draw_size = (320, 176)
    #: The behavior name of each team (blue, purple).
    behavior_names: tuple[str, str] = ("SoccerTwos", "SoccerTwos")
    #: The agents' ``MaxStep``.
    agent_max_step = 0
    #: Players per team (blue, purple).
    team_sizes: tuple[int, ...] = (2, 2)
    #: Starting spot of each player (before the kickoff's x jitter) and its heading.
    start_positions: np.ndarray = _START
    start_headings: np.ndarray = _START_HEADING
    #: ``m_ForwardSpeed`` and ``m_LateralSpeed`` of each player.
    forward_speeds: np.ndarray = np.full(4, FORWARD_SPEED)
    lateral_speeds: np.ndarray = np.full(4, LATERAL_SPEED)
    #: Players whose every new touch of the ball is a kick (goalies).
    always_kicks: np.ndarray = np.zeros(4, dtype=bool)
    #: Existential reward per action, in units of ``1 / MaxEnvironmentSteps`` (+1, -1 or 0).
    existential_signs: np.ndarray = np.zeros(4)
    #: The heuristic's role of each player: chase the ball (True) or guard the own goal.
    chasers: np.ndarray = np.array([True, False, True, False])
    option_specs = (
        SceneOption(
            "max_environment_steps",
            int,
            MAX_ENVIRONMENT_STEPS,
            "steps without a goal before both groups are interrupted (0 = never)",
        ),
        SceneOption(
            "kickoff",
            str,
            "random",
            "random (ball at rest near the centre), shot_blue or shot_purple (a shot into a goal)",
        ),
    )

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """One behavior per team (:attr:`behavior_names`): its ray sensors stacked 3x
        (:meth:`sensor_names`, :meth:`ray_sensors`), discrete (3, 3, 3), decision period 5 with
        actions between, ``agents_per_area`` = the team's size, max step :attr:`agent_max_step`.
        """
        kickoff = str(self.options["kickoff"])
        if kickoff not in _KICKOFFS:
            raise PlayerError(f"kickoff={kickoff!r}: expected one of {', '.join(_KICKOFFS)}")
        if int(self.options["max_environment_steps"]) < 0:
            raise PlayerError("max_environment_steps must be >= 0 (0 = never interrupt)")
        return [
            BehaviorSpec(
                name=self.behavior_names[team],
                team_id=team,
                sensors=tuple(
                    SensorSpec(name, (rays.observation_size,), stack_size=3)
                    for name, rays in zip(
                        self.sensor_names(team), self.ray_sensors(team), strict=True
                    )
                ),
                action_spec=ActionSpec(discrete_branches=(3, 3, 3)),
                agents_per_area=self.team_sizes[team],
                decision=DecisionSettings(period=5, take_actions_between_decisions=True),
                max_step=self.agent_max_step,
            )
            for team in (BLUE, PURPLE)
        ]

    def sensor_names(self, team: int) -> Sequence[str]:
        """The names of the team's ray sensor components (Unity's ``m_SensorName``)."""
        raise NotImplementedError

    def ray_sensors(self, team: int) -> Sequence[RayPerceptionSpec]:
        """The geometry of the team's ray sensors, in the order of :meth:`sensor_names`."""
        raise NotImplementedError

    def ray_tags(self, team: int) -> tuple[int, int, int, int, int, int]:
        """The team's tag index of ball, own goal, opposing goal, wall, teammate, opponent
        (-1: not a detectable tag, so a ray hitting it reports the distance and no tag)."""
        return (BALL_TAG, OWN_GOAL_TAG, OPPOSING_GOAL_TAG, WALL_TAG, TEAMMATE_TAG, OPPONENT_TAG)

    def _players(self, team: int, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The fields and the field's player indices of the team's agents ``slots``."""
        size = self.team_sizes[team]
        return slots // size, sum(self.team_sizes[:team]) + slots % size

    def setup(self, context: SceneContext) -> None:
        """Field state (players team by team, blue first), groups per team."""
        super().setup(context)
        n = context.area_count
        p = len(self.start_positions)
        self.kickoff = str(self.options["kickoff"])
        self.max_environment_steps = int(self.options["max_environment_steps"])
        self.teams = tuple(
            context.batch(f"{self.behavior_names[team]}?team={team}") for team in (BLUE, PURPLE)
        )
        self.position = np.zeros((n, p, 2))
        #: Every pair of a field's players, ``(first, second)`` index arrays in pair order.
        first, second = zip(*combinations(range(p), 2), strict=True)
        self._pair_players = (np.array(first, dtype=np.intp), np.array(second, dtype=np.intp))
        self.velocity = np.zeros((n, p, 2))
        self.heading = np.zeros((n, p))
        self.kicking = np.zeros((n, p), dtype=bool)
        self.touching = np.zeros((n, p), dtype=bool)
        self.ball_touch = np.zeros((n, p))
        self.ball_position = np.zeros((n, 2))
        self.ball_velocity = np.zeros((n, 2))
        self.timer = np.zeros(n, dtype=np.int64)
        groups = context.create_groups(2 * n).reshape(n, 2)
        #: Group id of each field's blue (column 0) and purple (column 1) team.
        self.groups = groups
        for team, batch in enumerate(self.teams):
            batch.set_group(slice(None), np.repeat(groups[:, team], self.team_sizes[team]))
        #: Goals scored by blue and purple since start-up.
        self.goals = np.zeros(2, dtype=np.int64)

    # ---- kickoff and episodes ----------------------------------------------------------------

    def on_environment_reset(self) -> None:
        """Kick off on every field."""
        self._kick_off(np.arange(self.ctx.area_count))

    def _kick_off(self, fields: np.ndarray) -> None:
        """Unity's ``ResetScene``: players near their spots, the ball near the centre."""
        rng = self.ctx.rng
        k = fields.size
        p = len(self.start_positions)
        start = np.broadcast_to(self.start_positions, (k, p, 2)).copy()
        start[:, :, 0] += rng.uniform(-START_JITTER, START_JITTER, size=(k, p))
        self.position[fields] = start
        self.heading[fields] = self.start_headings + np.radians(
            rng.uniform(-10.0, 10.0, size=(k, p))
        )
        self.velocity[fields] = 0.0
        self.touching[fields] = False
        if self.kickoff == "random":
            self.ball_position[fields] = rng.uniform(-2.5, 2.5, size=(k, 2))
            self.ball_velocity[fields] = 0.0
        else:
            direction = 1.0 if self.kickoff == "shot_blue" else -1.0
            self.ball_position[fields] = SHOT_START * [direction, 1.0]
            self.ball_velocity[fields] = [direction * SHOT_SPEED, 0.0]
        self.timer[fields] = 0

    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """Read ``ball_touch`` (the players are placed by the kickoff)."""
        fields, players = self._players(batch.spec.team_id, slots)
        touch = self.ctx.parameters.read_many("ball_touch", 0.0, slots.size)
        self.ball_touch[fields, players] = touch

    # ---- observations and actions ------------------------------------------------------------

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """The team's ray sensors with team-relative tags (:meth:`ray_tags`)."""
        team = batch.spec.team_id
        fields, me = self._players(team, slots)
        size = self.team_sizes[team]
        first = sum(self.team_sizes[:team])
        rival_first = sum(self.team_sizes[: 1 - team])
        ball, own, opposing, wall, teammate, opponent = self.ray_tags(team)
        k = slots.size
        targets = RayTargets(k)
        targets.add_segments(_WALLS, wall)
        targets.add_segments(_GOAL_MOUTHS[team : team + 1], own)
        targets.add_segments(_GOAL_MOUTHS[1 - team : 2 - team], opposing)
        mates = [first + (slots % size + j) % size for j in range(1, size)]
        rivals = range(rival_first, rival_first + self.team_sizes[1 - team])
        bodies = np.stack(
            [self.ball_position[fields]]
            + [self.position[fields, mate] for mate in mates]
            + [self.position[fields, rival] for rival in rivals],
            axis=1,
        )
        radii = np.array([BALL_RADIUS] + [AGENT_RADIUS] * (len(mates) + len(rivals)))
        tags = np.array([ball] + [teammate] * len(mates) + [opponent] * len(rivals))
        targets.add_circles(bodies, radii, tags)
        origins = self.position[fields, me]
        headings = self.heading[fields, me]
        return [rays.perceive(targets, origins, headings) for rays in self.ray_sensors(team)]

    def on_action_received(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        continuous: np.ndarray,
        discrete: np.ndarray,
    ) -> None:
        """The existential reward, then turn, then push forward/back or sideways; pushing forward
        (or being a goalie) makes a touch a kick."""
        fields, players = self._players(batch.spec.team_id, slots)
        signs = self.existential_signs[players]
        if signs.any():
            limit = self.max_environment_steps or MAX_ENVIRONMENT_STEPS
            batch.add_reward(slots, signs / limit)
        action = np.clip(discrete[:, :3], 0, 2)
        heading = self.heading[fields, players] + _TURN[action[:, 2]]
        self.heading[fields, players] = heading
        forward = np.stack([np.cos(heading), np.sin(heading)], axis=1)
        right = np.stack([forward[:, 1], -forward[:, 0]], axis=1)
        # Unity's switch: a sideways action replaces the forward/backward push.
        lateral = (action[:, 1] != 0)[:, None]
        push = np.where(
            lateral,
            right * (self.lateral_speeds[players, None] * _AXIS[action[:, 1], None]),
            forward * (self.forward_speeds[players, None] * _AXIS[action[:, 0], None]),
        )
        self.velocity[fields, players] += push * AGENT_RUN_SPEED
        self.kicking[fields, players] = (action[:, 0] == 1) | self.always_kicks[players]

    # ---- physics, goals and the environment timer --------------------------------------------

    def after_academy_step(self) -> None:
        """The field controller's timer, then physics; goals reward and end the groups."""
        self.timer += 1
        limit = self.max_environment_steps
        expired = np.flatnonzero(self.timer >= limit) if limit > 0 else np.zeros(0, np.intp)
        if expired.size:
            self.ctx.interrupt_group_episode(self.groups[expired].reshape(-1))
            self._kick_off(expired)
        scorer = self._physics_step()
        fields = np.flatnonzero(scorer >= 0)
        if fields.size:
            self._goal(fields, scorer[fields])

    def _goal(self, fields: np.ndarray, scorers: np.ndarray) -> None:
        np.add.at(self.goals, scorers, 1)
        winners = self.groups[fields, scorers]
        losers = self.groups[fields, 1 - scorers]
        limit = self.max_environment_steps or MAX_ENVIRONMENT_STEPS
        self.ctx.add_group_reward(winners, 1.0 - self.timer[fields] / limit)
        self.ctx.add_group_reward(losers, -1.0)
        self.ctx.end_group_episode(self.groups[fields, PURPLE])
        self.ctx.end_group_episode(self.groups[fields, BLUE])
        self._kick_off(fields)

    def _physics_step(self) -> np.ndarray:
        """One 0.02 s step: drag and friction, then sub-stepped moves and contacts.

        Returns:
            Per field, the team whose goal the ball entered (``BLUE`` scores at +x), else -1.
        """
        speed = np.sqrt(np.einsum("fpi,fpi->fp", self.velocity, self.velocity))
        slowed = np.maximum(speed * AGENT_DRAG_FACTOR - FRICTION_PER_STEP, 0.0)
        self.velocity *= np.where(speed > 0.0, slowed / np.maximum(speed, 1e-12), 0.0)[..., None]
        self.ball_velocity *= BALL_DRAG_FACTOR
        ball_speed = np.sqrt(np.einsum("fi,fi->f", self.ball_velocity, self.ball_velocity))
        # A kick can add its speed within the step; the sub-steps cover that too.
        fastest = slowed.max(initial=0.0) + ball_speed.max(initial=0.0) + KICK_SPEED
        substeps = max(1, int(np.ceil(fastest * FIXED_DELTA_TIME / MAX_SUBSTEP)))
        dt = FIXED_DELTA_TIME / substeps
        scorer = np.full(self.ball_position.shape[0], -1)
        new_touch = np.zeros_like(self.touching)
        for _ in range(substeps):
            self.position += self.velocity * dt
            live = scorer < 0
            self.ball_position[live] += self.ball_velocity[live] * dt
            self._collide_players()
            self._wall_players()
            new_touch |= self._collide_ball(live)
            self._wall_ball(live)
            scored = live & self._ball_in_goal()
            scorer[scored] = np.where(self.ball_position[scored, 0] > 0.0, BLUE, PURPLE)
        if new_touch.any():
            self._reward_touches(new_touch)
        return scorer

    def _collide_players(self) -> None:
        """Overlapping players are pushed apart and stop closing (bounciness 0, equal masses),
        pair after pair.

        Only fields where some pair is within :data:`_CLOSE_PAIR` of touching run the pairs:
        in another field no pair overlaps, so none moves a player and none comes to overlap.
        """
        first, second = self._pair_players
        gaps = self.position[:, second] - self.position[:, first]
        close = np.einsum("fki,fki->fk", gaps, gaps) < _CLOSE_PAIR
        fields = np.flatnonzero(close.any(axis=1))
        if not fields.size:
            return
        position, velocity = self.position[fields], self.velocity[fields]
        for a, b in zip(first.tolist(), second.tolist(), strict=True):
            gap = position[:, b] - position[:, a]
            distance = np.sqrt(np.einsum("ij,ij->i", gap, gap))
            overlap = 2.0 * AGENT_RADIUS - distance
            hit = np.flatnonzero(overlap > 0.0)
            if not hit.size:
                continue
            normal = gap[hit] / np.maximum(distance[hit], 1e-9)[:, None]
            half = (overlap[hit] / 2.0)[:, None] * normal
            position[hit, a] -= half
            position[hit, b] += half
            relative = velocity[hit, b] - velocity[hit, a]
            closing = np.minimum(np.einsum("ij,ij->i", relative, normal), 0.0)[:, None] * normal
            velocity[hit, a] += closing / 2.0
            velocity[hit, b] -= closing / 2.0
        self.position[fields], self.velocity[fields] = position, velocity

    def _wall_players(self) -> None:
        """The walls and the goal lines stop the players (the velocity into a wall is removed)."""
        flat_position = self.position.reshape(-1, 2)
        flat_velocity = self.velocity.reshape(-1, 2)
        _PLAYER_BOUNDS.push_out(flat_position, flat_velocity, AGENT_RADIUS, 0.0)

    def _collide_ball(self, live: np.ndarray) -> np.ndarray:
        """Ball-player contacts: the contact impulse by masses, a kick on a new touch.

        Args:
            live: fields whose ball is still in play this step.

        Returns:
            ``(fields, players)``: the players that started touching the ball in this sub-step.
        """
        gap = self.ball_position[:, None, :] - self.position
        distance = np.sqrt(np.einsum("fpi,fpi->fp", gap, gap))
        reach = AGENT_RADIUS + BALL_RADIUS
        contact = (distance < reach + CONTACT_OFFSET) & live[:, None]
        new_touch = contact & ~self.touching
        self.touching = contact
        for player in range(self.position.shape[1]):
            hit = np.flatnonzero(contact[:, player] & (distance[:, player] < reach))
            if not hit.size:
                continue
            normal = gap[hit, player] / np.maximum(distance[hit, player], 1e-9)[:, None]
            self.ball_position[hit] = self.position[hit, player] + normal * reach
            relative = self.ball_velocity[hit] - self.velocity[hit, player]
            closing = np.minimum(np.einsum("ij,ij->i", relative, normal), 0.0)
            bounce = np.where(-closing > BOUNCE_THRESHOLD, BALL_BOUNCINESS, 0.0)
            # Impulse j along the normal: the ball gets j / BALL_MASS, the player -j / AGENT_MASS.
            impulse = -(1.0 + bounce) * closing / (1.0 / BALL_MASS + 1.0 / AGENT_MASS)
            self.ball_velocity[hit] += normal * (impulse / BALL_MASS)[:, None]
            self.velocity[hit, player] -= normal * (impulse / AGENT_MASS)[:, None]
        kicks = new_touch & self.kicking
        if kicks.any():
            for player in range(self.position.shape[1]):
                hit = np.flatnonzero(kicks[:, player])
                if hit.size:
                    normal = gap[hit, player] / np.maximum(distance[hit, player], 1e-9)[:, None]
                    self.ball_velocity[hit] += normal * KICK_SPEED
        return new_touch

    def _wall_ball(self, live: np.ndarray) -> None:
        """The side and corner walls bounce the ball (the goal mouths let it through)."""
        if live.all():  # the usual case: push the arrays in place
            _BALL_BOUNDS.push_out(
                self.ball_position, self.ball_velocity, BALL_RADIUS, BALL_BOUNCINESS
            )
            return
        fields = np.flatnonzero(live)
        position, velocity = self.ball_position[fields], self.ball_velocity[fields]
        _BALL_BOUNDS.push_out(position, velocity, BALL_RADIUS, BALL_BOUNCINESS)
        self.ball_position[fields], self.ball_velocity[fields] = position, velocity

    def _ball_in_goal(self) -> np.ndarray:
        """Per field: the ball touches a goal (Unity's ``OnCollisionEnter`` with a goal-tagged
        collider): a goal floor, once its centre is within :data:`FLOOR_CONTACT` of the goal
        line inside the mouth, or a goal post."""
        ball = self.ball_position
        floor = (np.abs(ball[:, 0]) > HALF_LENGTH - FLOOR_CONTACT) & (
            np.abs(ball[:, 1]) < GOAL_HALF_WIDTH
        )
        gap = ball[:, None, :] - _POSTS
        post = (np.einsum("fpi,fpi->fp", gap, gap) < (BALL_RADIUS + CONTACT_OFFSET) ** 2).any(1)
        return floor | post

    def _reward_touches(self, new_touch: np.ndarray) -> None:
        rewarded = new_touch & (self.ball_touch != 0.0)
        if not rewarded.any():
            return
        for team, batch in enumerate(self.teams):
            size = self.team_sizes[team]
            for index in range(size):
                player = sum(self.team_sizes[:team]) + index
                fields = np.flatnonzero(rewarded[:, player])
                if fields.size:
                    batch.add_reward(size * fields + index, 0.2 * self.ball_touch[fields, player])

    # ---- heuristic ---------------------------------------------------------------------------

    def draw(self, area: int, size: tuple[int, int]) -> np.ndarray:
        """The field from above: blue defends the left goal, purple the right one; the ball."""
        canvas = render.Canvas(
            *size, (-HALF_LENGTH - 1.0, -HALF_WIDTH, HALF_LENGTH + 1.0, HALF_WIDTH)
        )
        canvas.polygon(_FIELD_OUTLINE, _PITCH)
        canvas.segments([0.0, -HALF_WIDTH, 0.0, HALF_WIDTH], _LINES, width=1)
        canvas.segments(_WALLS, render.WHITE, width=2)
        for team, colour in enumerate((render.BLUE, render.PURPLE)):
            canvas.segments(_GOAL_MOUTHS[team], colour, width=4)
        blue = self.team_sizes[0]
        for player in range(self.position.shape[1]):
            canvas.agent(
                self.position[area, player],
                AGENT_RADIUS,
                float(self.heading[area, player]),
                render.BLUE if player < blue else render.PURPLE,
            )
        canvas.circle(self.ball_position[area], BALL_RADIUS, render.WHITE, min_pixels=5)
        return canvas.picture()

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Chasers (:attr:`chasers`) get behind the ball and kick it at the goal; the others guard
        the own goal.

        Both steer their velocity (at most ``HEURISTIC_SPEED``, braking near the target): push
        forward or back when the velocity error lies along the facing, else turn towards it.
        """
        team = batch.spec.team_id
        fields, players = self._players(team, slots)
        chaser = self.chasers[players]
        me = self.position[fields, players]
        ball = self.ball_position[fields]
        attack = 1.0 if team == BLUE else -1.0
        goal = np.array([attack * HALF_LENGTH, 0.0])
        own_goal = -goal
        to_goal = goal - ball
        to_goal /= np.maximum(np.linalg.norm(to_goal, axis=1, keepdims=True), 1e-9)
        offset = me - ball
        behind = np.einsum("ij,ij->i", offset, to_goal) < -0.3
        across = np.abs(to_goal[:, 0] * offset[:, 1] - to_goal[:, 1] * offset[:, 0]) < 0.8
        side = np.stack([-to_goal[:, 1], to_goal[:, 0]], axis=1)
        side *= np.where(np.einsum("ij,ij->i", offset, side) >= 0.0, 1.0, -1.0)[:, None]
        chase = np.where(
            (behind & across)[:, None],
            ball + to_goal,
            np.where(
                behind[:, None],
                ball - 1.5 * to_goal,
                ball - 1.5 * to_goal + 1.5 * side,
            ),
        )
        guard = own_goal + 0.25 * (ball - own_goal)
        target = np.where(chaser[:, None], chase, guard)
        wanted = target - me
        distance = np.sqrt(np.einsum("ij,ij->i", wanted, wanted))
        # Steer the velocity: towards the target at up to the cap, slow enough to stop there;
        # lined up behind the ball, run through it at full cap (the touch is a kick).
        cap = np.minimum(HEURISTIC_SPEED, np.sqrt(2.0 * HEURISTIC_BRAKING * distance))
        cap = np.where(chaser & behind & across, HEURISTIC_SPEED, cap)
        error = wanted / np.maximum(distance, 1e-9)[:, None] * cap[:, None]
        error -= self.velocity[fields, players]
        heading = self.heading[fields, players]
        facing = np.stack([np.cos(heading), np.sin(heading)], axis=1)
        along = np.einsum("ij,ij->i", error, facing)
        size = np.sqrt(np.einsum("ij,ij->i", error, error))
        aligned = along > size * np.cos(np.radians(HEURISTIC_ALIGN_DEGREES))
        reversed_ = along < -size * np.cos(np.radians(HEURISTIC_ALIGN_DEGREES))
        acting = size > HEURISTIC_TOLERANCE
        forward = np.where(acting & aligned, 1, np.where(acting & reversed_, 2, 0))
        # Turn so that the error lies along the facing (either way round).
        angle = np.arctan2(error[:, 1], error[:, 0]) - heading
        angle = (angle + np.pi / 2.0) % np.pi - np.pi / 2.0
        turn = np.where(np.abs(angle) < np.radians(3.0), 0, np.where(angle > 0.0, 1, 2))
        actions = np.stack([forward, np.zeros_like(forward), turn], axis=1).astype(np.int32)
        return np.zeros((slots.size, 0), np.float32), actions


@register_scene
class SoccerTwosScene(SoccerFieldScene):
    """2 vs 2 soccer with multi-agent group rewards; 8 fields."""

    name = "SoccerTwos"
    summary = "2 vs 2 soccer, group rewards (stacked rays 264+72, discrete 3x3x3, 32 agents)"

    def sensor_names(self, team: int) -> Sequence[str]:
        """``<Team>RayPerceptionSensor`` and ``<Team>RayPerceptionSensorReverse``."""
        return (
            f"{TEAM_NAMES[team]}RayPerceptionSensor",
            f"{TEAM_NAMES[team]}RayPerceptionSensorReverse",
        )

    def ray_sensors(self, team: int) -> Sequence[RayPerceptionSpec]:
        """11 rays over +-60 degrees ahead and 3 over +-45 degrees behind, 6 tags each."""
        return (FORWARD_RAYS, BACKWARD_RAYS)
