"""Sorter: touch the numbered tiles on a round wall in increasing order (ML-Agents' ``Sorter``).

Behavior ``Sorter?team=0``, 8 areas with one agent each. Three sensors (wire order):

* ``BufferSensor`` ``(20, 23)``, a variable-length sensor (dimension properties
  ``[VARIABLE_SIZE, NONE]``): one row per tile shown this episode, in increasing number, the other
  rows zeros. A row is a one-hot of the tile's ``NumberValue`` (1 to 20) at that index, then
  ``(tile x - agent x) / 20`` at index 20 and ``(tile z - agent z) / 20`` at index 21 (the tile's
  collider centre), then 1 if it was touched already at index 22. As in ``SorterAgent.cs``,
  index 20 is written after the one-hot, so tile 20's one-hot is overwritten by its x offset.
* ``RBSensor`` ``(10,)``, the ``RigidBodySensorComponent`` with its virtual root on the agent
  itself and local-space translation, rotation and linear velocity only: the root pose is
  disabled, so it holds the agent body's pose relative to the agent (translation 0, rotation
  quaternion ``(0, 0, 0, 1)``) and its velocity in the agent's frame ``(right, up, forward)``.
* ``StackingSensor_size2_VectorSensor_size4`` ``(8,)``: the agent's area-local ``x / 20``,
  ``z / 20``, ``forward.x``, ``forward.z``, stacked over 2 reports.

Three discrete branches of 3: forward (1 forward, 2 backward), sideways (1 right, 2 left; it
replaces the forward move, as the script assigns rather than adds) and turn (1 left, 2 right, 4
degrees per step). Decision period 5 with actions between decisions, max step 5000 (scene option
``max_step``). Every executed action adds -1/max step. Touching the next tile in increasing order
adds +1 and marks it visited (the episode ends when all are visited); touching any other tile not
yet touched adds -1 and ends the episode; touching a visited tile does nothing.

Episodes: ``num_tiles`` (environment parameter, default 20, the prefab's ``DefaultMaxNumTiles``)
bounds the tiles shown: ``U{1..num_tiles}`` distinct tiles of the 20, each at a distinct one of
20 wall slots 18 degrees apart (slot ``k`` at yaw ``18 k``). The agent goes back to the area's
centre with zero velocity and keeps its heading (the script does not reset its rotation; it
starts facing ``-z``, the prefab's 180-degree yaw).

Physics (2-D; Unity's z is y here), facts of ``Area.prefab`` and ``Sorter.unity``: the agent is a
1 x 1 box, modelled as a disc of radius 0.5; each step a move adds 2 units/s to its velocity
(``AddForce(dir * 2, VelocityChange)``); Rigidbody drag 4 keeps ``1 - 4 dt`` of the speed and
kinetic friction (Unity's default material, 0.6, under gravity 9.81 x the scene's
``gravityMultiplier`` 2.5) takes ``0.6 g dt`` off it (:func:`~.pushblock.slide`). A tile's
collider is a box 3.5 wide and 1.52 deep whose centre is 20.5 from the area centre. The round
wall is a circle of radius :data:`WALL_RADIUS`; its mesh is not in the public sources, so its
radius is estimated from the floor's (20.29). Tiles shown and the wall stop the agent (the
velocity into them is removed); moves are split into sub-steps of at most 0.25 units.
Not modelled: the box's corners, rotation from contacts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..academy import AgentBatch, SceneContext
from ..render import BLUE, GOLD, GREEN, GREY, WALL, WHITE, Canvas
from ..specs import ActionSpec, BehaviorSpec, DecisionSettings, DimensionProperty, SensorSpec
from .base import MaxStepOption, Scene
from .pushblock import GRAVITY, slide, substep_count
from .registry import register_scene

__all__ = ["SorterScene", "tile_centres"]

MAX_STEP = 5000
#: ``k_HighestTileValue``: tiles numbered 1 to 20, 20 wall slots.
TILE_COUNT = 20
DEFAULT_MAX_TILES = 20
ROW_SIZE = TILE_COUNT + 3
TILE_RADIUS = 20.5
TILE_HALF_WIDTH = 1.75
TILE_HALF_DEPTH = 0.76
WALL_RADIUS = 20.29
AGENT_RADIUS = 0.5
MOVE_SPEED = 2.0
AGENT_DRAG = 4.0
FRICTION = 0.6
GRAVITY_MULTIPLIER = 2.5
TURN_DEGREES_PER_STEP = 4.0
FIXED_DELTA_TIME = 0.02
START_YAW = 180.0
CONTACT_SLACK = 0.02
"""How close (units) the agent's disc must come to a tile's box to count as touching it."""


#: The floor's colour in :meth:`SorterScene.draw`.
_ROOM = (0.27, 0.29, 0.31)


def tile_centres(slots: np.ndarray) -> np.ndarray:
    """Centres ``(..., 2)`` (x, z) of the tile colliders standing at wall ``slots``."""
    yaw = np.radians(slots * (360.0 / TILE_COUNT))
    return TILE_RADIUS * np.stack([np.sin(yaw), np.cos(yaw)], axis=-1)


def _forward(yaw_degrees: np.ndarray) -> np.ndarray:
    """Unity's ``transform.forward`` (x, z) for a yaw about ``+y`` (clockwise seen from above)."""
    yaw = np.radians(yaw_degrees)
    return np.stack([np.sin(yaw), np.cos(yaw)], axis=-1)


def _right(yaw_degrees: np.ndarray) -> np.ndarray:
    """Unity's ``transform.right`` (x, z)."""
    yaw = np.radians(yaw_degrees)
    return np.stack([np.cos(yaw), -np.sin(yaw)], axis=-1)


@register_scene
class SorterScene(MaxStepOption, Scene):
    """Touch the shown tiles in increasing order; a buffer sensor of tiles, discrete 3x3x3."""

    name = "Sorter"
    summary = (
        "touch numbered tiles in order (buffer sensor 20x23 + 10 + 8 stacked, discrete 3,3,3, "
        "8 agents)"
    )
    default_area_count = 8
    draw_size = (256, 256)
    fixed_delta_time = FIXED_DELTA_TIME
    option_specs = (MaxStepOption.option(MAX_STEP),)

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``Sorter?team=0``: buffer (20, 23), rigid body (10), vector 4 stacked 2x; discrete
        (3, 3, 3), period 5, max step 5000 (option ``max_step``)."""
        variable = (int(DimensionProperty.VARIABLE_SIZE), int(DimensionProperty.NONE))
        return [
            BehaviorSpec(
                name="Sorter",
                sensors=(
                    SensorSpec(
                        "BufferSensor", (TILE_COUNT, ROW_SIZE), dimension_properties=variable
                    ),
                    SensorSpec("RBSensor", (10,)),
                    SensorSpec("VectorSensor_size4", (4,), stack_size=2),
                ),
                action_spec=ActionSpec(discrete_branches=(3, 3, 3)),
                decision=DecisionSettings(period=5, take_actions_between_decisions=True),
                max_step=self.max_step,
            )
        ]

    def setup(self, context: SceneContext) -> None:
        """Per-area agent and tile state."""
        super().setup(context)
        n = context.area_count
        self.position = np.zeros((n, 2))
        self.velocity = np.zeros((n, 2))
        self.yaw = np.full(n, START_YAW)
        #: Tile numbers shown (ascending), -1 padding; their wall slots; visited flags.
        self.numbers = np.full((n, TILE_COUNT), -1, dtype=np.int64)
        self.slots = np.zeros((n, TILE_COUNT), dtype=np.int64)
        self.visited = np.zeros((n, TILE_COUNT), dtype=bool)
        #: Index (into the shown tiles) of the tile to touch next.
        self.next_tile = np.zeros(n, dtype=np.int64)
        #: Tiles touched in order and episodes ended at a wrong tile, since start-up.
        self.correct = 0
        self.wrong = 0

    # ---- episode -----------------------------------------------------------------------------

    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """Draw the tiles shown and their wall slots; the agent back to the centre."""
        rng = self.ctx.rng
        limits = self.ctx.parameters.read_many("num_tiles", DEFAULT_MAX_TILES, slots.size)
        for area, limit in zip(slots, limits, strict=True):
            most = int(np.clip(int(limit), 1, TILE_COUNT))
            count = int(rng.integers(1, most + 1))
            shown = np.sort(rng.choice(TILE_COUNT, size=count, replace=False)) + 1
            self.numbers[area] = -1
            self.numbers[area, :count] = shown
            self.slots[area] = 0
            self.slots[area, :count] = rng.choice(TILE_COUNT, size=count, replace=False)
        self.visited[slots] = False
        self.next_tile[slots] = 0
        self.position[slots] = 0.0
        self.velocity[slots] = 0.0

    # ---- observations ------------------------------------------------------------------------

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """Buffer rows of the shown tiles, the rigid-body sensor and the position/facing."""
        k = slots.size
        rows = np.zeros((k, TILE_COUNT, ROW_SIZE), dtype=np.float32)
        numbers = self.numbers[slots]
        shown = numbers > 0
        agent, tile = np.nonzero(shown)
        rows[agent, tile, numbers[agent, tile]] = 1.0
        offsets = (tile_centres(self.slots[slots]) - self.position[slots, None, :]) / 20.0
        rows[:, :, TILE_COUNT] = np.where(shown, offsets[..., 0], 0.0)
        rows[:, :, TILE_COUNT + 1] = np.where(shown, offsets[..., 1], 0.0)
        rows[:, :, TILE_COUNT + 2] = self.visited[slots]
        forward = _forward(self.yaw[slots])
        right = _right(self.yaw[slots])
        velocity = self.velocity[slots]
        body = np.zeros((k, 10), dtype=np.float32)
        body[:, 6] = 1.0  # the identity rotation (x, y, z, w)
        body[:, 7] = np.einsum("ij,ij->i", velocity, right)
        body[:, 9] = np.einsum("ij,ij->i", velocity, forward)
        vector = np.concatenate([self.position[slots] / 20.0, forward], axis=1)
        return [rows, body, vector.astype(np.float32)]

    # ---- actions and physics -----------------------------------------------------------------

    def on_action_received(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        continuous: np.ndarray,
        discrete: np.ndarray,
    ) -> None:
        """Turn, then push along the chosen direction; every executed action costs
        ``1 / max_step``."""
        move, side, turn = (np.clip(discrete[:, i], 0, 2) for i in range(3))
        self.yaw[slots] += TURN_DEGREES_PER_STEP * np.select([turn == 1, turn == 2], [-1.0, 1.0])
        forward = _forward(self.yaw[slots])
        right = _right(self.yaw[slots])
        sign = np.select([move == 1, move == 2], [1.0, -1.0], 0.0)[:, None]
        direction = forward * sign
        side_sign = np.select([side == 1, side == 2], [1.0, -1.0], 0.0)[:, None]
        direction = np.where(side[:, None] > 0, right * side_sign, direction)
        self.velocity[slots] += direction * MOVE_SPEED
        batch.add_reward(slots, -1.0 / self.max_step)

    def after_academy_step(self) -> None:
        """Drag and friction, moves with the wall and the tiles as obstacles, then touches."""
        dt = self.fixed_delta_time
        loss = FRICTION * GRAVITY * GRAVITY_MULTIPLIER * dt
        velocity = slide(self.velocity, AGENT_DRAG * dt, loss)
        position = self.position.copy()
        substeps = substep_count(velocity, np.zeros((0, 2)), dt)  # the tiles stand still
        shown = self.numbers > 0
        centres = tile_centres(self.slots)
        for _ in range(substeps):
            position += velocity * (dt / substeps)
            position, velocity = self._against_tiles(position, velocity, centres, shown)
            position, velocity = _against_wall(position, velocity)
        self.position, self.velocity = position, velocity
        self._touch(centres, shown)

    def _against_tiles(
        self,
        position: np.ndarray,
        velocity: np.ndarray,
        centres: np.ndarray,
        shown: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Push agents out of the shown tiles' boxes; remove the velocity into them."""
        gap, normal = _tile_gaps(position, centres)
        depth = np.where(shown, AGENT_RADIUS - gap, 0.0)
        deepest = np.argmax(depth, axis=1)
        rows = np.arange(len(position))
        push = np.maximum(depth[rows, deepest], 0.0)
        n = normal[rows, deepest]
        position = position + n * push[:, None]
        into = np.minimum(np.einsum("ij,ij->i", velocity, n), 0.0)
        velocity = velocity - n * np.where(push > 0.0, into, 0.0)[:, None]
        return position, velocity

    def _touch(self, centres: np.ndarray, shown: np.ndarray) -> None:
        """Rewards and episode ends of the tiles the agents touch (not yet visited ones)."""
        gap, _ = _tile_gaps(self.position, centres)
        touching = shown & ~self.visited & (gap <= AGENT_RADIUS + CONTACT_SLACK)
        batch = self.ctx.batch("Sorter")
        for area_index in np.flatnonzero(touching.any(axis=1)):
            area = int(area_index)
            for tile in np.flatnonzero(touching[area]):
                if tile == self.next_tile[area]:
                    batch.add_reward([area], 1.0)
                    self.visited[area, tile] = True
                    self.next_tile[area] += 1
                    self.correct += 1
                    if self.next_tile[area] == int(shown[area].sum()):
                        batch.end_episode([area])
                        break
                else:
                    batch.add_reward([area], -1.0)
                    batch.end_episode([area])
                    self.wrong += 1
                    break

    # ---- heuristic ---------------------------------------------------------------------------

    def draw(self, area: int, size: tuple[int, int]) -> np.ndarray:
        """The round room from above: the tiles shown, numbered (touched: green, the next one:
        gold, the others: grey), and the agent."""
        canvas = Canvas(*size, (-WALL_RADIUS, -WALL_RADIUS, WALL_RADIUS, WALL_RADIUS))
        canvas.circle((0.0, 0.0), WALL_RADIUS, _ROOM, outline=WALL)
        shown = np.flatnonzero(self.numbers[area] >= 0)
        for tile in shown:
            yaw = np.radians(float(self.slots[area, tile]) * (360.0 / TILE_COUNT))
            centre = tile_centres(self.slots[area, tile])
            if self.visited[area, tile]:
                colour = GREEN
            elif tile == self.next_tile[area]:
                colour = GOLD
            else:
                colour = GREY
            canvas.rectangle(centre, (TILE_HALF_WIDTH, TILE_HALF_DEPTH), colour, angle=-yaw)
            label = centre * (TILE_RADIUS - 2.6) / TILE_RADIUS
            canvas.text(label, str(int(self.numbers[area, tile])), WHITE, size=11)
        heading = np.pi / 2.0 - np.radians(float(self.yaw[area]))
        canvas.agent(self.position[area], AGENT_RADIUS, heading, BLUE)
        return canvas.picture()

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Face the next tile (via a point 4 units in front of it when far off its line), then
        walk forward to it."""
        k = slots.size
        target_slot = self.slots[slots, np.minimum(self.next_tile[slots], TILE_COUNT - 1)]
        target = tile_centres(target_slot)
        inward = -target / TILE_RADIUS
        approach = target + inward * 4.0
        position = self.position[slots]
        # Leave the wall towards the approach point first unless already close to the tile.
        near = np.linalg.norm(target - position, axis=1) < 6.0
        aim = np.where(near[:, None], target, approach)
        to_aim = aim - position
        wanted = np.degrees(np.arctan2(to_aim[:, 0], to_aim[:, 1]))
        error = (wanted - self.yaw[slots] + 180.0) % 360.0 - 180.0
        actions = np.zeros((k, 3), dtype=np.int32)
        actions[:, 2] = np.select([error < -4.0, error > 4.0], [1, 2], 0)
        actions[:, 0] = np.where(np.abs(error) < 30.0, 1, 0)
        return np.zeros((k, 0), np.float32), actions


def _tile_gaps(position: np.ndarray, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distances ``(n, 20)`` from each agent centre to each tile box (minus the depth to the
    box's inner face for a centre inside it) and the unit normals ``(n, 20, 2)`` from the box
    towards the agent (towards the area's centre for a centre inside)."""
    radial = centres / TILE_RADIUS  # (n, 20, 2)
    tangent = np.stack([radial[..., 1], -radial[..., 0]], axis=-1)
    offset = position[:, None, :] - centres
    r = np.einsum("ntc,ntc->nt", offset, radial)
    t = np.einsum("ntc,ntc->nt", offset, tangent)
    dr = r - np.clip(r, -TILE_HALF_DEPTH, TILE_HALF_DEPTH)
    dt = t - np.clip(t, -TILE_HALF_WIDTH, TILE_HALF_WIDTH)
    gap = np.sqrt(dr * dr + dt * dt)
    outside = gap > 1e-9
    normal = (dr[..., None] * radial + dt[..., None] * tangent) / np.maximum(gap, 1e-9)[..., None]
    inside_normal = -radial  # a centre inside a tile leaves towards the area's centre
    normal = np.where(outside[..., None], normal, inside_normal)
    gap = np.where(outside, gap, -(TILE_HALF_DEPTH - np.abs(r)))
    return gap, normal


def _against_wall(position: np.ndarray, velocity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keep agent discs inside the round wall; remove the velocity into it."""
    distance = np.linalg.norm(position, axis=1)
    limit = WALL_RADIUS - AGENT_RADIUS
    out = distance > limit
    if not out.any():
        return position, velocity
    outward = position[out] / distance[out, None]
    position = position.copy()
    velocity = velocity.copy()
    position[out] = outward * limit
    along = np.maximum(np.einsum("ij,ij->i", velocity[out], outward), 0.0)
    velocity[out] -= outward * along[:, None]
    return position, velocity
