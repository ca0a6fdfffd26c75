"""WallJump: get over a wall to the goal (ML-Agents' ``WallJump`` scene), in 2-D plus height.

Behaviors ``SmallWallJump?team=0`` and ``BigWallJump?team=0``, 24 areas. Both have the Unity
agent's sensors, each stacked over 6 reports (wire order):
``StackingSensor_size6_OffsetRayPerceptionSensor`` (210,),
``StackingSensor_size6_RayPerceptionSensor`` (210,) and ``StackingSensor_size6_VectorSensor_size4``
(24,). A ray report is 7 rays (forward, then +-30, +-60, +-90 degrees) x (3 tags ``wall``,
``goal``, ``block`` + no-hit flag + hit fraction), 20 long with a cast radius of 0.5, in Unity's
layout (:mod:`unity_gym.player.raycast`). The vector is the agent's position relative to the
ground over 20 (Unity's x, height, z) and a grounded flag. Four discrete branches (3, 3, 3, 2):
forward/backward, turn left/right, strafe left/right (replaces the forward move, as in Unity), jump.
Decision period 5 with actions between decisions, max step 2000. Every executed action adds
-0.0005; reaching the goal (on the ground) sets the reward to +1 and ends the episode; the agent or
the block leaving the platform sets it to -1 and ends the episode.

Behavior switching. Unity's agent changes behavior with ``SetModel`` when a new episode draws its
wall: configuration 0 (of 0..4, uniform) has no wall (``no_wall_height``, default 0) and 1 a small
wall (``small_wall_height``, 4), both under ``SmallWallJump``; 2, 3 and 4 have a big wall
(``big_wall_height``, 8) under ``BigWallJump``. The player cannot move an agent between behaviors,
so every area holds one agent of each behavior sharing one body, and only the *active* one (the
behavior of the area's current wall) requests decisions (the scene's own decision requester); the
other is dormant and sends nothing. Switching happens only at episode begin, right after the active
agent's terminal report, so each behavior sees complete episodes; the two agents have different
ids (Unity keeps one id). The parameters are read once per episode begin, for the drawn
configuration only. The 2000-step limit is enforced by the scene on the active agent (an
interruption, like Unity's ``MaxStep``); the behavior specs therefore declare no ``max_step``.
Option ``walls=small`` (or ``big``) draws only configurations 0-1 (2-4), so that one behavior
alone ever decides (the PettingZoo front reads both behaviors from the scene's declaration, see
:func:`unity_gym.game.catalogue.scene_behaviors`). The player's
``Player/Episode Length/<behavior>`` statistic also counts the steps an agent was
dormant since its previous episode.

Layout (Unity's z is y here; heights are above the floor's top). The prefab's ``Ground`` collider is
disabled; the walkable surface is its child ``Border`` (a box 21 x 1 x 21 whose top is at 0.45), so
the platform is x in [-10.5, 10.5], y in [-14.5, 6.5], without rails. The wall (a cube of scale
(20, height, 1.5) centred at y = -1.98 on the area's origin) is a strip 1.5 deep whose top is
``height / 2 - 0.45`` above the floor; it stops agent and block across the whole platform (Unity's
wall is 20 wide, the 0.5 left at each side being too narrow for the agent's 1-unit box). The goal
is a trigger 4 x 4 (5 high) at (6.37, 2.93); the block (``shortBlock``) a 3 x 3 square whose top
is 2.05 above the floor. An episode puts the agent at (U(-9, 9), -12) with its velocity zeroed,
keeps its heading (facing away from the wall at start-up, as in the prefab), puts the block at a
random spot of the spawn area in front of the wall and stops it. The ground rays start at the
agent's centre and see what is higher than that; the offset rays start 2.5 units higher and so see
only walls higher than that (the big wall) and the goal, never the block (Unity tilts them upwards
by 2.5 over their length; not modelled).

Movement, from ml-agents ``Project/Assets/ML-Agents/Examples/WallJump``
(``Scripts/WallJumpAgent.cs``, ``Prefabs/WallJumpArea.prefab``, ``Scenes/WallJump.unity``) and
Unity's Rigidbody as the Hallway, PushBlock and Pyramids scenes model it. ``MoveAgent`` runs on
every 0.02 s physics step (``DecisionRequester``: period 5, actions between decisions):

* Ground checks, before anything moves. ``DoGroundCheck(true)`` casts a ray from 0.05 below the
  agent's centre 1 unit down onto a surface tagged ``walkableSurface``, ``block`` or ``wall``
  (floor, block top, wall top): the agent is *small-grounded* when the surface under its centre is
  at most 0.55 below its box (``GROUNDED_GAP``); that allows a jump, is the vector observation's
  flag and is needed at the goal. ``DoGroundCheck(false)`` overlaps a box 0.95 x 1 x 0.95 shifted
  0.05 down: *large-grounded* when a surface is at most 0.05 below the agent
  (``LARGE_GROUNDED_GAP``).
* Forward/backward pushes along the facing, strafing (action 1 left, 2 right, at 0.6, replacing
  the forward push) sideways, both halved when not large-grounded; the push is computed on the
  facing *before* this step's turn. Turning (action 1 left, 2 right) is ``Time.fixedDeltaTime *
  300`` = 6 degrees per step. The push is ``AddForce(dirToGo * agentRunSpeed,
  ForceMode.VelocityChange)`` with ``agentRunSpeed`` 3 (``WallJumpSettings`` in ``WallJump.unity``).
* Jump (action 1) when small-grounded and ``jumpingTime <= 0``: ``jumpingTime = 0.2`` and the jump
  starts at the current height. While ``jumpingTime > 0`` (counted down by 0.02 per step in
  float32: 11 steps) ``MoveTowards`` *sets* the velocity: the 3-D velocity moves towards
  ``fixedDeltaTime * agentJumpVelocity * (target - centre)`` by at most
  ``agentJumpVelocityMaxChange``, the target being ``agentJumpHeight`` (2.75) above the jump's
  start, shifted horizontally by ``dirToGo``; ``agentJumpVelocity`` 777 and
  ``agentJumpVelocityMaxChange`` 10 (``WallJumpSettings``). The push (a force) acts in the physics
  step after that, on top of the set velocity.
* Not jumping and not large-grounded: ``AddForce(Vector3.down * fallingForce,
  ForceMode.Acceleration)`` with ``fallingForce`` 111 (the prefab's agent).

Then the physics step: gravity 9.81 x ``gravityMultiplier`` 2.75 (the scene's
``ProjectSettingsOverrides``, ``fixedDeltaTime`` 0.02), the agent's Rigidbody drag 2 keeping
``1 - 2 * 0.02`` of its velocity (all three components; mass 25, rotation about x and z frozen),
and friction: agent, ground, block and wall colliders all have no physic material
(``m_Material: {fileID: 0}``), so Unity's default applies (dynamic friction 0.6, combine
Average). A surface under the agent removes the velocity into it, ``v_n`` (at least
``g * dt``, a resting agent's weight), and kinetic friction takes ``0.6 * v_n`` off the horizontal
speed, never reversing it: ``0.6 * 26.98 * 0.02`` = 0.32 units/s per step on the ground, much
more on landing from a fall. Holding "forward" on flat ground approaches
``(3 * 0.96 - 0.32) / 0.04`` = 64 units/s (1.28 units per step); a jump rises about 2.6 units
in 11 steps and lands about 21 steps after take-off. So the agent jumps onto the block (2.05) and
over the small wall (1.55), but over the big wall (3.55) only from the block pushed against it.
The block's Rigidbody (mass 10, drag 1) is frozen in height and rotation at 0.05 above the floor
(its spawn height is 0.45 above the spawn volume's 1.05): it touches nothing below, so it slides
without friction, keeping ``1 - 1 * 0.02`` of its speed per step. An agent lower than the block's
top running into it shares its speed along the contact normal with it as a perfectly inelastic
contact of masses 25 and 10 (Unity's default bounciness is 0); the wall stops agent and block
(the velocity into the wall is removed). Motion is integrated in sub-steps of at most 0.25 units
of horizontal travel (heights are checked at each), so nothing passes through a wall or the block
at any speed. This is a simplified PhysX model, not checked against a Unity build.

Simplifications (a 2-D-plus-height model, not PhysX): the agent is a disc of radius 0.5 (a 1 x 1 x 1
box in Unity) supported by what is under its centre; an agent standing on the block does not drag
it along by friction, and sliding along a wall has no friction; the agent does not tip or spin;
``jumpingTime`` is reset at episode begin (Unity keeps a jump running into the next episode).
The reward conditions follow Unity: the goal counts when the agent's disc overlaps the goal square
(``OnTriggerStay``) while small-grounded; the agent or the block counts as off the platform when
no surface is below its centre (the 20-unit downward rays of ``OnActionReceived``).

The scripted ``heuristic`` reads the area's state. It runs at the wall (slower near it) and jumps
close to it; a wall higher than a jump from the floor reaches it takes the block: round the block
to the spot behind it, push it to the wall, jump onto it, walk to the wall and jump onto the wall.
Elsewhere it passes the block at a distance (a kick sends it sliding off the platform). Each
decision picks the move and turn whose velocity after the decision period comes closest to the
one it wants, keeping off the platform's edges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..academy import AgentBatch, SceneContext
from ..errors import PlayerError
from ..raycast import RayPerceptionSpec, RayTargets
from ..render import BLUE, FLOOR, GREEN, ORANGE, WALL, WHITE, Canvas, mix
from ..specs import ActionSpec, BehaviorSpec, SensorSpec
from .base import Scene, SceneOption
from .pushblock import disc_box_contact
from .registry import register_scene

__all__ = [
    "AGENT_DRAG",
    "AGENT_JUMP_HEIGHT",
    "AGENT_RUN_SPEED",
    "BLOCK_DRAG",
    "DEFAULT_MATERIAL_FRICTION",
    "GRAVITY",
    "WallJumpScene",
    "flat_ground_speed",
    "wall_top",
]

SMALL, BIG = "SmallWallJump", "BigWallJump"
BEHAVIOR_NAMES = (SMALL, BIG)
MAX_STEP = 2000
DECISION_PERIOD = 5
STACK = 6
STEP_PENALTY = 0.0005
FIXED_DELTA_TIME = 0.02
#: Environment parameters and their defaults (Unity's ``WallJumpAgent``).
NO_WALL_DEFAULT, SMALL_WALL_DEFAULT, BIG_WALL_DEFAULT = 0.0, 4.0, 8.0

#: World height of the floor's top (the ``Border`` collider: centred at -0.05, 1 high).
FLOOR_TOP = 0.45
#: Half sides of the ``Border`` collider (21 x 21, centred at z = -4).
PLATFORM_X = 10.5
PLATFORM_Y = (-14.5, 6.5)
WALL_Y = -1.98
WALL_LOW, WALL_HIGH = WALL_Y - 0.75, WALL_Y + 0.75
#: Half width of Unity's wall (scale x 20), for the rays.
WALL_HALF_WIDTH = 10.0
GOAL_CENTRE = np.array([6.37, 2.93])
GOAL_HALF = 2.0
#: The goal trigger spans world heights 0.49 to 5.49.
GOAL_TOP = 5.49 - FLOOR_TOP
BLOCK_HALF = 1.5
#: The block spans world heights 0.5 to 2.5 (frozen there).
BLOCK_TOP = 2.5 - FLOOR_TOP
BLOCK_SPAWN_X = 8.1
BLOCK_SPAWN_Y = (-9.77, WALL_LOW - BLOCK_HALF - 0.05)
AGENT_RADIUS = 0.5
AGENT_START_Y = -12.0
AGENT_START_X = 9.0
#: ``WallJumpSettings.agentRunSpeed`` (WallJump.unity): the velocity change of one step's push.
AGENT_RUN_SPEED = 3.0
#: ``WallJumpSettings.agentJumpHeight``, ``agentJumpVelocity`` and ``agentJumpVelocityMaxChange``.
AGENT_JUMP_HEIGHT = 2.75
AGENT_JUMP_VELOCITY = 777.0
AGENT_JUMP_VELOCITY_MAX_CHANGE = 10.0
#: ``WallJumpAgent.Jump`` sets ``jumpingTime`` to 0.2 s.
JUMPING_TIME = 0.2
#: ``fallingForce`` of the prefab's agent: a downward acceleration when in the air, not jumping.
FALLING_FORCE = 111.0
#: The push factor when not large-grounded, and strafing's factor (``WallJumpAgent.MoveAgent``).
AIR_FACTOR = 0.5
STRAFE_FACTOR = 0.6
#: ``transform.Rotate(.., Time.fixedDeltaTime * 300f)``: 6 degrees per step.
TURN_DEGREES_PER_STEP = 300.0 * FIXED_DELTA_TIME
#: Agent Rigidbody ``m_Mass: 25``, ``m_Drag: 2``; block ``m_Mass: 10``, ``m_Drag: 1``
#: (WallJumpArea.prefab).
AGENT_MASS = 25.0
AGENT_DRAG = 2.0
BLOCK_MASS = 10.0
BLOCK_DRAG = 1.0
#: Unity's ``Physics.gravity`` and the scene's ``gravityMultiplier`` (WallJump.unity).
GRAVITY = 9.81
GRAVITY_MULTIPLIER = 2.75
G = GRAVITY * GRAVITY_MULTIPLIER
#: Dynamic friction of Unity's default physic material (every collider here, combine Average).
DEFAULT_MATERIAL_FRICTION = 0.6
#: ``DoGroundCheck(true)``: a 1-unit ray from 0.05 below the centre reaches 0.55 below the box.
GROUNDED_GAP = 0.55
#: ``DoGroundCheck(false)``: a box reaching 0.05 below the agent's box.
LARGE_GROUNDED_GAP = 0.05
ON_SURFACE = 1e-6
STEP_UP = 0.05
OFFSET_RAY_RISE = 2.5
#: Largest relative travel (units) of one integration sub-step, and the most sub-steps.
MAX_SUBSTEP = 0.25
MAX_SUBSTEPS = 16
WALL_TAG, GOAL_TAG, BLOCK_TAG = 0, 1, 2

#: Both ray fans (the offset one starts 2.5 units higher).
RAYS = RayPerceptionSpec(
    rays_per_direction=3, max_ray_degrees=90.0, ray_length=20.0, num_tags=3, cast_radius=0.5
)
_WALL_HALF = np.array([[WALL_HALF_WIDTH, 0.75]])
_WALL_CENTRE = np.array([[0.0, WALL_Y]])
_BLOCK_EXTENT = np.array([[BLOCK_HALF, BLOCK_HALF]])
_GOAL_EXTENT = np.array([GOAL_HALF, GOAL_HALF])
#: Wall configurations drawn at episode begin, by the ``walls`` option.
_CONFIGURATIONS = {
    "any": np.arange(5),
    "small": np.array([0, 1]),
    "big": np.array([2, 3, 4]),
}


def _unit(angles: np.ndarray) -> np.ndarray:
    return np.stack([np.cos(angles), np.sin(angles)], axis=-1)


def wall_top(height: np.ndarray | float) -> np.ndarray:
    """Height of the wall's top above the floor for Unity's wall scale ``height``."""
    return np.maximum(np.asarray(height, dtype=np.float64) / 2.0 - FLOOR_TOP, 0.0)


def flat_ground_speed(pushes: int) -> float:
    """Speed (units/s) after ``pushes`` steps of "forward" from rest on flat ground (closed form).

    Each step ``v' = (v + 3) (1 - drag dt) - mu g dt``, so with ``k = 1 - drag dt`` and
    ``c = 3 k - mu g dt``: ``v_n = c (1 - k^n) / (1 - k)``.
    """
    kept = 1.0 - AGENT_DRAG * FIXED_DELTA_TIME
    gain = AGENT_RUN_SPEED * kept - DEFAULT_MATERIAL_FRICTION * G * FIXED_DELTA_TIME
    return gain * (1.0 - kept**pushes) / (1.0 - kept)


def _move_towards(current: np.ndarray, target: np.ndarray, max_delta: float) -> np.ndarray:
    """Unity's ``Vector3.MoveTowards`` for rows of vectors."""
    delta = target - current
    distance = np.sqrt(np.einsum("ij,ij->i", delta, delta))
    scale = np.where(distance > max_delta, max_delta / np.maximum(distance, 1e-12), 1.0)
    return current + delta * scale[:, None]


def _rub(velocity: np.ndarray, loss: np.ndarray) -> np.ndarray:
    """Horizontal velocities ``(k, 2)`` with ``loss`` (``(k,)``, >= 0) taken off their speed."""
    speed = np.sqrt(np.einsum("ij,ij->i", velocity, velocity))
    kept = np.maximum(speed - loss, 0.0)
    return velocity * (kept / np.maximum(speed, 1e-12))[:, None]


def _stop_at_wall(
    position: np.ndarray,
    velocity: np.ndarray,
    half: float,
    present: np.ndarray,
    side_y: np.ndarray,
) -> np.ndarray:
    """Stop bodies ``(k, 2)`` of half depth ``half`` that overlap the wall strip where
    ``present``: each is put back on the side of the wall that ``side_y`` is on and loses its
    velocity into the wall (bounciness 0). Modifies ``position`` and ``velocity`` in place.

    Returns:
        ``(k,)``: which bodies the wall holds.
    """
    below = side_y < WALL_Y
    held = present & (position[:, 1] + half > WALL_LOW) & (position[:, 1] - half < WALL_HIGH)
    position[:, 1] = np.where(
        held, np.where(below, WALL_LOW - half, WALL_HIGH + half), position[:, 1]
    )
    into = held & np.where(below, velocity[:, 1] > 0.0, velocity[:, 1] < 0.0)
    velocity[:, 1] = np.where(into, 0.0, velocity[:, 1])
    return held


@register_scene
class WallJumpScene(Scene):
    """Jump (or climb the block) over a wall to the goal; two behaviors chosen by wall height."""

    name = "WallJump"
    summary = (
        "jump over a wall to the goal (SmallWallJump/BigWallJump by wall height, "
        "rays 210+210 + vector 24, discrete (3,3,3,2), 24 areas)"
    )
    default_area_count = 24
    draw_size = (240, 240)
    fixed_delta_time = FIXED_DELTA_TIME
    option_specs = (
        SceneOption(
            "walls",
            str,
            "any",
            "any (Unity: configurations 0-4), small (0-1: SmallWallJump only) or big "
            "(2-4: BigWallJump only, for trainers that need a fixed set of agents)",
        ),
    )

    def __init__(
        self, options: Mapping[str, object] | None = None, *, num_agents: int | None = None
    ) -> None:
        super().__init__(options, num_agents=num_agents)
        walls = str(self.options["walls"]).strip().lower()
        if walls not in _CONFIGURATIONS:
            raise PlayerError(
                f"scene {self.name}: option walls={walls!r} must be one of "
                f"{', '.join(_CONFIGURATIONS)}"
            )
        self._configurations = _CONFIGURATIONS[walls]

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """Two behaviors with the same sensors and actions; the scene requests decisions."""
        size = RAYS.observation_size
        return [
            BehaviorSpec(
                name=name,
                sensors=(
                    SensorSpec("RayPerceptionSensor", (size,), stack_size=STACK),
                    SensorSpec("OffsetRayPerceptionSensor", (size,), stack_size=STACK),
                    SensorSpec("VectorSensor_size4", (4,), stack_size=STACK),
                ),
                action_spec=ActionSpec(discrete_branches=(3, 3, 3, 2)),
                decision=None,
                max_step=0,
            )
            for name in BEHAVIOR_NAMES
        ]

    def setup(self, context: SceneContext) -> None:
        """Per-area body, wall and block state."""
        super().setup(context)
        n = context.area_count
        #: The agent: position, horizontal velocity, height of its box's bottom above the floor
        #: and vertical velocity, heading (counter-clockwise from +x).
        self.position = np.zeros((n, 2))
        self.velocity = np.zeros((n, 2))
        self.elevation = np.zeros(n)
        self.vertical_speed = np.zeros(n)
        self.heading = np.full(n, -np.pi / 2)
        #: ``jumpingTime`` (float32, as Unity counts it down) and the height a jump started at.
        self.jumping_time = np.zeros(n, dtype=np.float32)
        self.jump_start = np.zeros(n)
        #: This step's velocity change (the push) and whether the falling force acts.
        self.push = np.zeros((n, 2))
        self.falling = np.zeros(n, dtype=bool)
        self.block = np.zeros((n, 2))
        self.block_velocity = np.zeros((n, 2))
        #: Wall configuration (0 none, 1 small, 2-4 big) and wall top above the floor.
        self.configuration = np.zeros(n, dtype=np.int64)
        self.wall = np.zeros(n)
        #: Index into :data:`BEHAVIOR_NAMES` of the behavior that decides in each area.
        self.active = np.zeros(n, dtype=np.int64)
        #: Actions of the current episode (the scene's max-step counter).
        self.episode_steps = np.zeros(n, dtype=np.int64)
        #: Goals reached and falls since start-up (for statistics and tests).
        self.goals = 0
        self.falls = 0
        self._reset_pending = np.zeros(n, dtype=np.int64)

    # ---- episodes ----------------------------------------------------------------------------

    def on_environment_reset(self) -> None:
        """Every behavior's batch begins an episode next; the first one starts the areas."""
        self._reset_pending[:] = len(BEHAVIOR_NAMES)

    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """Start a new area episode when the area's active agent begins one (or at a reset)."""
        behavior = BEHAVIOR_NAMES.index(batch.spec.name)
        pending = self._reset_pending[slots] > 0
        first = slots[pending & (self._reset_pending[slots] == len(BEHAVIOR_NAMES))]
        self._reset_pending[slots[pending]] -= 1
        rest = slots[~pending]
        self._begin_areas(np.concatenate([first, rest[self.active[rest] == behavior]]))

    def _begin_areas(self, areas: np.ndarray) -> None:
        """Draw the wall (reading its parameter) and the behavior; place agent and block."""
        k = areas.size
        if not k:
            return
        rng = self.ctx.rng
        params = self.ctx.parameters
        configuration = rng.choice(self._configurations, size=k)
        height = np.zeros(k)
        for mask, key, default in (
            (configuration == 0, "no_wall_height", NO_WALL_DEFAULT),
            (configuration == 1, "small_wall_height", SMALL_WALL_DEFAULT),
            (configuration >= 2, "big_wall_height", BIG_WALL_DEFAULT),
        ):
            count = int(mask.sum())
            if count:
                height[mask] = params.read_many(key, default, count)
        self.configuration[areas] = configuration
        self.wall[areas] = wall_top(height)
        self.active[areas] = np.where(configuration >= 2, 1, 0)
        self.position[areas, 0] = rng.uniform(-AGENT_START_X, AGENT_START_X, size=k)
        self.position[areas, 1] = AGENT_START_Y
        self.velocity[areas] = 0.0
        self.elevation[areas] = 0.0
        self.vertical_speed[areas] = 0.0
        self.jumping_time[areas] = 0.0
        self.push[areas] = 0.0
        self.falling[areas] = False
        self.block[areas, 0] = rng.uniform(-BLOCK_SPAWN_X, BLOCK_SPAWN_X, size=k)
        self.block[areas, 1] = rng.uniform(*BLOCK_SPAWN_Y, size=k)
        self.block_velocity[areas] = 0.0
        self.episode_steps[areas] = 0

    def before_academy_step(self, academy_step: int) -> None:
        """The active agents' decision requester: a decision every 5 steps, actions between."""
        deciding = academy_step % DECISION_PERIOD == 0
        for index, name in enumerate(BEHAVIOR_NAMES):
            batch = self.ctx.batch(name)
            slots = np.flatnonzero(self.active == index)
            if deciding:
                batch.request_decision(slots)
            else:
                batch.request_action(slots)

    # ---- observations ------------------------------------------------------------------------

    def support(self, position: np.ndarray, areas: np.ndarray) -> np.ndarray:
        """Height of the surface under points ``position`` (``-inf`` off the platform)."""
        height = np.where(_on_platform(position), 0.0, -np.inf)
        over_wall = np.abs(position[:, 1] - WALL_Y) <= 0.75
        height = np.where(over_wall, np.maximum(height, self.wall[areas]), height)
        offset = np.abs(position - self.block[areas])
        over_block = (offset <= BLOCK_HALF).all(axis=1)
        return np.where(over_block, np.maximum(height, BLOCK_TOP), height)

    def _gap(self, areas: np.ndarray) -> np.ndarray:
        """Height of the agents' boxes above the surface under their centres."""
        return self.elevation[areas] - self.support(self.position[areas], areas)

    def _grounded(self, areas: np.ndarray) -> np.ndarray:
        """``DoGroundCheck(true)``: a surface at most 0.55 below the agent's box."""
        return self._gap(areas) <= GROUNDED_GAP

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """Ground rays, offset rays (each seeing what is higher than its start) and the vector."""
        k = slots.size
        origins = self.position[slots]
        headings = self.heading[slots]
        elevation = self.elevation[slots]
        wall = self.wall[slots]
        fans = []
        for rise in (0.0, OFFSET_RAY_RISE):
            start = elevation + AGENT_RADIUS + rise
            targets = RayTargets(k)
            targets.add_boxes(_WALL_CENTRE, _WALL_HALF, WALL_TAG, active=(wall > start)[:, None])
            targets.add_boxes(
                GOAL_CENTRE[None],
                _GOAL_EXTENT[None],
                GOAL_TAG,
                active=(start < GOAL_TOP)[:, None],
            )
            targets.add_boxes(
                self.block[slots, None, :],
                _BLOCK_EXTENT,
                BLOCK_TAG,
                active=(start < BLOCK_TOP)[:, None],
            )
            fans.append(RAYS.perceive(targets, origins, headings))
        # Unity: the agent's centre minus the ground's position (0, 0, -4), over 20.
        vector = np.stack(
            [
                origins[:, 0] / 20.0,
                (elevation + AGENT_RADIUS + FLOOR_TOP) / 20.0,
                (origins[:, 1] + 4.0) / 20.0,
                self._grounded(slots).astype(np.float64),
            ],
            axis=1,
        )
        return [fans[0], fans[1], vector]

    # ---- actions and physics -----------------------------------------------------------------

    def on_action_received(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        continuous: np.ndarray,
        discrete: np.ndarray,
    ) -> None:
        """``WallJumpAgent.MoveAgent``: ground checks, push, turn, jump, falling force; -0.0005
        per action; the scene's 2000-step limit."""
        if not slots.size:
            return
        forward_action, turn_action, side_action, jump_action = (discrete[:, i] for i in range(4))
        gap = self._gap(slots)
        small_grounded = gap <= GROUNDED_GAP
        large_grounded = gap <= LARGE_GROUNDED_GAP
        # The push uses the facing before this step's turn.
        heading = self.heading[slots]
        forward = _unit(heading)
        right = np.stack([forward[:, 1], -forward[:, 0]], axis=1)
        along = np.select([forward_action == 1, forward_action == 2], [1.0, -1.0], 0.0)
        side = np.select([side_action == 1, side_action == 2], [-STRAFE_FACTOR, STRAFE_FACTOR], 0.0)
        direction = np.where(
            (side_action > 0)[:, None], right * side[:, None], forward * along[:, None]
        )
        direction *= np.where(large_grounded, 1.0, AIR_FACTOR)[:, None]
        jumps = (jump_action == 1) & (self.jumping_time[slots] <= 0.0) & small_grounded
        self.jumping_time[slots] = np.where(
            jumps, np.float32(JUMPING_TIME), self.jumping_time[slots]
        )
        self.jump_start[slots] = np.where(jumps, self.elevation[slots], self.jump_start[slots])
        turn = np.select([turn_action == 1, turn_action == 2], [1.0, -1.0], 0.0)
        self.heading[slots] = heading + np.radians(TURN_DEGREES_PER_STEP) * turn
        self.push[slots] = direction * AGENT_RUN_SPEED
        # While jumping the velocity is set towards the jump's target (the push comes on top).
        jumping = self.jumping_time[slots] > 0.0
        if jumping.any():
            rows = slots[jumping]
            scale = FIXED_DELTA_TIME * AGENT_JUMP_VELOCITY
            rise = self.jump_start[rows] + AGENT_JUMP_HEIGHT - self.elevation[rows]
            target = np.column_stack([direction[jumping] * scale, rise * scale])
            current = np.column_stack([self.velocity[rows], self.vertical_speed[rows]])
            moved = _move_towards(current, target, AGENT_JUMP_VELOCITY_MAX_CHANGE)
            self.velocity[rows] = moved[:, :2]
            self.vertical_speed[rows] = moved[:, 2]
        self.falling[slots] = ~jumping & ~large_grounded
        self.jumping_time[slots] -= np.float32(FIXED_DELTA_TIME)
        batch.add_reward(slots, -STEP_PENALTY)
        self.episode_steps[slots] += 1
        over = slots[self.episode_steps[slots] >= MAX_STEP]
        if over.size:
            batch.interrupt_episode(over)

    def after_academy_step(self) -> None:
        """One physics step: pushes, gravity, drag and friction, then the move in sub-steps with
        the wall, the block and landings; score goals and falls."""
        n = self.position.shape[0]
        areas = np.arange(n)
        dt = self.fixed_delta_time
        kept = 1.0 - AGENT_DRAG * dt
        velocity = (self.velocity + self.push) * kept
        fall = G + np.where(self.falling, FALLING_FORCE, 0.0)
        vertical = (self.vertical_speed - fall * dt) * kept
        block_velocity = self.block_velocity * (1.0 - BLOCK_DRAG * dt)
        self.push[:] = 0.0
        self.falling[:] = False
        position, elevation, block = self.position.copy(), self.elevation.copy(), self.block.copy()
        # Resting on a surface: it holds the agent's weight (or stops its fall); friction.
        support = self.support(position, areas)
        resting = (elevation - support <= ON_SURFACE) & (vertical <= 0.0)
        pressed = np.where(resting, np.maximum(-vertical, G * dt), 0.0)
        velocity = _rub(velocity, DEFAULT_MATERIAL_FRICTION * pressed)
        vertical = np.where(resting, 0.0, vertical)
        # Sub-steps by horizontal travel (heights are checked against the surface at each).
        fastest = np.sqrt(np.einsum("ij,ij->i", velocity, velocity)).max(initial=0.0) + np.sqrt(
            np.einsum("ij,ij->i", block_velocity, block_velocity)
        ).max(initial=0.0)
        substeps = int(np.clip(np.ceil(fastest * dt / MAX_SUBSTEP), 1, MAX_SUBSTEPS))
        h = dt / substeps
        wall_present = self.wall > 0.0
        for _ in range(substeps):
            old = position
            position = position + velocity * h
            block = block + block_velocity * h
            # The wall stops an agent lower than its top.
            _stop_at_wall(
                position, velocity, AGENT_RADIUS, self.wall > elevation + ON_SURFACE, old[:, 1]
            )
            # An agent lower than the block's top running into it: a perfectly inelastic contact.
            low = elevation < BLOCK_TOP - STEP_UP
            normal, depth = disc_box_contact(position, block, BLOCK_HALF)
            touching = low & (depth > 0.0)
            closing = -np.einsum("ij,ij->i", velocity - block_velocity, normal)
            impulse = np.where(touching & (closing > 0.0), closing, 0.0) * (
                AGENT_MASS * BLOCK_MASS / (AGENT_MASS + BLOCK_MASS)
            )
            velocity = velocity + normal * (impulse / AGENT_MASS)[:, None]
            block_velocity = block_velocity - normal * (impulse / BLOCK_MASS)[:, None]
            block = block - normal * np.where(touching, depth, 0.0)[:, None]
            # The wall stops the block.
            blocked = _stop_at_wall(block, block_velocity, BLOCK_HALF, wall_present, block[:, 1])
            # A block stopped by the wall stops the agent in turn.
            if (touching & blocked).any():
                normal, depth = disc_box_contact(position, block, BLOCK_HALF)
                touching = low & (depth > 0.0)
                position = position + normal * np.where(touching, depth, 0.0)[:, None]
                closing = -np.einsum("ij,ij->i", velocity - block_velocity, normal)
                velocity = (
                    velocity + normal * np.where(touching, np.maximum(closing, 0.0), 0.0)[:, None]
                )
            # Height: rise or fall; land on the surface below (friction from the landing).
            support = self.support(position, areas)
            airborne = (elevation > support + ON_SURFACE) | (vertical > 0.0)
            elevation = np.where(airborne, elevation + vertical * h, elevation)
            landed = (elevation <= support) & np.isfinite(support)
            impact = np.where(landed, np.maximum(-vertical, 0.0), 0.0)
            velocity = _rub(velocity, DEFAULT_MATERIAL_FRICTION * impact)
            elevation = np.where(landed, support, elevation)
            vertical = np.where(landed, 0.0, vertical)
        self.position, self.velocity = position, velocity
        self.elevation, self.vertical_speed = elevation, vertical
        self.block, self.block_velocity = block, block_velocity
        self._score()

    def _score(self) -> None:
        """-1 for the agent or the block off the platform, +1 for the agent on the goal."""
        areas = np.arange(self.position.shape[0])
        fell = ~np.isfinite(self.support(self.position, areas)) | ~_on_platform(self.block)
        _, depth = disc_box_contact(
            self.position, np.broadcast_to(GOAL_CENTRE, self.position.shape), _GOAL_EXTENT
        )
        on_goal = depth > 0.0
        scored = on_goal & self._grounded(areas) & ~fell
        self.falls += int(fell.sum())
        self.goals += int(scored.sum())
        for reward, mask in ((-1.0, fell), (1.0, scored)):
            ended = np.flatnonzero(mask)
            if not ended.size:
                continue
            active = self.active[ended]
            for index, name in enumerate(BEHAVIOR_NAMES):
                slots = ended[active == index]
                if slots.size:
                    batch = self.ctx.batch(name)
                    batch.set_reward(slots, reward)
                    batch.end_episode(slots)

    # ---- heuristic ---------------------------------------------------------------------------

    def draw(self, area: int, size: tuple[int, int]) -> np.ndarray:
        """The platform from above: the wall across it (brighter the higher, its height written
        on it), the goal (green), the block (orange) and the agent (lighter the higher it is);
        the behavior deciding is written at the bottom."""
        low, high = PLATFORM_Y
        canvas = Canvas(*size, (-PLATFORM_X, low, PLATFORM_X, high))
        canvas.rectangle((0.0, (low + high) / 2.0), (PLATFORM_X, (high - low) / 2.0), FLOOR)
        height = float(self.wall[area])
        if height > 0.0:
            shade = mix(FLOOR, WALL, 0.3 + 0.1 * height)
            canvas.rectangle(_WALL_CENTRE[0], _WALL_HALF[0], shade)
            canvas.text((0.0, WALL_Y), f"wall {height:.2f}", (0.1, 0.1, 0.1), size=11)
        canvas.rectangle(GOAL_CENTRE, (GOAL_HALF, GOAL_HALF), GREEN)
        canvas.rectangle(self.block[area], (BLOCK_HALF, BLOCK_HALF), ORANGE)
        lift = mix(BLUE, WHITE, float(self.elevation[area]) / 4.0)
        canvas.agent(self.position[area], AGENT_RADIUS, float(self.heading[area]), lift)
        name = BEHAVIOR_NAMES[int(self.active[area])]
        canvas.text((0.0, low + 0.8), name, WHITE, size=11)
        return canvas.picture()

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Privileged script: jump low walls; for high ones push the block to the wall, climb it
        and jump from it onto the wall.

        Each decision sets a wanted velocity (and facing) for the phase the area is in, keeps it
        off the platform's edges, then picks the move and turn whose velocity after a decision
        period comes closest (:func:`_choose_moves`); jumps, and the forward push while crossing
        something, override the move. The block is passed at a distance: it slides without
        friction, so a kick sideways can send it off the platform.
        """
        k = slots.size
        agent = self.position[slots]
        x, y = agent[:, 0], agent[:, 1]
        elevation = self.elevation[slots]
        wall = self.wall[slots]
        block = self.block[slots]
        gap = self._gap(slots)
        north = np.full(k, np.pi / 2)
        south_face = block[:, 1] - BLOCK_HALF
        north_face = block[:, 1] + BLOCK_HALF
        dx = block[:, 0] - x
        on_wall = (wall > 0.0) & (np.abs(y - WALL_Y) <= 0.75) & (elevation >= wall - STEP_UP)
        past = (wall <= 0.0) | on_wall | (y > WALL_Y)
        need_block = ~past & (wall > _JUMPABLE)
        low_wall = ~past & ~need_block
        face_gap = WALL_LOW - (y + AGENT_RADIUS)
        block_gap = south_face - (y + AGENT_RADIUS)

        # Without the block: to the goal, or over a low wall nearly straight on ...
        aim = np.repeat(GOAL_CENTRE[None], k, axis=0)
        cross_x = x + np.clip(GOAL_CENTRE[0] - x, -_CROSSING_DRIFT, _CROSSING_DRIFT)
        aim = np.where(
            low_wall[:, None], np.stack([cross_x, np.full(k, WALL_HIGH + 1.0)], axis=1), aim
        )
        # ... round the block, through a lane beside it.
        below = ~need_block & (y - AGENT_RADIUS < north_face)
        rise = np.maximum(aim[:, 1] - y, 1e-6)
        x_at_block = x + np.clip((block[:, 1] - y) / rise, 0.0, 1.0) * (aim[:, 0] - x)
        in_way = below & ((np.abs(x_at_block - block[:, 0]) < _LANE) | (np.abs(dx) < _LANE))
        # Level with the block (or nearly): moving sideways would touch it. Each waypoint below,
        # once reached (within ``_REACHED``), ends the state that chose it.
        level = y + AGENT_RADIUS > south_face - _CLEARANCE
        behind = np.maximum(south_face - _STAGING, PLATFORM_Y[0] + _EDGE_ROOM)
        side = np.where(dx <= 0.0, 1.0, -1.0)
        side = _lane_side(block[:, 0], side)
        lane_x = block[:, 0] + side * _LANE
        wrong_side = (np.where(dx <= 0.0, 1.0, -1.0) != side) & (np.abs(dx) < _LANE)
        in_lane = (np.abs(dx) >= _LANE - _REACHED - 0.2) & ~wrong_side
        detour = np.where(
            in_lane[:, None],
            np.stack([lane_x, north_face + AGENT_RADIUS + _REACHED + 0.4], axis=1),
            np.stack([lane_x, np.where(level, y, behind)], axis=1),
        )
        detour = np.where((wrong_side & level)[:, None], np.stack([x, behind], axis=1), detour)
        aim = np.where(in_way[:, None], detour, aim)
        to_aim = aim - agent
        top = np.where(low_wall & (face_gap < _SLOW_DOWN_DISTANCE), _WALL_SPEED, _RUN_SPEED)
        wanted = _towards(to_aim, top, np.where(past & ~in_way, _RUN_SPEED, _ROAM_GAIN))
        facing = np.arctan2(to_aim[:, 1], to_aim[:, 0])
        jump = low_wall & (~in_way | in_lane) & (face_gap < _JUMP_REACH)
        crossing = low_wall & (face_gap < _SLOW_DOWN_DISTANCE)
        # Stuck right behind the block: jump onto it (and on from there).
        jump |= (
            low_wall
            & (elevation < BLOCK_TOP - STEP_UP)
            & (np.abs(dx) < _COLUMN_HALF)
            & (block_gap > -0.2)
            & (block_gap < 0.3)
        )

        # A high wall: the block first.
        at_wall = north_face >= WALL_LOW - 0.15
        over_block = (np.abs(agent - block) <= BLOCK_HALF).all(axis=1)
        on_block = need_block & over_block & (elevation >= BLOCK_TOP - STEP_UP)
        column = (
            need_block
            & ~on_block
            & (y + AGENT_RADIUS <= south_face + 0.3)
            & (np.abs(dx) < _COLUMN_HALF)
        )
        lateral = np.clip(_LATERAL_GAIN * dx, -_LATERAL_SPEED, _LATERAL_SPEED)
        # On the block at the wall: walk to the wall and jump onto it.
        leap = on_block & at_wall
        # Behind the block: push it to the wall, or (there already) jump onto it.
        climb = column & at_wall
        push = column & ~at_wall
        ahead_speed = np.where(push, _PUSH_SPEED, _CLIMB_SPEED)
        straight = np.stack([lateral, ahead_speed], axis=1)
        wanted = np.where((leap | column)[:, None], straight, wanted)
        jump |= leap & (face_gap < _LEAP_REACH)
        jump |= climb & (block_gap < _CLIMB_REACH)
        # Elsewhere (or on a block away from the wall): round the block to the spot behind it.
        roam = need_block & ~leap & ~column
        waypoint = np.stack([block[:, 0], behind], axis=1)
        waypoint = np.where(level[:, None], np.stack([lane_x, behind], axis=1), waypoint)
        waypoint = np.where((level & ~in_lane)[:, None], np.stack([lane_x, y], axis=1), waypoint)
        waypoint = np.where((level & wrong_side)[:, None], np.stack([x, behind], axis=1), waypoint)
        to_waypoint = waypoint - agent
        wanted = np.where(roam[:, None], _towards(to_waypoint, _RUN_SPEED, _ROAM_GAIN), wanted)
        # Face the way to a far waypoint, else the wall.
        far = roam & (np.sqrt(np.einsum("ij,ij->i", to_waypoint, to_waypoint)) > _FACE_WAYPOINT)
        facing = np.where(
            need_block,
            np.where(far, np.arctan2(to_waypoint[:, 1], to_waypoint[:, 0]), north),
            facing,
        )

        # Keep off the platform's edges.
        low_corner = np.array([-PLATFORM_X, PLATFORM_Y[0]]) + _EDGE_MARGIN
        high_corner = np.array([PLATFORM_X, PLATFORM_Y[1]]) - _EDGE_MARGIN
        wanted = np.clip(
            wanted, _EDGE_GAIN * (low_corner - agent), _EDGE_GAIN * (high_corner - agent)
        )
        # Jump only facing the obstacle; push forward while crossing it.
        error = (facing - self.heading[slots] + np.pi) % (2.0 * np.pi) - np.pi
        jump &= (np.abs(error) < np.radians(_JUMP_ALIGN_DEGREES)) & (gap <= GROUNDED_GAP)
        airborne = gap > LARGE_GROUNDED_GAP
        hold = jump | (airborne & (crossing | leap | climb | on_block))
        move, turn = _choose_moves(
            self.velocity[slots], self.heading[slots], wanted, facing, ~airborne
        )
        move = np.where(hold, 1, move)
        actions = np.zeros((k, 4), dtype=np.int32)
        actions[:, 0] = np.where(move <= 2, move, 0)
        actions[:, 1] = turn
        actions[:, 2] = np.where(move >= 3, move - 2, 0)
        actions[:, 3] = jump.astype(np.int32)
        return np.zeros((k, 0), np.float32), actions


#: Heuristic settings: the highest wall it jumps from the floor (a jump rises about 2.6), speeds
#: (units/s), gains (1/s), distances (units) and the facing error (degrees) it jumps within.
_JUMPABLE = 2.2
_RUN_SPEED = 14.0
_WALL_SPEED = 8.0
_SLOW_DOWN_DISTANCE = 4.0
_CROSSING_DRIFT = 2.0
_FACE_WAYPOINT = 1.5
_JUMP_REACH = 1.0
_CLIMB_SPEED = 10.0
_PUSH_SPEED = 9.0
_CLIMB_REACH = 0.7
_LEAP_REACH = 0.7
_COLUMN_HALF = 1.0
_LATERAL_GAIN = 4.0
_LATERAL_SPEED = 3.0
_LANE = BLOCK_HALF + AGENT_RADIUS + 1.2
_STAGING = 1.5
_CLEARANCE = 0.2
_ROAM_GAIN = 3.0
_LEAST_SPEED = 8.0
_REACHED = 0.6
_EDGE_MARGIN = 0.8
_EDGE_GAIN = 8.0
_EDGE_ROOM = 1.3
_JUMP_ALIGN_DEGREES = 25.0
#: Weight (units/s per radian) of the facing error against the velocity error.
_FACING_WEIGHT = 4.0
#: (forward, leftward) push factors of the heuristic's moves: none, forward, backward, strafe
#: left (side action 1), strafe right (side action 2); and the turns (branch 1 values).
_MOVES = np.array(
    [[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [0.0, STRAFE_FACTOR], [0.0, -STRAFE_FACTOR]]
)
_TURNS = np.array([0.0, 1.0, -1.0])


def _lane_side(block_x: np.ndarray, side: np.ndarray) -> np.ndarray:
    """``side`` (+-1) of the block to pass on, turned over where that lane leaves the platform."""
    outside = np.abs(block_x + side * _LANE) > PLATFORM_X - _EDGE_ROOM
    return np.where(outside, -side, side)


def _towards(offset: np.ndarray, top: float | np.ndarray, gain: float | np.ndarray) -> np.ndarray:
    """Velocities ``(k, 2)`` along ``offset``: ``gain`` times its length, at least
    ``_LEAST_SPEED`` (a decision's pushes cannot do less) and at most ``top``; none within
    ``_REACHED`` of it."""
    distance = np.sqrt(np.einsum("ij,ij->i", offset, offset))
    speed = np.where(distance > _REACHED, np.clip(gain * distance, _LEAST_SPEED, top), 0.0)
    return offset * (speed / np.maximum(distance, 1e-9))[:, None]


def _choose_moves(
    velocity: np.ndarray,
    heading: np.ndarray,
    wanted: np.ndarray,
    facing: np.ndarray,
    grounded: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The move (index into ``_MOVES``) and turn (branch value) per agent whose velocity after a
    decision period is closest to ``wanted``, plus ``_FACING_WEIGHT`` times the facing error.

    The prediction repeats one step of ``MoveAgent`` and the physics on flat ground: the push on
    the facing before the turn, drag, and friction when ``grounded`` (else half the push).
    """
    k = velocity.shape[0]
    factor = (np.where(grounded, 1.0, AIR_FACTOR) * AGENT_RUN_SPEED)[:, None, None]
    loss = np.where(grounded, DEFAULT_MATERIAL_FRICTION * G * FIXED_DELTA_TIME, 0.0)[:, None]
    kept = 1.0 - AGENT_DRAG * FIXED_DELTA_TIME
    # Every (move, turn) pair at once: (k, moves * turns, ...).
    ahead = np.repeat(_MOVES[:, 0], len(_TURNS))[None, :, None]
    leftward = np.repeat(_MOVES[:, 1], len(_TURNS))[None, :, None]
    turn = np.tile(_TURNS, len(_MOVES))[None, :] * np.radians(TURN_DEGREES_PER_STEP)
    v = np.repeat(velocity[:, None, :], ahead.shape[1], axis=1)
    h = np.repeat(heading[:, None], ahead.shape[1], axis=1)
    for _ in range(DECISION_PERIOD):
        forward = np.stack([np.cos(h), np.sin(h)], axis=-1)
        left = np.stack([-forward[..., 1], forward[..., 0]], axis=-1)
        v = (v + (forward * ahead + left * leftward) * factor) * kept
        speed = np.sqrt(np.einsum("kcj,kcj->kc", v, v))
        v = v * (np.maximum(speed - loss, 0.0) / np.maximum(speed, 1e-12))[..., None]
        h = h + turn
    error = (facing[:, None] - h + np.pi) % (2.0 * np.pi) - np.pi
    costs = np.linalg.norm(v - wanted[:, None, :], axis=-1) + _FACING_WEIGHT * np.abs(error)
    best = np.argmin(costs.reshape(k, -1), axis=1)
    return best // len(_TURNS), best % len(_TURNS)


def _on_platform(points: np.ndarray) -> np.ndarray:
    return (
        (np.abs(points[:, 0]) <= PLATFORM_X)
        & (points[:, 1] >= PLATFORM_Y[0])
        & (points[:, 1] <= PLATFORM_Y[1])
    )
