"""Pyramids: press the switch, topple the pyramid, touch its gold brick (ML-Agents' ``Pyramids``).

Facts taken from the Unity example (``PyramidAgent``, ``PyramidArea``, ``PyramidSwitch`` and the
``AreaPB`` prefab): behavior ``Pyramids?team=0``, one agent per area, 16 areas (the count of the
stock scene as given in the task; the scene file itself was not checked). Observations in wire
order: three ray sensors ``RayPerceptionSensor`` (56,), ``RayPerceptionSensor1`` (56,),
``RayPerceptionSensor2`` (56,) and ``VectorSensor_size4`` (4,). Each ray sensor casts 7 rays
(3 per direction) of length 35 with a sphere-cast radius of 0.5, spread over +-70, +-65 and
+-75 degrees respectively, and detects the 6 tags ``block``, ``wall``, ``goal``, ``switchOff``,
``switchOn``, ``stone`` (7 x (6 + 2) = 56 values in Unity's per-ray layout, see
:mod:`unity_gym.player.raycast`). The vector observation is the switch state (1 once pressed)
followed by the agent's velocity in its own frame (right, up = 0, forward). One discrete branch
of 5: 0 nothing, 1 forward, 2 backward, 3 turn right, 4 turn left. Decision period 5 with actions
between decisions, max step 5000. Every executed action adds -1/MaxStep (-1/5000); touching the
gold brick *sets* the reward to +2 and ends the episode. No environment parameters. Option
``max_step`` (a player addition, default 5000) changes MaxStep and with it the step penalty, to
shorten episodes in tests. (ML-Agents' example docs still describe an older layout: 148
observations and 4 actions; the sizes here follow the prefab's sensors and action spec.)

Episode begin (as in Unity): the area has 9 square spawn cells of side 25 on a 3 x 3 grid with
centres 30 apart; a random permutation gives one cell each to the agent, the switch, the future
pyramid and 6 stone pyramids, and each object goes to a uniform spot within ``25 / 2.1`` of its
cell's centre. The agent gets a random whole-degree heading; the switch is off (tag
``switchOff``). When the agent first touches the switch it turns on (tag ``switchOn``) and a
pyramid spawns at a random spot of its cell; touching it again does nothing until the next
episode.

Arena and motion, from ``Examples/Pyramids/Prefabs/AreaPB.prefab`` and the project settings:
the inner faces of the ``OuterWalls`` colliders lie at x = +-49.5 (and z = +49.1 / -49.6, taken
as +-49.5 here). Four ``CruciformWall`` crosses (arms 15.15 long) stand at (+-16.55, +-16.56)
and eight ``SideWall`` stubs (14.5 long) run from the outer walls to +-35 along the lines +-16.5,
so the walls make 3 x 3 rooms joined by doorways (about 11 wide between a stub and a cross, 18
between two crosses). The agent's Rigidbody has ``m_Drag`` 2, and PhysX keeps ``1 - drag * dt``
= 0.96 of the velocity per 0.02 s step (``Time.fixedDeltaTime``, ``TimeManager.asset``).
``PyramidAgent.MoveAgent`` adds a velocity change of 2 along the agent's forward axis per
forward/backward action (``ForceMode.VelocityChange``), on every step (``DecisionRequester``:
period 5, actions between decisions), and turns 200 degrees/s (4 per step); the velocity stays
in the world frame while the agent turns. The box slides on the floor, with kinetic friction
0.6 (Unity's built-in default material, a value no repository file gives;
``m_DefaultMaterial`` is unset in ``DynamicsManager.asset``) times gravity 9.81
(``m_Gravity``): per step the speed drops by 0.6 * 9.81 * 0.02, stopping at zero. Top speed
is about 45 units/s (0.9 per step); 30 units from rest take about 55 steps. Moves are split
into sub-steps of at most 0.25 (half the agent's radius), so no wall or obstacle is crossed
at any speed.

Simplifications (2-D physics instead of PhysX): the walls are segments without thickness (1
thick in Unity) and the agent is a disc of radius 0.5 (a 1 x 1 x 1 box in Unity, whose
rotation is frozen); hitting a wall removes the velocity into it, without friction along it
or bounce. The drop from the spawn height (y = 2) is not modelled. The switch (side 4, the
prefab's collider, pressed by touching it), the stone pyramids and the pyramid (side 3) are
fixed square obstacles; stone pyramids never topple. A standing pyramid shows its bricks (tag
``block``); any touch topples it: its bricks are no longer modelled and its gold brick (side 1, tag
``goal``) lands 1.5 beyond the pyramid's centre, away from the agent. All three ray sensors
see the same objects in the plane (Unity tilts the second and third sensors upwards, by 5 and
10 units over the ray length; that is not modelled).

The scripted ``heuristic`` reads the area's state: it follows a grid path around walls and
obstacles to the switch, then to the pyramid, then to the gold brick, keeps its speed below
30 units/s and below twice the path length left, and brakes (backward) when too fast or before
turning while it moves forward fast.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..academy import AgentBatch, SceneContext
from ..raycast import RayPerceptionSpec, RayTargets
from ..render import BLUE, FLOOR, GOLD, GREEN, GREY, ORANGE, RED, WALL, Canvas
from ..specs import ActionSpec, BehaviorSpec, DecisionSettings, SensorSpec
from .base import MaxStepOption, Scene
from .registry import register_scene

__all__ = ["PyramidsScene"]

BEHAVIOR = "Pyramids"
MAX_STEP = 5000
GOLD_REWARD = 2.0
#: Inner faces of the outer walls (``AreaPB`` ``OuterWalls``: +-49.5 in x; 49.1 / -49.6 in z).
ARENA_HALF = 49.5
CELL_SPACING = 30.0
SPAWN_RANGE = 25.0 / 2.1
#: Centres of the four ``CruciformWall`` crosses and the length of each of their two arms.
CROSS_CENTRE = (16.55, 16.56)
CROSS_ARM = 15.15
#: The eight ``SideWall`` stubs: on the lines +-16.5, from the outer wall inwards to +-35.
STUB_LINE = 16.5
STUB_END = 35.0
AGENT_RADIUS = 0.5
VELOCITY_CHANGE = 2.0
#: The agent's Rigidbody ``m_Drag``; PhysX keeps ``1 - drag * dt`` of the velocity per step.
DRAG = 2.0
#: Dynamic friction of Unity's default physics material, and ``m_Gravity``.
FRICTION = 0.6
GRAVITY = 9.81
#: The largest move of one collision sub-step (half the agent's radius: no tunnelling).
MAX_SUBSTEP = 0.25
TURN_DEGREES_PER_STEP = 4.0
SWITCH_HALF = 2.0  # the AreaPB prefab's switch BoxCollider: 4 x 4 x 4 (size 400 at scale 0.01)
PYRAMID_HALF = 1.5
GOLD_HALF = 0.5
GOLD_DROP = 1.5
STONE_COUNT = 6
#: Tag indices, in the order of the Unity sensors' detectable tags.
BLOCK_TAG, WALL_TAG, GOAL_TAG, SWITCH_OFF_TAG, SWITCH_ON_TAG, STONE_TAG = range(6)
#: ``pyramid_state`` values.
NO_PYRAMID, STANDING, TOPPLED = 0, 1, 2

#: The three ray sensors by name, in wire order.
RAY_SENSORS: dict[str, RayPerceptionSpec] = {
    name: RayPerceptionSpec(
        rays_per_direction=3, max_ray_degrees=degrees, ray_length=35.0, num_tags=6, cast_radius=0.5
    )
    for name, degrees in (
        ("RayPerceptionSensor", 70.0),
        ("RayPerceptionSensor1", 65.0),
        ("RayPerceptionSensor2", 75.0),
    )
}

#: Spawn cell centres (9, 2).
CELL_CENTRES = np.array(
    [[x, y] for x in (-CELL_SPACING, 0.0, CELL_SPACING) for y in (-CELL_SPACING, 0.0, CELL_SPACING)]
)


def _wall_segments() -> np.ndarray:
    """Outer walls (first four), the arms of the four crosses and the eight stubs as
    ``[x0, y0, x1, y1]`` rows."""
    h = ARENA_HALF
    rows = [[-h, -h, h, -h], [h, -h, h, h], [h, h, -h, h], [-h, h, -h, -h]]
    arm = CROSS_ARM / 2.0
    for sx in (-1.0, 1.0):
        for sy in (-1.0, 1.0):
            cx, cy = sx * CROSS_CENTRE[0], sy * CROSS_CENTRE[1]
            rows.append([cx - arm, cy, cx + arm, cy])
            rows.append([cx, cy - arm, cx, cy + arm])
    for line in (-STUB_LINE, STUB_LINE):
        for side in (-1.0, 1.0):
            rows.append([side * STUB_END, line, side * h, line])
            rows.append([line, side * STUB_END, line, side * h])
    return np.array(rows)


WALLS = _wall_segments()

# Heuristic path planning: a grid of 1 x 1 cells over the arena.
_GRID = int(2 * ARENA_HALF)
_GRID_CENTRES = np.arange(_GRID) - ARENA_HALF + 0.5
_CLEARANCE = AGENT_RADIUS + 0.6
_NEIGHBOURS = [(dx, dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1) if dx or dy]
_LOOKAHEAD = 6
#: Heuristic speed control: a cap, a limit per unit of path left, and the excess that brakes.
_TOP_SPEED = 30.0
_SPEED_PER_UNIT = 2.0
_BRAKE_SPEED = 8.0


def _unit(angles: np.ndarray) -> np.ndarray:
    return np.stack([np.cos(angles), np.sin(angles)], axis=-1)


def _slowed(velocity: np.ndarray, loss: float) -> np.ndarray:
    """``velocity`` ``(n, 2)`` with each speed reduced by ``loss``, stopping at zero (kinetic
    friction never reverses the motion)."""
    speed = np.sqrt(np.einsum("ij,ij->i", velocity, velocity))
    scale = np.maximum(speed - loss, 0.0) / np.maximum(speed, 1e-12)
    return velocity * scale[:, None]


def _static_blocked() -> np.ndarray:
    """Grid cells too close to a wall for the agent's centre."""
    gx, gy = np.meshgrid(_GRID_CENTRES, _GRID_CENTRES, indexing="ij")
    points = np.stack([gx.ravel(), gy.ravel()], axis=1)
    blocked = np.zeros(points.shape[0], dtype=bool)
    for x0, y0, x1, y1 in WALLS:
        start = np.array([x0, y0])
        edge = np.array([x1 - x0, y1 - y0])
        t = np.clip((points - start) @ edge / (edge @ edge), 0.0, 1.0)
        gap = points - (start + t[:, None] * edge)
        blocked |= np.einsum("ij,ij->i", gap, gap) < _CLEARANCE**2
    return blocked.reshape(_GRID, _GRID)


def _box_cells(centre: np.ndarray, half: float) -> np.ndarray:
    """Grid cells whose centres lie within ``half`` of ``centre`` (Chebyshev distance)."""
    inside_x = np.abs(_GRID_CENTRES - centre[0]) < half
    inside_y = np.abs(_GRID_CENTRES - centre[1]) < half
    return inside_x[:, None] & inside_y[None, :]


def _distance_field(blocked: np.ndarray, goal: np.ndarray) -> np.ndarray:
    """Path lengths (8-connected grid) from every free cell to the nearest ``goal`` cell."""
    dist = np.where(goal & ~blocked, 0.0, np.inf)
    padded = np.full((_GRID + 2, _GRID + 2), np.inf)
    for _ in range(4 * _GRID):
        padded[1:-1, 1:-1] = dist
        new = dist.copy()
        for dx, dy in _NEIGHBOURS:
            step = 1.0 if dx == 0 or dy == 0 else np.sqrt(2.0)
            shifted = padded[1 + dx : 1 + dx + _GRID, 1 + dy : 1 + dy + _GRID]
            np.minimum(new, shifted + step, out=new)
        new[blocked] = np.inf
        if np.array_equal(new, dist):
            break
        dist = new
    return dist


def _clear_line(blocked: np.ndarray, start: np.ndarray, end: np.ndarray) -> bool:
    """Whether the line from ``start`` to ``end`` crosses no blocked grid cell (points within
    0.7 of ``start`` are skipped: the agent may stand in a cell inside the clearance)."""
    length = float(np.linalg.norm(end - start))
    for t in np.arange(0.7, length, 0.25):
        x, y = start + (end - start) * (t / length)
        ix = min(max(int(np.floor(x + ARENA_HALF)), 0), _GRID - 1)
        iy = min(max(int(np.floor(y + ARENA_HALF)), 0), _GRID - 1)
        if blocked[ix, iy]:
            return False
    return True


def _disc_box(
    centres: np.ndarray, boxes: np.ndarray, half: float | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Push-out normals (box towards disc) and penetration depths of agent discs against boxes.

    Depth is negative when the disc is clear of the box (minus the gap).
    """
    closest = np.clip(centres, boxes - half, boxes + half)
    gap = centres - closest
    distance = np.sqrt(np.einsum("ij,ij->i", gap, gap))
    outside = distance > 1e-9
    normal = np.zeros_like(centres)
    normal[outside] = gap[outside] / distance[outside, None]
    depth = AGENT_RADIUS - distance
    inside = ~outside
    if inside.any():
        offset = centres[inside] - boxes[inside]
        room = np.asarray(half, dtype=np.float64) - np.abs(offset)
        if room.ndim == 1:
            room = np.broadcast_to(room[:, None], offset.shape)
        axis = np.argmin(room, axis=1)
        rows = np.arange(axis.size)
        inner = np.zeros_like(offset)
        inner[rows, axis] = np.where(offset[rows, axis] >= 0.0, 1.0, -1.0)
        normal[inside] = inner
        depth[inside] = room[rows, axis] + AGENT_RADIUS
    return normal, depth


@register_scene
class PyramidsScene(MaxStepOption, Scene):
    """Press the switch, topple the pyramid, touch the gold brick; 3 ray sensors + 4 floats."""

    name = "Pyramids"
    summary = "switch, pyramid and gold brick (3 ray sensors 56 + vector 4, discrete 5, 16 agents)"
    default_area_count = 16
    draw_size = (256, 256)
    fixed_delta_time = 0.02
    option_specs = (MaxStepOption.option(MAX_STEP),)

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``Pyramids?team=0``: three ray sensors and a vector of 4, discrete (5), period 5.

        Raises:
            PlayerError: if the ``max_step`` option is below 1.
        """
        max_step = self.max_step
        sensors = [SensorSpec(name, (spec.observation_size,)) for name, spec in RAY_SENSORS.items()]
        sensors.append(SensorSpec("VectorSensor_size4", (4,)))
        return [
            BehaviorSpec(
                name=BEHAVIOR,
                sensors=tuple(sensors),
                action_spec=ActionSpec(discrete_branches=(5,)),
                decision=DecisionSettings(period=5, take_actions_between_decisions=True),
                max_step=max_step,
            )
        ]

    def setup(self, context: SceneContext) -> None:
        """Per-area state of the agent, switch, pyramid, gold brick and stone pyramids."""
        super().setup(context)
        n = context.area_count
        self.agent_position = np.zeros((n, 2))
        self.agent_velocity = np.zeros((n, 2))
        self.heading = np.zeros(n)
        self.switch_position = np.zeros((n, 2))
        self.switch_on = np.zeros(n, dtype=bool)
        self.pyramid_cell = np.zeros(n, dtype=np.int64)
        self.pyramid_state = np.zeros(n, dtype=np.int64)
        self.pyramid_position = np.zeros((n, 2))
        self.gold_position = np.zeros((n, 2))
        self.stone_positions = np.zeros((n, STONE_COUNT, 2))
        #: Pyramids spawned in each area's current episode (0 or 1).
        self.spawned_this_episode = np.zeros(n, dtype=np.int64)
        #: Episodes begun per area (keys the heuristic's path cache).
        self.episodes = np.zeros(n, dtype=np.int64)
        #: Gold bricks touched since start-up (for statistics and tests).
        self.golds = 0
        self._static_blocked = _static_blocked()
        self._paths: dict[int, tuple[tuple[object, ...], np.ndarray, np.ndarray]] = {}

    # ---- episode -----------------------------------------------------------------------------

    def _spots(self, cells: np.ndarray) -> np.ndarray:
        """Uniform spots within the spawn range of the given cells (any shape)."""
        noise = self.ctx.rng.uniform(-SPAWN_RANGE, SPAWN_RANGE, size=(*cells.shape, 2))
        return CELL_CENTRES[cells] + noise

    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """Shuffle the 9 spawn cells over agent, switch, pyramid and stones; reset the switch."""
        k = slots.size
        rng = self.ctx.rng
        cells = np.argsort(rng.random((k, 9)), axis=1)
        self.agent_position[slots] = self._spots(cells[:, 0])
        self.heading[slots] = np.radians(rng.integers(0, 360, size=k))
        self.agent_velocity[slots] = 0.0
        self.switch_position[slots] = self._spots(cells[:, 1])
        self.switch_on[slots] = False
        self.pyramid_cell[slots] = cells[:, 2]
        self.pyramid_state[slots] = NO_PYRAMID
        self.stone_positions[slots] = self._spots(cells[:, 3:])
        self.spawned_this_episode[slots] = 0
        self.episodes[slots] += 1

    # ---- observations ------------------------------------------------------------------------

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """Three ray fans over walls, stones, switch, pyramid and gold; switch state, velocity."""
        k = slots.size
        targets = RayTargets(k)
        targets.add_segments(WALLS, WALL_TAG)
        targets.add_boxes(self.stone_positions[slots], np.full((1, 2), PYRAMID_HALF), STONE_TAG)
        switch_tag = np.where(self.switch_on[slots], SWITCH_ON_TAG, SWITCH_OFF_TAG)[:, None]
        targets.add_boxes(
            self.switch_position[slots, None, :], np.full((1, 2), SWITCH_HALF), switch_tag
        )
        state = self.pyramid_state[slots, None]
        targets.add_boxes(
            self.pyramid_position[slots, None, :],
            np.full((1, 2), PYRAMID_HALF),
            BLOCK_TAG,
            active=state == STANDING,
        )
        targets.add_boxes(
            self.gold_position[slots, None, :],
            np.full((1, 2), GOLD_HALF),
            GOAL_TAG,
            active=state == TOPPLED,
        )
        origins = self.agent_position[slots]
        headings = self.heading[slots]
        rays = [spec.perceive(targets, origins, headings) for spec in RAY_SENSORS.values()]
        forward = _unit(headings)
        right = np.stack([forward[:, 1], -forward[:, 0]], axis=1)
        velocity = self.agent_velocity[slots]
        vector = np.zeros((k, 4), dtype=np.float32)
        vector[:, 0] = self.switch_on[slots]
        vector[:, 1] = np.einsum("ij,ij->i", velocity, right)
        vector[:, 3] = np.einsum("ij,ij->i", velocity, forward)
        return [*rays, vector]

    # ---- actions and physics -----------------------------------------------------------------

    def on_action_received(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        continuous: np.ndarray,
        discrete: np.ndarray,
    ) -> None:
        """Turn or push the agent; every executed action costs 1/max_step."""
        action = discrete[:, 0]
        turn = np.where(action == 3, -1.0, np.where(action == 4, 1.0, 0.0))
        self.heading[slots] += np.radians(TURN_DEGREES_PER_STEP) * turn
        push = np.where(action == 1, 1.0, np.where(action == 2, -1.0, 0.0))
        self.agent_velocity[slots] += _unit(self.heading[slots]) * (VELOCITY_CHANGE * push)[:, None]
        batch.add_reward(slots, -1.0 / self.max_step)

    def after_academy_step(self) -> None:
        """Damp, slow and move the agents in collision sub-steps; press, topple and score."""
        dt = self.fixed_delta_time
        velocity = _slowed(self.agent_velocity * (1.0 - DRAG * dt), FRICTION * GRAVITY * dt)
        position = self.agent_position.copy()
        travel = float(np.sqrt(np.einsum("ij,ij->i", velocity, velocity)).max(initial=0.0)) * dt
        substeps = max(1, int(np.ceil(travel / MAX_SUBSTEP)))
        standing = self.pyramid_state == STANDING
        fallen = self.pyramid_state == TOPPLED
        n = position.shape[0]
        pressed = np.zeros(n, dtype=bool)
        toppled = np.zeros(n, dtype=bool)
        scored = np.zeros(n, dtype=bool)
        for _ in range(substeps):
            position += velocity * (dt / substeps)
            position, velocity = self._resolve_walls(position, velocity)
            for stone in range(STONE_COUNT):
                position, velocity, _ = self._resolve_box(
                    position, velocity, self.stone_positions[:, stone], PYRAMID_HALF, None
                )
            position, velocity, touching = self._resolve_box(
                position, velocity, self.switch_position, SWITCH_HALF, None
            )
            pressed |= touching
            position, velocity, touching = self._resolve_box(
                position, velocity, self.pyramid_position, PYRAMID_HALF, standing
            )
            toppled |= touching
            _, depth = _disc_box(position, self.gold_position, GOLD_HALF)
            scored |= fallen & (depth > -1e-6)
        self.agent_position = position
        self.agent_velocity = velocity
        self._topple(np.flatnonzero(toppled))
        self._press(np.flatnonzero(pressed & ~self.switch_on))
        winners = np.flatnonzero(scored)
        if winners.size:
            self.golds += int(winners.size)
            batch = self.ctx.batch(BEHAVIOR)
            batch.set_reward(winners, GOLD_REWARD)
            batch.end_episode(winners)

    def _resolve_walls(
        self, position: np.ndarray, velocity: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Push agents out of the inner walls and back inside the outer ones; the velocity
        into a wall is removed (the agent slides along it)."""
        limit = ARENA_HALF - AGENT_RADIUS
        for x0, y0, x1, y1 in WALLS[4:]:
            start = np.array([x0, y0])
            edge = np.array([x1 - x0, y1 - y0])
            t = np.clip((position - start) @ edge / (edge @ edge), 0.0, 1.0)
            gap = position - (start + t[:, None] * edge)
            distance = np.sqrt(np.einsum("ij,ij->i", gap, gap))
            hit = distance < AGENT_RADIUS
            if hit.any():
                normal = gap[hit] / np.maximum(distance[hit], 1e-9)[:, None]
                position[hit] += normal * (AGENT_RADIUS - distance[hit])[:, None]
                into = np.minimum(np.einsum("ij,ij->i", velocity[hit], normal), 0.0)
                velocity[hit] -= normal * into[:, None]
        outside = np.abs(position) > limit
        velocity[outside] = 0.0
        return np.clip(position, -limit, limit), velocity

    def _resolve_box(
        self,
        position: np.ndarray,
        velocity: np.ndarray,
        boxes: np.ndarray,
        half: float,
        active: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Push agents out of one box per area; returns the touching areas too."""
        normal, depth = _disc_box(position, boxes, half)
        touching = depth > -1e-6
        if active is not None:
            touching &= active
        hit = touching & (depth > 0.0)
        position[hit] += normal[hit] * depth[hit, None]
        into = np.minimum(np.einsum("ij,ij->i", velocity, normal), 0.0)
        velocity[hit] -= normal[hit] * into[hit, None]
        return position, velocity, touching

    def _press(self, areas: np.ndarray) -> None:
        """Turn these switches on and spawn each area's pyramid (once per episode)."""
        if not areas.size:
            return
        self.switch_on[areas] = True
        self.pyramid_position[areas] = self._spots(self.pyramid_cell[areas])
        self.pyramid_state[areas] = STANDING
        self.spawned_this_episode[areas] += 1

    def _topple(self, areas: np.ndarray) -> None:
        """Topple these pyramids: the gold brick lands beyond the centre, away from the agent."""
        if not areas.size:
            return
        away = self.pyramid_position[areas] - self.agent_position[areas]
        length = np.maximum(np.linalg.norm(away, axis=1), 1e-9)
        drop = self.pyramid_position[areas] + away / length[:, None] * GOLD_DROP
        self.gold_position[areas] = np.clip(drop, -ARENA_HALF + 1.0, ARENA_HALF - 1.0)
        self.pyramid_state[areas] = TOPPLED

    # ---- heuristic ---------------------------------------------------------------------------

    def draw(self, area: int, size: tuple[int, int]) -> np.ndarray:
        """The arena from above: walls, the switch (red, green once pressed), the stone
        pyramids (grey), the pyramid (orange) or, once toppled, its gold brick, and the agent."""
        canvas = Canvas(*size, (-ARENA_HALF, -ARENA_HALF, ARENA_HALF, ARENA_HALF))
        canvas.rectangle((0.0, 0.0), (ARENA_HALF, ARENA_HALF), FLOOR)
        canvas.segments(WALLS, WALL, width=2)
        switch = GREEN if self.switch_on[area] else RED
        canvas.rectangle(self.switch_position[area], (SWITCH_HALF, SWITCH_HALF), switch)
        for stone in self.stone_positions[area]:
            canvas.rectangle(stone, (PYRAMID_HALF, PYRAMID_HALF), GREY, min_pixels=4)
        state = int(self.pyramid_state[area])
        if state == STANDING:
            canvas.rectangle(
                self.pyramid_position[area], (PYRAMID_HALF, PYRAMID_HALF), ORANGE, min_pixels=4
            )
        elif state == TOPPLED:
            canvas.rectangle(self.gold_position[area], (GOLD_HALF, GOLD_HALF), GOLD, min_pixels=5)
        canvas.agent(self.agent_position[area], AGENT_RADIUS, float(self.heading[area]), BLUE)
        return canvas.picture()

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Go to the switch, then to the pyramid, then to the gold brick, around obstacles.

        Uses the area's state (a scripted player, not a learner): a grid path from the agent to
        the current target, recomputed when the target changes.
        """
        actions = np.zeros(slots.size, dtype=np.int32)
        for row, area in enumerate(slots.tolist()):
            target, half = self._target(area)
            agent = self.agent_position[area]
            waypoint, remaining = self._waypoint(area, target, half)
            wanted = waypoint - agent
            angle = np.arctan2(wanted[1], wanted[0]) - self.heading[area]
            angle = (angle + np.pi) % (2.0 * np.pi) - np.pi
            # Forward speed (Unity's velocity stays in the world frame while the agent turns).
            along = float(self.agent_velocity[area] @ _unit(self.heading[area]))
            limit = min(_TOP_SPEED, _SPEED_PER_UNIT * max(remaining, 1.0))
            if abs(angle) < np.radians(15.0):
                actions[row] = 1 if along < limit else (2 if along > limit + _BRAKE_SPEED else 0)
            elif along > _BRAKE_SPEED:
                actions[row] = 2  # brake before turning: the momentum would carry it off
            else:
                actions[row] = 4 if angle > 0.0 else 3
        return np.zeros((slots.size, 0), np.float32), actions[:, None]

    def _target(self, area: int) -> tuple[np.ndarray, float]:
        state = self.pyramid_state[area]
        if state == TOPPLED:
            return self.gold_position[area], GOLD_HALF
        if state == STANDING:
            return self.pyramid_position[area], PYRAMID_HALF
        return self.switch_position[area], SWITCH_HALF

    def _waypoint(self, area: int, target: np.ndarray, half: float) -> tuple[np.ndarray, float]:
        """A point a few grid cells down the shortest path from the agent to ``target``, and the
        path length left (from the agent's grid cell)."""
        key = (int(self.episodes[area]), int(self.pyramid_state[area]), *target.round(3).tolist())
        cached = self._paths.get(area)
        if cached is None or cached[0] != key:
            blocked = self._static_blocked.copy()
            for stone in self.stone_positions[area]:
                blocked |= _box_cells(stone, PYRAMID_HALF + _CLEARANCE)
            state = self.pyramid_state[area]
            if state != NO_PYRAMID:
                blocked |= _box_cells(self.switch_position[area], SWITCH_HALF + _CLEARANCE)
            goal = _box_cells(target, half + 1.2)
            cached = (key, _distance_field(blocked, goal), blocked)
            self._paths[area] = cached
        dist, blocked = cached[1], cached[2]
        agent = self.agent_position[area]
        ix, iy = (np.clip(np.floor(agent + ARENA_HALF), 0, _GRID - 1)).astype(int)
        remaining = float(dist[ix, iy]) if np.isfinite(dist[ix, iy]) else 0.0
        near = np.max(np.abs(agent - target)) < half + 2.0
        if near and _clear_line(blocked, agent, target):
            return target, remaining
        path: list[np.ndarray] = []
        for _ in range(_LOOKAHEAD):
            best = (dist[ix, iy], ix, iy)
            for dx, dy in _NEIGHBOURS:
                jx, jy = ix + dx, iy + dy
                if 0 <= jx < _GRID and 0 <= jy < _GRID and dist[jx, jy] < best[0]:
                    best = (dist[jx, jy], jx, jy)
            if best[1] == ix and best[2] == iy:
                break
            ix, iy = best[1], best[2]
            path.append(np.array([_GRID_CENTRES[ix], _GRID_CENTRES[iy]]))
        if not path:
            return target, remaining
        # The farthest path cell in a straight, unobstructed line (no cutting round corners).
        for waypoint in reversed(path[1:]):
            if _clear_line(blocked, agent, waypoint):
                return waypoint, remaining
        return path[0], remaining
