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
:func:`unity_gym.registration.scene_behaviors`). The player's
``Player/Episode Length/<behavior>`` statistic also counts the steps an agent was
dormant since its previous episode.

Physics (simpler than PhysX): a 20 x 20 platform (x in [-10, 10], y in [-14, 6], Unity's z as y)
without rails. The wall is a strip across the platform at y = -1.98, 1.5 deep, whose top is
``height / 2 - 0.5`` above the floor (Unity's wall, of that height, is centred half a unit below
the floor's top). The goal is a 4 x 4 square at (6.37, 2.93); the block a 3 x 3 square, 2 high,
that the agent pushes kinematically and can stand on; walls stop the block. The agent is a disc of
radius 0.5 with a height above the floor: it runs at up to 8 units/s (half the push in the air),
turns 6 degrees per step and jumps (only from a surface) up to 2.75 units under a gravity of 20. So
it can jump onto the block and over a wall up to 2.75 high (the small wall's 1.5), and over the big
wall (3.5) only from the block pushed against the wall. An episode puts the agent at (U(-9, 9),
-12), keeps its heading (facing away from the wall at start-up, as in the prefab) and puts the
block at a random spot of the spawn area in front of the wall. The ground rays start at the agent's
centre and see what is higher than that; the offset rays start 2.5 units higher and so see only
walls higher than that (the big wall) and the goal (5 high), never the block.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..academy import AgentBatch, SceneContext
from ..errors import PlayerError
from ..raycast import RayPerceptionSpec, RayTargets
from ..specs import ActionSpec, BehaviorSpec, SensorSpec
from .base import Scene, SceneOption
from .pushblock import disc_box_contact
from .registry import register_scene

__all__ = ["WallJumpScene"]

SMALL, BIG = "SmallWallJump", "BigWallJump"
BEHAVIOR_NAMES = (SMALL, BIG)
MAX_STEP = 2000
DECISION_PERIOD = 5
STACK = 6
STEP_PENALTY = 0.0005
#: Environment parameters and their defaults (Unity's ``WallJumpAgent``).
NO_WALL_DEFAULT, SMALL_WALL_DEFAULT, BIG_WALL_DEFAULT = 0.0, 4.0, 8.0

PLATFORM_X = 10.0
PLATFORM_Y = (-14.0, 6.0)
WALL_Y = -1.98
WALL_LOW, WALL_HIGH = WALL_Y - 0.75, WALL_Y + 0.75
GOAL_CENTRE = np.array([6.37, 2.93])
GOAL_HALF = 2.0
GOAL_TOP = 5.0
BLOCK_HALF = 1.5
BLOCK_TOP = 2.0
BLOCK_SPAWN_X = 8.1
BLOCK_SPAWN_Y = (-9.77, WALL_LOW - BLOCK_HALF - 0.05)
AGENT_RADIUS = 0.5
AGENT_START_Y = -12.0
AGENT_START_X = 9.0
RUN_SPEED = 8.0
AGENT_DAMPING = 0.9  # velocity kept per step; a push adds (1 - damping) * run speed
AIR_FACTOR = 0.5
STRAFE_FACTOR = 0.6
TURN_DEGREES_PER_STEP = 6.0
JUMP_HEIGHT = 2.75
GRAVITY = 20.0
JUMP_SPEED = float(np.sqrt(2.0 * GRAVITY * JUMP_HEIGHT))
#: Gap below which the agent counts as grounded (Unity's short downward ray).
GROUNDED_GAP = 0.45
ON_SURFACE = 1e-6
STEP_UP = 0.05
OFFSET_RAY_RISE = 2.5
WALL_TAG, GOAL_TAG, BLOCK_TAG = 0, 1, 2

#: Both ray fans (the offset one starts 2.5 units higher).
RAYS = RayPerceptionSpec(
    rays_per_direction=3, max_ray_degrees=90.0, ray_length=20.0, num_tags=3, cast_radius=0.5
)
_WALL_HALF = np.array([[PLATFORM_X, 0.75]])
_WALL_CENTRE = np.array([[0.0, WALL_Y]])
_BLOCK_EXTENT = np.array([[BLOCK_HALF, BLOCK_HALF]])
#: Wall configurations drawn at episode begin, by the ``walls`` option.
_CONFIGURATIONS = {
    "any": np.arange(5),
    "small": np.array([0, 1]),
    "big": np.array([2, 3, 4]),
}


def _unit(angles: np.ndarray) -> np.ndarray:
    return np.stack([np.cos(angles), np.sin(angles)], axis=-1)


def wall_top(height: np.ndarray) -> np.ndarray:
    """Height of the wall's top above the floor for Unity's wall scale ``height``."""
    return np.maximum(np.asarray(height, dtype=np.float64) / 2.0 - 0.5, 0.0)


@register_scene
class WallJumpScene(Scene):
    """Jump (or climb the block) over a wall to the goal; two behaviors chosen by wall height."""

    name = "WallJump"
    summary = (
        "jump over a wall to the goal (SmallWallJump/BigWallJump by wall height, "
        "rays 210+210 + vector 24, discrete (3,3,3,2), 24 areas)"
    )
    default_area_count = 24
    fixed_delta_time = 0.02
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
        self.position = np.zeros((n, 2))
        self.velocity = np.zeros((n, 2))
        self.elevation = np.zeros(n)
        self.vertical_speed = np.zeros(n)
        self.heading = np.full(n, -np.pi / 2)
        self.block = np.zeros((n, 2))
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
        self.block[areas, 0] = rng.uniform(-BLOCK_SPAWN_X, BLOCK_SPAWN_X, size=k)
        self.block[areas, 1] = rng.uniform(*BLOCK_SPAWN_Y, size=k)
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
        """Height of the surface under discs centred at ``position`` (``-inf`` off the platform)."""
        x, y = position[:, 0], position[:, 1]
        on_platform = (np.abs(x) <= PLATFORM_X) & (y >= PLATFORM_Y[0]) & (y <= PLATFORM_Y[1])
        height = np.where(on_platform, 0.0, -np.inf)
        over_wall = np.abs(y - WALL_Y) <= 0.75
        height = np.where(over_wall, np.maximum(height, self.wall[areas]), height)
        offset = np.abs(position - self.block[areas])
        over_block = (offset <= BLOCK_HALF).all(axis=1)
        return np.where(over_block, np.maximum(height, BLOCK_TOP), height)

    def _grounded(self, areas: np.ndarray) -> np.ndarray:
        gap = self.elevation[areas] - self.support(self.position[areas], areas)
        return gap < GROUNDED_GAP

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
                np.array([[GOAL_HALF, GOAL_HALF]]),
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
        vector = np.stack(
            [
                origins[:, 0] / 20.0,
                (elevation + 1.0) / 20.0,
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
        """Turn, push, jump; -0.0005 per action; the scene's 2000-step limit."""
        if not slots.size:
            return
        forward_action, turn_action, side_action, jump_action = (discrete[:, i] for i in range(4))
        turn = np.select([turn_action == 1, turn_action == 2], [1.0, -1.0], 0.0)
        heading = self.heading[slots] + np.radians(TURN_DEGREES_PER_STEP) * turn
        self.heading[slots] = heading
        forward = _unit(heading)
        right = np.stack([forward[:, 1], -forward[:, 0]], axis=1)
        along = np.select([forward_action == 1, forward_action == 2], [1.0, -1.0], 0.0)
        side = np.select([side_action == 1, side_action == 2], [-STRAFE_FACTOR, STRAFE_FACTOR], 0.0)
        direction = np.where(
            (side_action > 0)[:, None], right * side[:, None], forward * along[:, None]
        )
        gap = self.elevation[slots] - self.support(self.position[slots], slots)
        on_surface = gap <= ON_SURFACE
        factor = np.where(on_surface, 1.0, AIR_FACTOR)
        self.velocity[slots] += direction * (RUN_SPEED * (1.0 - AGENT_DAMPING) * factor)[:, None]
        jumping = (jump_action == 1) & on_surface & (self.vertical_speed[slots] <= 0.0)
        self.vertical_speed[slots] = np.where(jumping, JUMP_SPEED, self.vertical_speed[slots])
        batch.add_reward(slots, -STEP_PENALTY)
        self.episode_steps[slots] += 1
        over = slots[self.episode_steps[slots] >= MAX_STEP]
        if over.size:
            batch.interrupt_episode(over)

    def after_academy_step(self) -> None:
        """Move bodies and blocks; score goals and falls."""
        n = self.position.shape[0]
        areas = np.arange(n)
        dt = self.fixed_delta_time
        elevation = self.elevation
        old = self.position
        new = old + self.velocity * dt
        velocity = self.velocity * AGENT_DAMPING
        # The wall stops an agent lower than its top.
        wall_up = self.wall > elevation + ON_SURFACE
        into_wall = (
            wall_up & (new[:, 1] + AGENT_RADIUS > WALL_LOW) & (new[:, 1] - AGENT_RADIUS < WALL_HIGH)
        )
        below = old[:, 1] < WALL_Y
        new[:, 1] = np.where(
            into_wall, np.where(below, WALL_LOW - AGENT_RADIUS, WALL_HIGH + AGENT_RADIUS), new[:, 1]
        )
        velocity[into_wall, 1] = 0.0
        # An agent lower than the block's top pushes it; walls stop the block.
        low = elevation < BLOCK_TOP - STEP_UP
        normal, depth = disc_box_contact(new, self.block, BLOCK_HALF)
        depth = np.where(low, depth, 0.0)
        block = self.block - normal * depth[:, None]
        blocked = (
            (self.wall > 0.0)
            & (block[:, 1] + BLOCK_HALF > WALL_LOW)
            & (block[:, 1] - BLOCK_HALF < WALL_HIGH)
        )
        block[:, 1] = np.where(
            blocked,
            np.where(self.block[:, 1] < WALL_Y, WALL_LOW - BLOCK_HALF, WALL_HIGH + BLOCK_HALF),
            block[:, 1],
        )
        normal, depth = disc_box_contact(new, block, BLOCK_HALF)
        depth = np.where(low, depth, 0.0)
        new += normal * depth[:, None]
        pressing = np.einsum("ij,ij->i", velocity, normal)
        velocity -= normal * np.where(depth > 0.0, np.minimum(pressing, 0.0), 0.0)[:, None]
        self.block = block
        self.position = new
        self.velocity = velocity
        # Height: fall under gravity, land on the surface below.
        support = self.support(new, areas)
        speed = self.vertical_speed
        falling = (elevation > support + ON_SURFACE) | (speed > 0.0)
        speed = np.where(falling, speed - GRAVITY * dt, 0.0)
        elevation = elevation + speed * dt
        landed = elevation <= support
        self.elevation = np.where(
            landed, np.where(np.isfinite(support), support, elevation), elevation
        )
        self.vertical_speed = np.where(landed, 0.0, speed)
        self._score()

    def _score(self) -> None:
        """-1 for the agent or the block off the platform, +1 for the agent on the goal."""
        areas = np.arange(self.position.shape[0])
        fell = ~np.isfinite(self.support(self.position, areas)) | ~_on_platform(self.block)
        on_goal = (np.abs(self.position - GOAL_CENTRE) <= GOAL_HALF).all(axis=1)
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

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Privileged script: jump low walls; for high ones push the block to the wall, climb
        it and jump from it (lined up behind the block, facing the wall, strafing to align)."""
        agent = self.position[slots]
        block = self.block[slots]
        wall = self.wall[slots]
        heading = self.heading[slots]
        past = agent[:, 1] - AGENT_RADIUS > WALL_HIGH
        need_block = (wall > JUMP_HEIGHT - 0.35) & ~past
        # Low walls (or none): run to the goal, jump just before the wall.
        target = np.repeat(GOAL_CENTRE[None], slots.size, axis=0)
        jump = (wall > 0.0) & ~past & (agent[:, 1] > WALL_LOW - 1.6) & (agent[:, 1] < WALL_LOW)
        # High walls: the column behind the block, facing the wall.
        face = block[:, 1] - BLOCK_HALF
        dx = agent[:, 0] - block[:, 0]
        on_block = self.elevation[slots] >= BLOCK_TOP - STEP_UP
        at_wall = block[:, 1] + BLOCK_HALF >= WALL_LOW - 0.15
        column = on_block | ((agent[:, 1] < face - AGENT_RADIUS + 0.25) & (np.abs(dx) < 1.2))
        side = np.where(dx >= 0.0, 1.0, -1.0)
        side = np.where(np.abs(block[:, 0] + side * 2.8) > PLATFORM_X - 0.8, -side, side)
        side_x = block[:, 0] + side * 2.8
        start = np.stack([block[:, 0], face - 1.3], axis=1)
        beside = (agent[:, 1] >= face - AGENT_RADIUS + 0.25) & (np.abs(dx) < BLOCK_HALF + 1.0)
        approach = np.where(
            beside[:, None],
            np.stack([side_x, agent[:, 1]], axis=1),
            np.where(
                (agent[:, 1] >= face - AGENT_RADIUS + 0.25)[:, None],
                np.stack([side_x, face - 1.3], axis=1),
                start,
            ),
        )
        target = np.where((need_block & ~column)[:, None], approach, target)
        error = (np.pi / 2 - heading + np.pi) % (2.0 * np.pi) - np.pi
        facing = np.abs(error) < np.radians(15.0)
        climb = at_wall & facing & (np.abs(dx) < 0.5) & (agent[:, 1] > face - 1.7)
        leap = on_block & facing & (agent[:, 1] > WALL_LOW - 1.3)
        jump = np.where(need_block, np.where(column, climb | leap, False), jump)

        wanted = target - agent
        angle = np.arctan2(wanted[:, 1], wanted[:, 0]) - heading
        angle = (angle + np.pi) % (2.0 * np.pi) - np.pi
        lined = need_block & column
        angle = np.where(lined, error, angle)
        actions = np.zeros((slots.size, 4), dtype=np.int32)
        actions[:, 0] = np.where(np.abs(angle) < np.radians(45.0), 1, 0)
        actions[:, 1] = np.where(np.abs(angle) > np.radians(15.0), np.where(angle > 0.0, 1, 2), 0)
        # In the column: strafe towards the block's centre line (strafing replaces the forward
        # move), else push or run forward.
        strafe = lined & facing & ~on_block & (np.abs(dx) > 0.3)
        actions[:, 2] = np.where(strafe, np.where(dx > 0.0, 1, 2), 0)
        actions[:, 0] = np.where(lined, np.where(facing & ~strafe, 1, 0), actions[:, 0])
        actions[:, 3] = jump.astype(np.int32)
        return np.zeros((slots.size, 0), np.float32), actions


def _on_platform(points: np.ndarray) -> np.ndarray:
    return (
        (np.abs(points[:, 0]) <= PLATFORM_X)
        & (points[:, 1] >= PLATFORM_Y[0])
        & (points[:, 1] <= PLATFORM_Y[1])
    )
