"""PushBlockCollab: three agents push blocks of three sizes into a goal together (ML-Agents'
cooperative ``PushBlockCollab`` scene), in 2-D.

Facts followed (Unity's ``PushBlockCollabAreaGrid`` prefab, ``PushAgentCollab`` and
``PushBlockEnvController`` scripts): behavior ``PushBlockCollab?team=0``, three agents per area
registered in one ``SimpleMultiAgentGroup``; one sensor ``GridSensor`` of 20 x 20 cells (cell side
1) rotating with the agent, one-hot over the 6 detectable tags ``wall``, ``agent``, ``goal``,
``blockSmall``, ``blockLarge``, ``blockVeryLarge``, PNG-compressed, shape ``(6, 20, 20)`` (CHW);
one discrete branch of 7 (the same moves as ``PushBlock``: 0 nothing, 1 forward, 2 backward,
3 turn right, 4 turn left, 5 strafe left, 6 strafe right); decision period 5 with actions between
decisions; agent max step 0. Each area holds two blocks of each size: small (side 1, worth 1,
moved by one agent), large (side 2, worth 2, needs two agents) and very large (side 3, worth 3,
needs all three). The area controller adds the group reward ``-0.5 / MaxEnvironmentSteps``
(-0.0001) every Academy step, adds the block's worth as a group reward when a block reaches the
goal (the block disappears), ends the group episode (``EndGroupEpisode``) once every block is in
and interrupts it (``GroupEpisodeInterrupted``) after ``MaxEnvironmentSteps`` (5000) steps; both
reset the area. No individual rewards, no environment parameters.

Simplifications: the arena, the agents' motion and the pushing come from
:mod:`~unity_gym.player.scenes.pushblock` (square arena of side 24 with a goal strip 4 deep along
``+y``, agents are discs of radius 0.5). A block moves only while at least as many agents push it
(touch it while moving into it) as its size needs; it then shares their push as an inelastic
contact with its mass (the prefab's 10, 100 and 150) and slides on with drag 0.5 and friction.
Motion is PushBlock's per-step rule (agent drag 4, ``agentRunSpeed`` 3 per step) with this
scene's ``gravityMultiplier`` 1.5 (g = 14.715) and Unity's default material friction 0.6 (the
scene leaves the ground's material alone), top speed about 32 units/s. Blocks do not collide
with each other and agents do not collide with each other (agents do
collide with blocks). The grid is centred on the agent (its rows run from ahead to behind, its
columns from left to right), each cell reports the one tag it overlaps with priority very large >
large > small block > agent > wall > goal, the agent does not see itself. Areas reset with blocks
and agents on distinct spots of a coarse grid below the goal and random agent headings (Unity
turns the whole area by a multiple of 90 degrees instead). Option ``max_environment_steps``
(5000; 0 = never interrupt, penalty then as for 5000).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..academy import AgentBatch, SceneContext
from ..errors import PlayerError
from ..render import BLUE, FLOOR, GOLD, GREEN, ORANGE, RED, WALL, Canvas
from ..specs import ActionSpec, BehaviorSpec, Compression, DecisionSettings, SensorSpec
from .base import Scene, SceneOption
from .pushblock import (
    AGENT_DRAG,
    AGENT_RADIUS,
    ARENA_HALF,
    DEFAULT_MATERIAL_FRICTION,
    GOAL_LINE,
    GRAVITY,
    clamp_to_arena,
    disc_box_contact,
    inelastic_push,
    push_actions,
    slide,
    steer_to_push,
    substep_count,
    unit_vectors,
)
from .registry import register_scene

__all__ = [
    "AGENTS_PER_AREA",
    "BLOCK_HALF",
    "BLOCK_PUSHERS",
    "BLOCK_VALUE",
    "GRID_SIZE",
    "GRID_TAGS",
    "MAX_ENVIRONMENT_STEPS",
    "PushBlockCollabScene",
]

MAX_ENVIRONMENT_STEPS = 5000
AGENTS_PER_AREA = 3
#: Half sides, agents needed to push, and group reward of the six blocks of an area.
BLOCK_HALF = np.array([0.5, 0.5, 1.0, 1.0, 1.5, 1.5])
BLOCK_PUSHERS = np.array([1, 1, 2, 2, 3, 3])
BLOCK_VALUE = np.array([1.0, 1.0, 2.0, 2.0, 3.0, 3.0])
#: Block Rigidbodies in PushBlockCollabAreaGrid.prefab: ``m_Mass`` 10 (Block_Small, scale 1),
#: 100 (Block_Large, scale 2), 150 (Block_VeryLarge, scale 3), ``m_Drag: 0.5`` for all.
BLOCK_MASS = np.array([10.0, 10.0, 100.0, 100.0, 150.0, 150.0])
BLOCK_DRAG = 0.5
#: ``gravityMultiplier: 1.5`` of the settings object in PushBlockCollab.unity (g = 14.715).
GRAVITY_MULTIPLIER = 1.5
#: The scene leaves every material at Unity's default (friction 0.6, combine Average).
FRICTION = DEFAULT_MATERIAL_FRICTION
WALL_THICKNESS = 1.0
GRID_SIZE = 20
GRID_TAGS = ("wall", "agent", "goal", "blockSmall", "blockLarge", "blockVeryLarge")
WALL_TAG, AGENT_TAG, GOAL_TAG, SMALL_TAG = 0, 1, 2, 3
#: Spawn spots (a 5 x 4 grid below the goal); every object of an area gets its own spot.
_SPOTS = np.array([[x, y] for y in (-7.0, -3.0, 1.0, 5.0) for x in (-8.0, -4.0, 0.0, 4.0, 8.0)])
_BLOCK_JITTER = 0.3
_AGENT_JITTER = 1.0
#: Cell centre offsets from the agent: rows ahead -> behind, columns left -> right.
_CELL_OFFSETS = (GRID_SIZE - 1) / 2.0 - np.arange(GRID_SIZE, dtype=np.float64)


class GroupedPushAgents(Scene):
    """Agents that turn and push in areas run by a group controller: PushBlockCollab's and
    DungeonEscape's ``MoveAgent`` (no individual reward) and their controllers' step limit
    (``MaxEnvironmentSteps``: the group episode is interrupted and the area reset).

    A scene using it keeps ``heading``, ``agent_velocity`` (per area and agent), ``timer``,
    ``groups`` (per area), ``max_environment_steps`` and ``reset_areas(areas)``.
    """

    heading: np.ndarray
    agent_velocity: np.ndarray
    timer: np.ndarray
    groups: np.ndarray
    max_environment_steps: int

    def reset_areas(self, areas: np.ndarray) -> None:
        """Put ``areas`` back to the start of a group episode."""
        raise NotImplementedError

    def on_action_received(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        continuous: np.ndarray,
        discrete: np.ndarray,
    ) -> None:
        """Turn and push the agents (no individual reward)."""
        areas, me = np.divmod(slots, AGENTS_PER_AREA)
        heading, push = push_actions(self.heading[areas, me], discrete[:, 0])
        self.heading[areas, me] = heading
        self.agent_velocity[areas, me] += push

    def _count_step(self) -> None:
        """One more controller step: areas at ``max_environment_steps`` are interrupted, reset."""
        self.timer += 1
        limit = self.max_environment_steps
        if limit > 0:
            expired = np.flatnonzero(self.timer >= limit)
            if expired.size:
                self.ctx.interrupt_group_episode(self.groups[expired])
                self.reset_areas(expired)


@register_scene
class PushBlockCollabScene(GroupedPushAgents):
    """Three agents per area push blocks needing 1, 2 or 3 pushers; group rewards."""

    name = "PushBlockCollab"
    summary = "cooperative push block, group rewards (grid sensor 6x20x20 PNG, discrete 7, 3/area)"
    default_area_count = 4
    draw_size = (256, 256)
    fixed_delta_time = 0.02
    option_specs = (
        SceneOption(
            "max_environment_steps",
            int,
            MAX_ENVIRONMENT_STEPS,
            "steps before the area's group episode is interrupted (0 = never)",
        ),
    )

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``PushBlockCollab?team=0``: one grid sensor, discrete (7), 3 agents per area."""
        if int(self.options["max_environment_steps"]) < 0:
            raise PlayerError("max_environment_steps must be >= 0 (0 = never interrupt)")
        return [
            BehaviorSpec(
                name="PushBlockCollab",
                sensors=(
                    SensorSpec(
                        "GridSensor", (len(GRID_TAGS), GRID_SIZE, GRID_SIZE), Compression.PNG
                    ),
                ),
                action_spec=ActionSpec(discrete_branches=(7,)),
                agents_per_area=AGENTS_PER_AREA,
                decision=DecisionSettings(period=5, take_actions_between_decisions=True),
                max_step=0,
            )
        ]

    def setup(self, context: SceneContext) -> None:
        """Per-area agents and blocks; one multi-agent group per area."""
        super().setup(context)
        n = context.area_count
        self.max_environment_steps = int(self.options["max_environment_steps"])
        #: Group reward added to every area each Academy step.
        self.step_penalty = -0.5 / (self.max_environment_steps or MAX_ENVIRONMENT_STEPS)
        self.agent_position = np.zeros((n, AGENTS_PER_AREA, 2))
        self.agent_velocity = np.zeros((n, AGENTS_PER_AREA, 2))
        self.heading = np.zeros((n, AGENTS_PER_AREA))
        self.block_position = np.zeros((n, BLOCK_HALF.size, 2))
        self.block_velocity = np.zeros((n, BLOCK_HALF.size, 2))
        #: Blocks still in play (scored blocks are switched off until the area resets).
        self.active = np.zeros((n, BLOCK_HALF.size), dtype=bool)
        self.timer = np.zeros(n, dtype=np.int64)
        #: Group id of each area.
        self.groups = context.create_groups(n)
        context.batch("PushBlockCollab").set_group(
            slice(None), np.repeat(self.groups, AGENTS_PER_AREA)
        )
        #: Blocks scored since start-up, by size (small, large, very large).
        self.scored = np.zeros(3, dtype=np.int64)

    # ---- area reset and episodes -------------------------------------------------------------

    def on_environment_reset(self) -> None:
        """Reset every area."""
        self.reset_areas(np.arange(self.ctx.area_count))

    def reset_areas(self, areas: np.ndarray) -> None:
        """Unity's ``ResetScene``: blocks back in play and blocks and agents on free random spots.

        Args:
            areas: area indices ``(k,)``.
        """
        rng = self.ctx.rng
        k = areas.size
        if k == 0:
            return
        nb = BLOCK_HALF.size
        spots = _SPOTS[np.argsort(rng.random((k, len(_SPOTS))), axis=1)[:, : nb + AGENTS_PER_AREA]]
        jitter = rng.uniform(-1.0, 1.0, size=spots.shape)
        self.block_position[areas] = spots[:, :nb] + _BLOCK_JITTER * jitter[:, :nb]
        self.agent_position[areas] = spots[:, nb:] + _AGENT_JITTER * jitter[:, nb:]
        self.heading[areas] = rng.uniform(-np.pi, np.pi, size=(k, AGENTS_PER_AREA))
        self.agent_velocity[areas] = 0.0
        self.block_velocity[areas] = 0.0
        self.active[areas] = True
        self.timer[areas] = 0

    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """Nothing per agent: the area reset places the agents (as Unity's controller does)."""

    # ---- observations ------------------------------------------------------------------------

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """The one-hot grid ``(k, 6, 20, 20)`` around each agent, turned with it."""
        areas, me = np.divmod(slots, AGENTS_PER_AREA)
        k = slots.size
        origin = self.agent_position[areas, me]
        forward = unit_vectors(self.heading[areas, me])
        left = np.stack([-forward[:, 1], forward[:, 0]], axis=1)
        cells = (
            origin[:, None, None, :]
            + _CELL_OFFSETS[None, :, None, None] * forward[:, None, None, :]
            + _CELL_OFFSETS[None, None, :, None] * left[:, None, None, :]
        )
        x, y = cells[..., 0], cells[..., 1]
        # Later assignments win a cell: goal < wall < agent < small < large < very large block.
        tag = np.full((k, GRID_SIZE, GRID_SIZE), -1, dtype=np.int64)
        reach = np.maximum(np.abs(x), np.abs(y))
        tag[(reach < ARENA_HALF) & (y >= GOAL_LINE)] = GOAL_TAG
        # Walls: a band one cell into the arena to WALL_THICKNESS beyond its edge.
        tag[(reach >= ARENA_HALF - 0.5) & (reach < ARENA_HALF + 0.5 + WALL_THICKNESS)] = WALL_TAG
        for other in range(AGENTS_PER_AREA):
            seen = self.agent_position[areas, other]
            gap = np.hypot(x - seen[:, 0, None, None], y - seen[:, 1, None, None])
            hit = (gap < AGENT_RADIUS + 0.5) & (me != other)[:, None, None]
            tag[hit] = AGENT_TAG
        for block in range(BLOCK_HALF.size):
            centre = self.block_position[areas, block]
            reach_block = BLOCK_HALF[block] + 0.5
            hit = (
                (np.abs(x - centre[:, 0, None, None]) < reach_block)
                & (np.abs(y - centre[:, 1, None, None]) < reach_block)
                & self.active[areas, block][:, None, None]
            )
            tag[hit] = SMALL_TAG + block // 2
        grid = (tag[:, None, :, :] == np.arange(len(GRID_TAGS))[None, :, None, None]).astype(
            np.float32
        )
        return [grid]

    # ---- actions and the area controller -----------------------------------------------------

    def after_academy_step(self) -> None:
        """The controller's timer and step penalty, then physics; scored blocks pay the group."""
        self._count_step()
        self.ctx.add_group_reward(self.groups, self.step_penalty)
        self._move()
        scored = self.active & (self.block_position[:, :, 1] + BLOCK_HALF >= GOAL_LINE)
        areas = np.flatnonzero(scored.any(axis=1))
        if areas.size == 0:
            return
        self.scored += scored.reshape(-1, 3, 2).sum(axis=(0, 2))
        self.ctx.add_group_reward(self.groups[areas], (scored[areas] * BLOCK_VALUE).sum(axis=1))
        self.active &= ~scored
        self.block_velocity[scored] = 0.0
        done = areas[~self.active[areas].any(axis=1)]
        if done.size:
            self.ctx.end_group_episode(self.groups[done])
            self.reset_areas(done)

    def _move(self) -> None:
        """Drag and friction, then sub-steps: agents push the blocks they have enough pushers
        for, cannot enter blocks, and walls stop agents and blocks."""
        dt = self.fixed_delta_time
        n, na, nb = self.ctx.area_count, AGENTS_PER_AREA, BLOCK_HALF.size
        loss = FRICTION * GRAVITY * GRAVITY_MULTIPLIER * dt
        agent_velocity = slide(self.agent_velocity, AGENT_DRAG * dt, loss)
        block_velocity = slide(self.block_velocity, BLOCK_DRAG * dt, loss)
        block_velocity *= self.active[:, :, None]
        agent, block = self.agent_position.copy(), self.block_position.copy()
        pairs = (n, na, nb)
        half = np.broadcast_to(BLOCK_HALF[None, None, :, None], (*pairs, 1)).reshape(-1, 1)
        block_bound = ARENA_HALF - BLOCK_HALF[None, :, None]
        agent_bound = ARENA_HALF - AGENT_RADIUS
        block_mass = np.broadcast_to(BLOCK_MASS, (n, nb))
        substeps = substep_count(agent_velocity, block_velocity, dt)
        for _ in range(substeps):
            agent += agent_velocity * (dt / substeps)
            block += block_velocity * (dt / substeps)
            # Every agent against every block of its area.
            normal, depth = disc_box_contact(
                np.broadcast_to(agent[:, :, None, :], (*pairs, 2)).reshape(-1, 2),
                np.broadcast_to(block[:, None, :, :], (*pairs, 2)).reshape(-1, 2),
                half,
            )
            normal = normal.reshape(*pairs, 2)
            depth = depth.reshape(pairs) * self.active[:, None, :]
            relative = agent_velocity[:, :, None, :] - block_velocity[:, None, :, :]
            pusher = (depth > 0.0) & (np.einsum("najc,najc->naj", relative, normal) < 0.0)
            count = pusher.sum(axis=1)
            moving = pusher & (count >= BLOCK_PUSHERS)[:, None, :]
            # Enough pushers: they share their push with the block, which gives way.
            agent_velocity, block_velocity = inelastic_push(
                agent_velocity, block_velocity, normal, moving, block_mass
            )
            share = np.where(moving, depth, 0.0) / np.maximum(moving.sum(axis=1), 1)[:, None, :]
            block -= np.einsum("naj,najc->njc", share, normal)
            block, block_velocity = clamp_to_arena(block, block_velocity, block_bound)
            # Agents cannot stay inside (or run on into) blocks that did not give way.
            for j in range(nb):
                normal_j, depth_j = disc_box_contact(
                    agent.reshape(-1, 2),
                    np.repeat(block[:, j], na, axis=0),
                    np.full((n * na, 1), BLOCK_HALF[j]),
                )
                normal_j = normal_j.reshape(n, na, 2)
                depth_j = depth_j.reshape(n, na) * self.active[:, j, None]
                agent += normal_j * depth_j[..., None]
                closing = -np.einsum(
                    "nac,nac->na", agent_velocity - block_velocity[:, j, None, :], normal_j
                )
                stop = np.where(depth_j > 0.0, np.maximum(closing, 0.0), 0.0)
                agent_velocity = agent_velocity + normal_j * stop[..., None]
            agent, agent_velocity = clamp_to_arena(agent, agent_velocity, agent_bound)
        self.agent_position, self.agent_velocity = agent, agent_velocity
        self.block_position = np.where(self.active[:, :, None], block, self.block_position)
        self.block_velocity = np.where(self.active[:, :, None], block_velocity, 0.0)

    # ---- heuristic ---------------------------------------------------------------------------

    def draw(self, area: int, size: tuple[int, int]) -> np.ndarray:
        """The arena from above: the goal strip (green, at the top), the blocks still in play
        (small orange, large gold, very large red) and the three agents."""
        canvas = Canvas(*size, (-ARENA_HALF, -ARENA_HALF, ARENA_HALF, ARENA_HALF))
        canvas.rectangle((0.0, 0.0), (ARENA_HALF, ARENA_HALF), FLOOR, outline=WALL)
        canvas.rectangle(
            (0.0, (GOAL_LINE + ARENA_HALF) / 2.0),
            (ARENA_HALF, (ARENA_HALF - GOAL_LINE) / 2.0),
            GREEN,
        )
        for block in np.flatnonzero(self.active[area]):
            half = float(BLOCK_HALF[block])
            colour = (ORANGE, GOLD, RED)[int(BLOCK_PUSHERS[block]) - 1]
            canvas.rectangle(self.block_position[area, block], (half, half), colour)
        for agent in range(AGENTS_PER_AREA):
            canvas.agent(
                self.agent_position[area, agent],
                AGENT_RADIUS,
                float(self.heading[area, agent]),
                BLUE,
            )
        return canvas.picture()

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """The whole team pushes the block in play nearest to the goal (enough pushers for any
        size), walking round behind it first."""
        areas, me = np.divmod(slots, AGENTS_PER_AREA)
        top = np.where(self.active, self.block_position[:, :, 1] + BLOCK_HALF, -np.inf)
        target = np.argmax(top, axis=1)[areas]
        action = steer_to_push(
            self.agent_position[areas, me],
            self.heading[areas, me],
            self.agent_velocity[areas, me],
            self.block_position[areas, target],
            BLOCK_HALF[target],
            FRICTION * GRAVITY * GRAVITY_MULTIPLIER * self.fixed_delta_time,
        )
        return np.zeros((slots.size, 0), np.float32), action[:, None]
