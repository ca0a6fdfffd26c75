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

Physics (2-D, after PhysX's per-step order): a square arena of side 24 whose far edge (``+y``) is a
goal strip 4 deep; the agent is a disc of radius 0.5 that turns 4 degrees per step. Each 0.02 s
step an action adds ``agentRunSpeed`` (3 units/s; strafing 0.75 of it) to the agent's world-frame
velocity (Unity's ``AddForce(.., ForceMode.VelocityChange)`` on every step, decisions included),
then Rigidbody drag keeps ``1 - drag * dt`` of the speed and ground friction takes
``mu * g * dt`` off it (never reversing it): ``v' = max(|v + push| (1 - drag dt) - mu g dt, 0)``
along the velocity. Agent: drag 4, mass 10; block: drag ``block_drag`` (0.5), mass 10, an
axis-aligned square of side ``block_scale`` (2). Gravity is 9.81 x the scene's
``gravityMultiplier`` 2.5. Unity's script sets the *ground* material's friction to the
``dynamic_friction`` environment parameter (0) while agent and block keep Unity's default physic
material (friction 0.6, combine Average), so both slide on ``mu = (0.6 + dynamic_friction) / 2``
(0.3). Holding "forward" thus approaches about 33 units/s (0.65 units per step). An agent running
into the block shares its speed along the contact normal with it as a perfectly inelastic contact
between the two masses (Unity's default bounciness is 0); the block then slides on with its own
drag and friction. Walls stop agent and block (the velocity into the wall is removed). Motion is
integrated in sub-steps of at most 0.25 units of relative travel, so nothing tunnels through a
block or a wall. Not modelled: static friction and the block's rotation. At each episode begin
the area reads the environment parameters ``block_scale`` (2), ``block_drag`` (0.5) and
``dynamic_friction`` (0), puts block and agent at random free spots in the middle half of the
arena and turns the agent to a random heading (Unity turns the whole area by a random multiple of
90 degrees instead, which the agent cannot tell apart).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..academy import AgentBatch, SceneContext
from ..raycast import RayPerceptionSpec, RayTargets
from ..render import BLUE, FLOOR, GREEN, ORANGE, WALL, Canvas
from ..specs import ActionSpec, BehaviorSpec, DecisionSettings, SensorSpec
from .base import Scene
from .registry import register_scene

__all__ = [
    "AGENT_DRAG",
    "AGENT_MASS",
    "AGENT_RUN_SPEED",
    "DEFAULT_MATERIAL_FRICTION",
    "GRAVITY",
    "MOVE_ACTIONS",
    "PushBlockScene",
    "clamp_to_arena",
    "disc_box_contact",
    "inelastic_push",
    "push_actions",
    "slide",
    "steer_to_push",
    "substep_count",
    "unit_vectors",
]

MAX_STEP = 5000
ARENA_HALF = 12.0
GOAL_DEPTH = 4.0
GOAL_LINE = ARENA_HALF - GOAL_DEPTH
SPAWN_HALF = 0.5 * ARENA_HALF
AGENT_RADIUS = 0.5
#: ``PushBlockSettings.agentRunSpeed`` (3) in PushBlock.unity and PushBlockCollab.unity: the
#: velocity change (units/s) one step's push adds (``ForceMode.VelocityChange``).
AGENT_RUN_SPEED = 3.0
#: Agent Rigidbody ``m_Drag: 4`` and ``m_Mass: 10`` (PushBlockArea.prefab and
#: PushBlockAgentGridCollab.prefab alike).
AGENT_DRAG = 4.0
AGENT_MASS = 10.0
#: Block Rigidbody ``m_Mass: 10`` (PushBlockArea.prefab); its drag is ``block_drag`` (0.5).
BLOCK_MASS = 10.0
BLOCK_DRAG = 0.5
#: ``transform.Rotate(.., Time.fixedDeltaTime * 200f)`` in PushAgentBasic.cs: 4 degrees per step.
TURN_DEGREES_PER_STEP = 4.0
STRAFE_FACTOR = 0.75
GOAL_REWARD = 5.0
#: Unity's default ``Physics.gravity`` (9.81); each scene's settings object multiplies it.
GRAVITY = 9.81
#: ``gravityMultiplier: 2.5`` of the settings object in PushBlock.unity (g = 24.525).
GRAVITY_MULTIPLIER = 2.5
#: Friction of Unity's default physic material (dynamic and static 0.6, combine Average), used
#: by every collider with ``m_Material: {fileID: 0}`` (agents, blocks; PushBlockCollab's ground).
DEFAULT_MATERIAL_FRICTION = 0.6
#: Largest relative travel (units) of one integration sub-step: half the agent's radius, so an
#: agent cannot pass through a block (or a block's corner) between two contact checks.
MAX_SUBSTEP = 0.25
MAX_SUBSTEPS = 16
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
    draw_size = (256, 256)
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
        #: Block drag (``block_drag``) and ground friction ``mu`` of each area.
        self.block_drag = np.full(n, BLOCK_DRAG)
        self.friction = np.full(n, DEFAULT_MATERIAL_FRICTION / 2.0)
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
        self.block_drag[slots] = drag
        # The ground's material gets ``dynamic_friction``; agent and block keep the default
        # material, and PhysX averages the two (combine mode Average).
        self.friction[slots] = (DEFAULT_MATERIAL_FRICTION + friction) / 2.0
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
        """Drag and friction, then move agents and blocks in sub-steps with contacts and walls;
        score blocks in the goal."""
        dt = self.fixed_delta_time
        loss = self.friction * GRAVITY * GRAVITY_MULTIPLIER * dt
        agent_velocity = slide(self.agent_velocity, AGENT_DRAG * dt, loss)
        block_velocity = slide(self.block_velocity, self.block_drag * dt, loss)
        agent, block = self.agent_position.copy(), self.block_position.copy()
        half = self.block_half[:, None]
        agent_bound = np.full((agent.shape[0], 1), ARENA_HALF - AGENT_RADIUS)
        block_bound = ARENA_HALF - half
        substeps = substep_count(agent_velocity, block_velocity, dt)
        for _ in range(substeps):
            agent += agent_velocity * (dt / substeps)
            block += block_velocity * (dt / substeps)
            # The agent running into the block: both share its push along the normal.
            normal, depth = disc_box_contact(agent, block, half)
            touching = (depth > 0.0)[:, None, None]
            pushed_agent, pushed_block = inelastic_push(
                agent_velocity[:, None],
                block_velocity[:, None],
                normal[:, None, None],
                touching,
                np.full((agent.shape[0], 1), BLOCK_MASS),
            )
            agent_velocity, block_velocity = pushed_agent[:, 0], pushed_block[:, 0]
            block -= normal * depth[:, None]
            block, block_velocity = clamp_to_arena(block, block_velocity, block_bound)
            # A block stopped by a wall stops the agent in turn.
            normal, depth = disc_box_contact(agent, block, half)
            agent += normal * depth[:, None]
            closing = -np.einsum("ij,ij->i", agent_velocity - block_velocity, normal)
            agent_velocity += normal * np.where(depth > 0.0, np.maximum(closing, 0.0), 0.0)[:, None]
            agent, agent_velocity = clamp_to_arena(agent, agent_velocity, agent_bound)
        self.agent_position, self.agent_velocity = agent, agent_velocity
        self.block_position, self.block_velocity = block, block_velocity
        scored = np.flatnonzero(block[:, 1] + self.block_half >= GOAL_LINE)
        if scored.size:
            self.goals += int(scored.size)
            batch = self.ctx.batch("PushBlock")
            batch.add_reward(scored, GOAL_REWARD)
            batch.end_episode(scored)

    # ---- heuristic ---------------------------------------------------------------------------

    def draw(self, area: int, size: tuple[int, int]) -> np.ndarray:
        """The arena from above: the goal strip (green, at the top), the block and the agent."""
        canvas = Canvas(*size, (-ARENA_HALF, -ARENA_HALF, ARENA_HALF, ARENA_HALF))
        canvas.rectangle((0.0, 0.0), (ARENA_HALF, ARENA_HALF), FLOOR, outline=WALL)
        canvas.rectangle(_GOAL_CENTRE[0], _GOAL_HALF[0], GREEN)
        half = float(self.block_half[area])
        canvas.rectangle(self.block_position[area], (half, half), ORANGE)
        canvas.agent(self.agent_position[area], AGENT_RADIUS, float(self.heading[area]), BLUE)
        return canvas.picture()

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Walk round to the side of the block away from the goal, then push it to the goal."""
        loss = self.friction[slots] * GRAVITY * GRAVITY_MULTIPLIER * self.fixed_delta_time
        action = steer_to_push(
            self.agent_position[slots],
            self.heading[slots],
            self.agent_velocity[slots],
            self.block_position[slots],
            self.block_half[slots],
            loss,
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
    return heading, push * AGENT_RUN_SPEED


def slide(
    velocity: np.ndarray, drag_dt: np.ndarray | float, loss: np.ndarray | float
) -> np.ndarray:
    """One step of Rigidbody drag and ground friction for velocities ``(..., 2)``.

    PhysX keeps ``1 - drag * dt`` of the velocity, then kinetic friction takes ``mu * g * dt``
    off the speed without reversing it: ``v' = max(|v| (1 - drag dt) - mu g dt, 0)`` along ``v``.

    Args:
        velocity: world-frame velocities ``(..., 2)``.
        drag_dt: ``drag * dt``, one for all or per body (broadcast against ``(...)``).
        loss: ``mu * g * dt``, one for all or per body (broadcast against ``(...)``).

    Returns:
        The slowed velocities.
    """
    speed = np.sqrt(np.einsum("...c,...c->...", velocity, velocity))
    kept = np.maximum(speed * np.maximum(1.0 - np.asarray(drag_dt), 0.0) - loss, 0.0)
    return velocity * (kept / np.maximum(speed, 1e-12))[..., None]


def substep_count(agent_velocity: np.ndarray, block_velocity: np.ndarray, dt: float) -> int:
    """Sub-steps for one physics step: enough that a fast agent and a fast block closing on each
    other travel at most ``MAX_SUBSTEP`` relative to each other per sub-step (1 to 16)."""
    fastest = 0.0
    for velocity in (agent_velocity, block_velocity):
        if velocity.size:
            fastest += float(np.sqrt(np.einsum("...c,...c->...", velocity, velocity)).max())
    return int(np.clip(np.ceil(fastest * dt / MAX_SUBSTEP), 1, MAX_SUBSTEPS))


def clamp_to_arena(
    position: np.ndarray, velocity: np.ndarray, bound: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray]:
    """Keep centres within ``+-bound`` of the arena centre and stop the motion into a wall.

    Args:
        position: centres ``(..., 2)``; velocity: their velocities ``(..., 2)``.
        bound: the largest allowed ``|x|`` and ``|y|``, broadcast against ``position``.

    Returns:
        The clamped positions and the velocities without their component into a wall touched.
    """
    bound = np.broadcast_to(np.asarray(bound, dtype=np.float64), position.shape)
    high, low = position >= bound, position <= -bound
    stopped = (high & (velocity > 0.0)) | (low & (velocity < 0.0))
    return np.clip(position, -bound, bound), np.where(stopped, 0.0, velocity)


def inelastic_push(
    agent_velocity: np.ndarray,
    block_velocity: np.ndarray,
    normal: np.ndarray,
    pushing: np.ndarray,
    block_mass: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Agents running into blocks share their speed along the contact normals with the blocks.

    A perfectly inelastic contact (Unity's default bounciness 0) between each pushing agent (mass
    ``AGENT_MASS``) and its block: the impulse of agent ``i`` on block ``j`` is
    ``c_ij * m_a * m_j / (n_j * m_a + m_j)`` with ``c_ij`` the closing speed and ``n_j`` the number
    of agents pushing block ``j``, so that ``n_j`` agents pushing side by side end up moving with
    the block. Agents not closing in on a block are left alone.

    Args:
        agent_velocity: ``(n, a, 2)``; block_velocity: ``(n, b, 2)``.
        normal: contact normals ``(n, a, b, 2)``, from the block towards the agent.
        pushing: ``(n, a, b)``, which agent touches (and may move) which block.
        block_mass: ``(n, b)``.

    Returns:
        The new agent and block velocities.
    """
    relative = agent_velocity[:, :, None, :] - block_velocity[:, None, :, :]
    closing = -np.einsum("nabc,nabc->nab", relative, normal)
    pushers = pushing & (closing > 0.0)
    count = pushers.sum(axis=1)
    effective = AGENT_MASS * block_mass / (count * AGENT_MASS + block_mass)
    impulse = np.where(pushers, closing, 0.0) * effective[:, None, :]
    agent_velocity = agent_velocity + np.einsum("nab,nabc->nac", impulse, normal) / AGENT_MASS
    block_velocity = (
        block_velocity - np.einsum("nab,nabc->nbc", impulse, normal) / block_mass[..., None]
    )
    return agent_velocity, block_velocity


def steer_to_push(
    agent: np.ndarray,
    heading: np.ndarray,
    velocity: np.ndarray,
    block: np.ndarray,
    half: np.ndarray,
    loss: np.ndarray | float,
) -> np.ndarray:
    """Scripted pushing towards the goal strip (``+y``): walk round to the side of the block
    away from the goal, then drive through its centre.

    The agents are fast and slide (drag 4 leaves a push of several decisions ago in the
    velocity), so each decision picks the move whose velocity after a decision period comes
    closest to a wanted velocity: towards the next waypoint, slowing down near it, or towards the
    goal while pushing. Turning is chosen when a move 20 degrees on would do clearly better.

    Args:
        agent: agent positions ``(k, 2)``; heading: their headings ``(k,)``; velocity: their
            velocities ``(k, 2)``.
        block: positions ``(k, 2)`` of the block each agent works on; half: half sides ``(k,)``.
        loss: the ground friction's speed loss per step (``mu * g * dt``).

    Returns:
        ``int32`` action indices ``(k,)``.
    """
    offset = agent - block
    behind = offset[:, 1] < -(half + 0.2)
    aligned = np.abs(offset[:, 0]) < 0.6 * half
    side = np.where(offset[:, 0] >= 0.0, 1.0, -1.0)
    side = np.where(np.abs(block[:, 0] + side * (half + 1.5)) > ARENA_HALF - 1.0, -side, side)
    side_x = block[:, 0] + side * (half + 1.5)
    waypoint = np.where(
        behind[:, None],
        np.stack([block[:, 0], block[:, 1] - half - 1.2], axis=1),
        np.where(
            (np.abs(offset[:, 0]) < half + 1.2)[:, None],
            np.stack([side_x, agent[:, 1]], axis=1),
            np.stack([side_x, block[:, 1] - half - 1.5], axis=1),
        ),
    )
    gap = waypoint - agent
    distance = np.sqrt(np.einsum("ij,ij->i", gap, gap))
    speed = np.minimum(_APPROACH_SPEED, _APPROACH_GAIN * distance)
    wanted = gap * (speed / np.maximum(distance, 1e-9))[:, None]
    # Behind the block and in line with it: push it up, steering towards its centre line.
    lateral = np.clip(_APPROACH_GAIN * (block[:, 0] - agent[:, 0]), -4.0, 4.0)
    pushing = np.stack([lateral, np.full_like(lateral, _PUSH_SPEED)], axis=1)
    wanted = np.where((behind & aligned)[:, None], pushing, wanted)
    cost = np.stack(
        [
            np.linalg.norm(wanted - _after_decision(velocity, heading, move, loss), axis=1)
            for move in MOVE_ACTIONS
        ],
        axis=1,
    )
    # A turn keeps the drift for now; it pays off if a move at the new heading then does better.
    drift = _after_decision(velocity, heading, MOVE_ACTIONS[0], loss)
    for action, turn in ((3, -1.0), (4, 1.0)):
        turned = heading + turn * np.radians(TURN_DEGREES_PER_STEP) * _DECISION_STEPS
        later = np.stack(
            [
                np.linalg.norm(wanted - _after_decision(drift, turned, move, loss), axis=1)
                for move in MOVE_ACTIONS[[1, 2, 5, 6]]
            ],
            axis=1,
        ).min(axis=1)
        cost[:, action] = later + _TURN_MARGIN
    return np.argmin(cost, axis=1).astype(np.int32)


#: Heuristic settings: decision period, speeds (units/s), gain (1/s) and the margin a turn
#: must win by (units/s).
_DECISION_STEPS = 5
_APPROACH_SPEED = 12.0
_APPROACH_GAIN = 10.0
_PUSH_SPEED = 12.0
_TURN_MARGIN = 1.0


def _after_decision(
    velocity: np.ndarray, heading: np.ndarray, move: np.ndarray, loss: np.ndarray | float
) -> np.ndarray:
    """Velocities ``(k, 2)`` after a decision period of the move ``(forward, left, turn)``."""
    forward = unit_vectors(heading)
    left = np.stack([-forward[:, 1], forward[:, 0]], axis=1)
    push = (forward * move[0] + left * move[1]) * AGENT_RUN_SPEED
    dt = PushBlockScene.fixed_delta_time
    for _ in range(_DECISION_STEPS):
        velocity = slide(velocity + push, AGENT_DRAG * dt, loss)
    return velocity


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
