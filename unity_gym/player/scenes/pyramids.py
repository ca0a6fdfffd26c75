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

Simplifications (2-D physics instead of PhysX): the arena is a square of side 90 with walls at
+-45 plus four cross-shaped walls (arms 15 long) at (+-16.5, +-16.5) between the spawn cells (the
prefab's ``CruciformWall``; the four-fold symmetric placement is assumed). The agent is a disc of
radius 0.5 that gains 2 units/s per forward/backward action (Unity's velocity change) and keeps
0.85 of its velocity per step (a stronger damping than Unity's drag and friction, so the top
speed is about 11 units/s), and turns 4 degrees per step (200 degrees/s). The switch (side 2),
the stone pyramids and the pyramid (side 3) are fixed square obstacles; stone pyramids never
topple. A standing pyramid shows its bricks (tag ``block``); any touch topples it: its bricks
are no longer modelled and its gold brick (side 1, tag ``goal``) lands 1.5 beyond the pyramid's
centre, away from the agent. All three ray sensors see the same objects in the plane (Unity
tilts the second and third sensors upwards, by 5 and 10 units over the ray length; that is not
modelled).

The scripted ``heuristic`` reads the area's state: it follows a grid path around walls and
obstacles to the switch, then to the pyramid, then to the gold brick.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..academy import AgentBatch, SceneContext
from ..errors import PlayerError
from ..raycast import RayPerceptionSpec, RayTargets
from ..specs import ActionSpec, BehaviorSpec, DecisionSettings, SensorSpec
from .base import Scene, SceneOption
from .registry import register_scene

__all__ = ["PyramidsScene"]

BEHAVIOR = "Pyramids"
MAX_STEP = 5000
GOLD_REWARD = 2.0
ARENA_HALF = 45.0
CELL_SPACING = 30.0
SPAWN_RANGE = 25.0 / 2.1
AGENT_RADIUS = 0.5
VELOCITY_CHANGE = 2.0
DAMPING = 0.85
TURN_DEGREES_PER_STEP = 4.0
SWITCH_HALF = 1.0
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
    """Outer walls and the arms of the four crosses as ``[x0, y0, x1, y1]`` rows."""
    h = ARENA_HALF
    rows = [[-h, -h, h, -h], [h, -h, h, h], [h, h, -h, h], [-h, h, -h, -h]]
    for cx in (-16.5, 16.5):
        for cy in (-16.5, 16.5):
            rows.append([cx - 7.5, cy, cx + 7.5, cy])
            rows.append([cx, cy - 7.5, cx, cy + 7.5])
    return np.array(rows)


WALLS = _wall_segments()

# Heuristic path planning: a grid of 1 x 1 cells over the arena.
_GRID = int(2 * ARENA_HALF)
_GRID_CENTRES = np.arange(_GRID) - ARENA_HALF + 0.5
_CLEARANCE = AGENT_RADIUS + 0.6
_NEIGHBOURS = [(dx, dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1) if dx or dy]
_LOOKAHEAD = 6


def _unit(angles: np.ndarray) -> np.ndarray:
    return np.stack([np.cos(angles), np.sin(angles)], axis=-1)


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
class PyramidsScene(Scene):
    """Press the switch, topple the pyramid, touch the gold brick; 3 ray sensors + 4 floats."""

    name = "Pyramids"
    summary = "switch, pyramid and gold brick (3 ray sensors 56 + vector 4, discrete 5, 16 agents)"
    default_area_count = 16
    fixed_delta_time = 0.02
    option_specs = (
        SceneOption(
            "max_step", int, MAX_STEP, "the agent's MaxStep; the step penalty is -1/max_step"
        ),
    )

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``Pyramids?team=0``: three ray sensors and a vector of 4, discrete (5), period 5.

        Raises:
            PlayerError: if the ``max_step`` option is below 1.
        """
        max_step = int(self.options["max_step"])
        if max_step < 1:
            raise PlayerError(
                f"scene {self.name}: option max_step={max_step} must be at least 1 "
                f"(Unity's Pyramids uses {MAX_STEP})"
            )
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
        batch.add_reward(slots, -1.0 / self.options["max_step"])

    def after_academy_step(self) -> None:
        """Move the agents, resolve walls and obstacles, press switches, topple pyramids, score."""
        position = self.agent_position + self.agent_velocity * self.fixed_delta_time
        velocity = self.agent_velocity * DAMPING
        position, velocity = self._resolve_walls(position, velocity)
        for stone in range(STONE_COUNT):
            position, velocity, _ = self._resolve_box(
                position, velocity, self.stone_positions[:, stone], PYRAMID_HALF, None
            )
        position, velocity, pressed = self._resolve_box(
            position, velocity, self.switch_position, SWITCH_HALF, None
        )
        standing = self.pyramid_state == STANDING
        position, velocity, toppled = self._resolve_box(
            position, velocity, self.pyramid_position, PYRAMID_HALF, standing
        )
        self.agent_position = position
        self.agent_velocity = velocity
        self._topple(np.flatnonzero(toppled))
        self._press(np.flatnonzero(pressed & ~self.switch_on))
        _, depth = _disc_box(position, self.gold_position, GOLD_HALF)
        scored = np.flatnonzero((self.pyramid_state == TOPPLED) & (depth > -1e-6))
        if scored.size:
            self.golds += int(scored.size)
            batch = self.ctx.batch(BEHAVIOR)
            batch.set_reward(scored, GOLD_REWARD)
            batch.end_episode(scored)

    def _resolve_walls(
        self, position: np.ndarray, velocity: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
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
            waypoint = self._waypoint(area, target, half)
            wanted = waypoint - agent
            angle = np.arctan2(wanted[1], wanted[0]) - self.heading[area]
            angle = (angle + np.pi) % (2.0 * np.pi) - np.pi
            if abs(angle) < np.radians(15.0):
                actions[row] = 1
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

    def _waypoint(self, area: int, target: np.ndarray, half: float) -> np.ndarray:
        """A point a few grid cells down the shortest path from the agent to ``target``."""
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
        if np.max(np.abs(agent - target)) < half + 2.0 and _clear_line(blocked, agent, target):
            return target
        ix, iy = (np.clip(np.floor(agent + ARENA_HALF), 0, _GRID - 1)).astype(int)
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
            return target
        # The farthest path cell in a straight, unobstructed line (no cutting round corners).
        for waypoint in reversed(path[1:]):
            if _clear_line(blocked, agent, waypoint):
                return waypoint
        return path[0]
