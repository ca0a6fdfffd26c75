"""PushBlock: push a block into the goal zone (ML-Agents' ``PushBlock`` scene), in 2-D.

Behavior ``PushBlock?team=0``, 32 areas with one agent each. Two ray sensors, each stacked over
3 reports (wire order): ``StackingSensor_size3_OffsetRayPerceptionSensor`` (105,) and
``StackingSensor_size3_RayPerceptionSensor`` (105,); each report is 7 rays (forward, then +-30,
+-60, +-90 degrees) x (3 tags ``block``, ``goal``, ``wall`` + no-hit flag + hit fraction), in
Unity's ``RayPerceptionSensor`` layout (see :mod:`unity_gym.player.raycast`). The ground-level
sensor sees block, goal zone and walls; the raised ("offset") sensor looks over the block and the
goal zone and only sees walls, as in Unity's demonstration data. Rays reach 20 units with a cast
radius of 0.5.

One discrete branch of 7: 0 nothing, 1 forward, 2 backward, 3 turn right, 4 turn left,
5 strafe left, 6 strafe right (strafing at 0.75 of the forward push). Decision period 5 with
actions between decisions, max step 5000. Every executed action adds -1/5000; the block touching
the goal zone adds +5 and ends the episode.

Physics (simpler than PhysX): a square arena of side 24 whose far edge (``+y``) is a goal strip
4 deep; the agent is a disc of radius 0.5 that accelerates towards ``run speed`` (5 units/s) and
turns 4 degrees per step; the block is an axis-aligned square of side ``block_scale`` that the
agent pushes kinematically (it takes the agent's speed along the contact normal), slows down by
its drag and by ground friction and stops at the walls. At each episode begin the area reads the
environment parameters ``block_scale`` (2), ``block_drag`` (0.5) and ``dynamic_friction`` (0),
puts block and agent at random free spots in the middle half of the arena and turns the agent to
a random heading (Unity turns the whole area by a random multiple of 90 degrees instead, which the
agent cannot tell apart).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..academy import AgentBatch, SceneContext
from ..raycast import RayPerceptionSpec, RayTargets
from ..specs import ActionSpec, BehaviorSpec, DecisionSettings, SensorSpec
from .base import Scene
from .registry import register_scene

__all__ = [
    "MOVE_ACTIONS",
    "PushBlockScene",
    "disc_box_contact",
    "push_actions",
    "steer_to_push",
    "unit_vectors",
]

MAX_STEP = 5000
ARENA_HALF = 12.0
GOAL_DEPTH = 4.0
GOAL_LINE = ARENA_HALF - GOAL_DEPTH
SPAWN_HALF = 0.5 * ARENA_HALF
AGENT_RADIUS = 0.5
RUN_SPEED = 5.0
AGENT_DAMPING = 0.8  # velocity kept per step; the push adds (1 - damping) * run speed
TURN_DEGREES_PER_STEP = 4.0
STRAFE_FACTOR = 0.75
GOAL_REWARD = 5.0
GRAVITY = 9.81
BLOCK_TAG, GOAL_TAG, WALL_TAG = 0, 1, 2

#: Ground-level rays: block, goal and walls.
GROUND_RAYS = RayPerceptionSpec(
    rays_per_direction=3, max_ray_degrees=90.0, ray_length=20.0, num_tags=3, cast_radius=0.5
)
#: Raised rays: the same fan, looking over the block and the goal zone.
RAISED_RAYS = GROUND_RAYS

_WALLS = np.array(
    [
        [-ARENA_HALF, -ARENA_HALF, ARENA_HALF, -ARENA_HALF],
        [ARENA_HALF, -ARENA_HALF, ARENA_HALF, ARENA_HALF],
        [ARENA_HALF, ARENA_HALF, -ARENA_HALF, ARENA_HALF],
        [-ARENA_HALF, ARENA_HALF, -ARENA_HALF, -ARENA_HALF],
    ]
)
_GOAL_CENTRE = np.array([[0.0, (GOAL_LINE + ARENA_HALF) / 2.0]])
_GOAL_HALF = np.array([[ARENA_HALF, GOAL_DEPTH / 2.0]])
#: (forward, sideways to the left, turn) per action, turn positive = counter-clockwise.
MOVE_ACTIONS = np.array(
    [
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [-1.0, 0.0, 0.0],
        [0.0, 0.0, -1.0],
        [0.0, 0.0, 1.0],
        [0.0, STRAFE_FACTOR, 0.0],
        [0.0, -STRAFE_FACTOR, 0.0],
    ]
)


def unit_vectors(angles: np.ndarray) -> np.ndarray:
    """Unit vectors ``(..., 2)`` pointing along ``angles`` (radians, counter-clockwise from +x)."""
    return np.stack([np.cos(angles), np.sin(angles)], axis=-1)


@register_scene
class PushBlockScene(Scene):
    """Push a block into the goal strip; two stacked ray sensors, 7 discrete actions."""

    name = "PushBlock"
    summary = "push a block into the goal (2 stacked ray sensors 105+105, discrete 7, 32 agents)"
    default_area_count = 32
    fixed_delta_time = 0.02

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``PushBlock?team=0``: two ray sensors stacked 3x, discrete (7), period 5, 5000 steps."""
        size = GROUND_RAYS.observation_size
        return [
            BehaviorSpec(
                name="PushBlock",
                sensors=(
                    SensorSpec("RayPerceptionSensor", (size,), stack_size=3),
                    SensorSpec("OffsetRayPerceptionSensor", (size,), stack_size=3),
                ),
                action_spec=ActionSpec(discrete_branches=(7,)),
                decision=DecisionSettings(period=5, take_actions_between_decisions=True),
                max_step=MAX_STEP,
            )
        ]

    def setup(self, context: SceneContext) -> None:
        """Per-area agent and block state."""
        super().setup(context)
        n = context.area_count
        self.agent_position = np.zeros((n, 2))
        self.agent_velocity = np.zeros((n, 2))
        self.heading = np.zeros(n)
        self.block_position = np.zeros((n, 2))
        self.block_velocity = np.zeros((n, 2))
        self.block_half = np.ones(n)
        self.block_damping = np.ones(n)
        self.friction_decel = np.zeros(n)
        #: Blocks delivered to the goal since start-up (for statistics and tests).
        self.goals = 0

    # ---- episode -----------------------------------------------------------------------------

    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """Read the block parameters, then place block and agent at random free spots."""
        k = slots.size
        params = self.ctx.parameters
        rng = self.ctx.rng
        scale = np.clip(params.read_many("block_scale", 2.0, k), 0.5, 6.0)
        drag = np.maximum(params.read_many("block_drag", 0.5, k), 0.0)
        friction = np.maximum(params.read_many("dynamic_friction", 0.0, k), 0.0)
        self.block_half[slots] = scale / 2.0
        self.block_damping[slots] = 1.0 / (1.0 + drag * self.fixed_delta_time)
        self.friction_decel[slots] = friction * GRAVITY * self.fixed_delta_time
        self.block_position[slots] = rng.uniform(-SPAWN_HALF, SPAWN_HALF, size=(k, 2))
        agent = rng.uniform(-SPAWN_HALF, SPAWN_HALF, size=(k, 2))
        clearance = self.block_half[slots] + 2.0 * AGENT_RADIUS
        for _ in range(100):
            crowded = (np.abs(agent - self.block_position[slots]) < clearance[:, None]).all(axis=1)
            if not crowded.any():
                break
            agent[crowded] = rng.uniform(-SPAWN_HALF, SPAWN_HALF, size=(int(crowded.sum()), 2))
        self.agent_position[slots] = agent
        self.heading[slots] = rng.uniform(-np.pi, np.pi, size=k)
        self.agent_velocity[slots] = 0.0
        self.block_velocity[slots] = 0.0

    # ---- observations ------------------------------------------------------------------------

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """Ground rays (block, goal, walls) and raised rays (walls only)."""
        k = slots.size
        origins = self.agent_position[slots]
        headings = self.heading[slots]
        raised = RayTargets(k)
        raised.add_segments(_WALLS, WALL_TAG)
        ground = RayTargets(k)
        ground.add_segments(_WALLS, WALL_TAG)
        ground.add_boxes(_GOAL_CENTRE, _GOAL_HALF, GOAL_TAG)
        half = np.repeat(self.block_half[slots, None], 2, axis=1)
        ground.add_boxes(self.block_position[slots, None, :], half[:, None, :], BLOCK_TAG)
        return [
            GROUND_RAYS.perceive(ground, origins, headings),
            RAISED_RAYS.perceive(raised, origins, headings),
        ]

    # ---- actions and physics -----------------------------------------------------------------

    def on_action_received(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        continuous: np.ndarray,
        discrete: np.ndarray,
    ) -> None:
        """Turn and push the agent; every executed action costs 1/5000."""
        heading, push = push_actions(self.heading[slots], discrete[:, 0])
        self.heading[slots] = heading
        self.agent_velocity[slots] += push
        batch.add_reward(slots, -1.0 / MAX_STEP)

    def after_academy_step(self) -> None:
        """Move agents and blocks, resolve pushes and walls, score blocks in the goal."""
        dt = self.fixed_delta_time
        limit = ARENA_HALF - AGENT_RADIUS
        agent_velocity = self.agent_velocity
        agent = np.clip(self.agent_position + agent_velocity * dt, -limit, limit)
        # The block glides on: drag and friction slow it.
        velocity = self.block_velocity * self.block_damping[:, None]
        speed = np.sqrt(np.einsum("ij,ij->i", velocity, velocity))
        kept = np.maximum(speed - self.friction_decel, 0.0) / np.maximum(speed, 1e-12)
        velocity *= kept[:, None]
        half = self.block_half[:, None]
        block = self.block_position + velocity * dt
        # Agent against block: the block gives way along the contact normal and takes the
        # agent's speed along it.
        normal, depth = disc_box_contact(agent, block, half)
        block -= normal * depth[:, None]
        pushing = -np.einsum("ij,ij->i", agent_velocity, normal)
        gliding = -np.einsum("ij,ij->i", velocity, normal)
        boost = np.where(depth > 0.0, np.maximum(pushing - gliding, 0.0), 0.0)
        velocity -= normal * boost[:, None]
        # Walls stop the block; then the agent cannot stay inside it.
        bound = ARENA_HALF - half
        stopped = np.abs(block) > bound
        block = np.clip(block, -bound, bound)
        velocity[stopped] = 0.0
        normal, depth = disc_box_contact(agent, block, half)
        self.agent_position = np.clip(agent + normal * depth[:, None], -limit, limit)
        self.agent_velocity = agent_velocity * AGENT_DAMPING
        self.block_position = block
        self.block_velocity = velocity
        scored = np.flatnonzero(block[:, 1] + self.block_half >= GOAL_LINE)
        if scored.size:
            self.goals += int(scored.size)
            batch = self.ctx.batch("PushBlock")
            batch.add_reward(scored, GOAL_REWARD)
            batch.end_episode(scored)

    # ---- heuristic ---------------------------------------------------------------------------

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Walk round to the side of the block away from the goal, then push it to the goal."""
        action = steer_to_push(
            self.agent_position[slots],
            self.heading[slots],
            self.block_position[slots],
            self.block_half[slots],
        )
        return np.zeros((slots.size, 0), np.float32), action[:, None]


def push_actions(heading: np.ndarray, action: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Apply the 7 movement actions (index ``action``, ``(k,)``) to agents facing ``heading``.

    Returns:
        The new headings ``(k,)`` and the velocity change ``(k, 2)`` of one step's push.
    """
    move = MOVE_ACTIONS[np.clip(action, 0, len(MOVE_ACTIONS) - 1)]
    heading = heading + np.radians(TURN_DEGREES_PER_STEP) * move[:, 2]
    forward = unit_vectors(heading)
    left = np.stack([-forward[:, 1], forward[:, 0]], axis=1)
    push = forward * move[:, 0:1] + left * move[:, 1:2]
    return heading, push * (RUN_SPEED * (1.0 - AGENT_DAMPING))


def steer_to_push(
    agent: np.ndarray, heading: np.ndarray, block: np.ndarray, half: np.ndarray
) -> np.ndarray:
    """Scripted pushing towards the goal strip (``+y``): walk round to the side of the block
    away from the goal, then drive through its centre.

    Args:
        agent: agent positions ``(k, 2)``; heading: their headings ``(k,)``.
        block: positions ``(k, 2)`` of the block each agent works on; half: half sides ``(k,)``.

    Returns:
        ``int32`` action indices ``(k,)`` (1 forward, 3/4 turn).
    """
    offset = agent - block
    behind = offset[:, 1] < -(half + 0.2)
    aligned = np.abs(offset[:, 0]) < 0.6 * half
    side = np.where(offset[:, 0] >= 0.0, 1.0, -1.0)
    side = np.where(np.abs(block[:, 0] + side * (half + 1.5)) > ARENA_HALF - 1.0, -side, side)
    side_x = block[:, 0] + side * (half + 1.5)
    waypoint = np.where(
        (behind & aligned)[:, None],
        block + np.stack([np.zeros_like(half), half], axis=1),
        np.where(
            behind[:, None],
            np.stack([block[:, 0], block[:, 1] - half - 1.2], axis=1),
            np.where(
                (np.abs(offset[:, 0]) < half + 1.2)[:, None],
                np.stack([side_x, agent[:, 1]], axis=1),
                np.stack([side_x, block[:, 1] - half - 1.5], axis=1),
            ),
        ),
    )
    wanted = waypoint - agent
    angle = np.arctan2(wanted[:, 1], wanted[:, 0]) - heading
    angle = (angle + np.pi) % (2.0 * np.pi) - np.pi
    action = np.where(np.abs(angle) < np.radians(15.0), 1, np.where(angle > 0.0, 4, 3))
    return action.astype(np.int32)


def disc_box_contact(
    centres: np.ndarray, boxes: np.ndarray, half: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray]:
    """Unit normals (box towards disc) and penetration depths of agent discs against blocks.

    Args:
        centres: disc centres ``(k, 2)`` (radius ``AGENT_RADIUS``).
        boxes: axis-aligned box centres ``(k, 2)``; half: their half sides ``(k, 1)`` or
            ``(k, 2)``, or one for all (a number, or ``(2,)`` for x and y).

    Returns:
        Normals ``(k, 2)`` and depths ``(k,)`` (0 where there is no contact); a centre inside a
        box leaves along the axis of least penetration.
    """
    half = np.asarray(half, dtype=np.float64)
    if half.ndim < 2:
        half = np.broadcast_to(half, (len(centres), 2))
    closest = np.clip(centres, boxes - half, boxes + half)
    gap = centres - closest
    distance = np.sqrt(np.einsum("ij,ij->i", gap, gap))
    outside = distance > 1e-9
    normal = np.where(outside[:, None], gap / np.maximum(distance, 1e-9)[:, None], 0.0)
    depth = np.where(outside, AGENT_RADIUS - distance, 0.0)
    # A disc centre inside the box leaves along the axis of least penetration.
    inside = ~outside
    if inside.any():
        offset = centres[inside] - boxes[inside]
        room = half[inside] - np.abs(offset)
        axis = np.argmin(room, axis=1)
        rows = np.arange(axis.size)
        sign = np.where(offset[rows, axis] >= 0.0, 1.0, -1.0)
        inner = np.zeros((axis.size, 2))
        inner[rows, axis] = sign
        normal[inside] = inner
        depth[inside] = room[rows, axis] + AGENT_RADIUS
    return normal, np.maximum(depth, 0.0)
