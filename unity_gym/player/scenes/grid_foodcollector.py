"""GridFoodCollector: the FoodCollector game seen through a grid sensor (the grid-sensor version
of ML-Agents' ``FoodCollector`` example, whose agents use the behavior name
``GridFoodCollector``).

The game (arena, food, moves, laser, rewards, episodes, ``agent_scale`` and ``laser_length``,
option ``max_step``, heuristic) is :class:`~.foodcollector.FoodCollectorGame`'s. ML-Agents facts of
this version (``FoodCollectorArea.prefab``: the agents' ``BehaviorParameters`` and
``GridSensorComponent``; ``Scenes/FoodCollector.unity``; the grid sensor's ``GridSensorBase`` and
``BoxOverlapChecker``):

* Behavior ``GridFoodCollector?team=0``, 4 areas (the scene's four ``GridFoodCollectorArea``
  instances) of 5 agents; no vector observation (``VectorObservationSize`` 0, ``useVectorObs``
  off); hybrid actions 3 + (2,), decision period 5 with actions between, max step 5000.
* One sensor ``GridSensor`` ``(5, 40, 40)``, PNG: 40 x 40 cells of 1 x 1 (``CellScale``
  (1, 0.01, 1)) centred on the agent and turned with it (``RotateWithAgent``), one-hot over the
  detectable tags ``food``, ``agent``, ``wall``, ``badFood``, ``frozenAgent`` (``UseOneHotTag``,
  no collider counts). A cell reports what its thin box at the agent's centre height overlaps;
  of several things it reports the one whose bounds come closest to the agent; the agent does not
  see itself. Cell ``(i, j)`` of the checker sits at ``(i - 19.5, j - 19.5)`` in the agent's
  (right, forward) frame, scaled with the agent's transform; the sensor writes row ``h``, column
  ``w`` from cell ``(39 - h, w)``: row 0 is the agent's far right, row 39 its far left, column 0
  behind it and column 39 ahead.

Modelled: a cell's box at the agent's centre height (``0.5 * agent_scale`` above the floor) cuts
a food sphere (radius 0.75, resting on the floor) in a disc of radius
``sqrt(0.75^2 - (h - 0.75)^2)`` and misses it altogether when the agent's centre is 1.5 or more
above the floor; it cuts another agent's box (a disc of ``0.5 * scale`` here) when that agent is
taller than the height; walls count where the cell's box reaches the wall band. "Closest" is
Unity's ``ClosestPointOnBounds`` of the cell centre on the thing's world bounding box: the disc's
square for food and agents, the whole arena for the outer walls (one mesh). Estimated: the
walls' inner faces at +-50 and 1 unit thick (the mesh is not in the public sources) and tall
enough to be cut at any agent height.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..academy import AgentBatch
from ..specs import BehaviorSpec, Compression, SensorSpec
from .foodcollector import (
    AGENT_HALF,
    AGENTS_PER_AREA,
    BAD_FOOD_TAG,
    FOOD_RADIUS,
    FOOD_TAG,
    TAGS,
    WALL_HALF,
    WALL_TAG,
    WALL_THICKNESS,
    FoodCollectorGame,
)
from .registry import register_scene

__all__ = ["GRID_SIZE", "GridFoodCollectorScene", "grid_cell_offsets"]

GRID_SIZE = 40
_CELL_HALF = 0.5


def grid_cell_offsets(scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where the sensor's output rows and columns lie in the agent's frame.

    Args:
        scale: ``(k,)`` agent scales (the grid scales with the agent's transform).

    Returns:
        ``right`` ``(k, 40)``: the offset to the agent's right of output row ``h``
        (``(19.5 - h) * scale``); ``ahead`` ``(k, 40)``: the offset ahead of output column ``w``
        (``(w - 19.5) * scale``).
    """
    steps = np.arange(GRID_SIZE) - (GRID_SIZE - 1) / 2.0
    scale = np.asarray(scale, dtype=np.float64)[:, None]
    return -steps[None, :] * scale, steps[None, :] * scale


@register_scene
class GridFoodCollectorScene(FoodCollectorGame):
    """Collect food seen through a 40 x 40 one-hot grid; hybrid actions, 4 areas x 5 agents."""

    name = "GridFoodCollector"
    summary = "FoodCollector with a grid sensor (5x40x40 PNG, hybrid 3+[2], 4 areas x 5 agents)"
    default_area_count = 4
    behavior_name = "GridFoodCollector"

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``GridFoodCollector?team=0``: ``GridSensor`` (5, 40, 40) PNG; continuous 3 +
        discrete (2), period 5, max step 5000 (option ``max_step``)."""
        grid = SensorSpec("GridSensor", (len(TAGS), GRID_SIZE, GRID_SIZE), Compression.PNG)
        return [self._behavior((grid,))]

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """The one-hot grid around each agent, ``(k, 5, 40, 40)``."""
        return [self.grid(slots)]

    def grid(self, slots: np.ndarray) -> np.ndarray:
        """The grid sensor's observation of agents ``slots``, ``(k, 5, 40, 40)`` float32."""
        k = slots.size
        areas, agents = np.divmod(slots, AGENTS_PER_AREA)
        origin, forward, right = self.agent_frames(slots)
        scale = self.scale[areas, agents]
        height = AGENT_HALF * scale  # the cells' plane above the floor
        row_right, col_ahead = grid_cell_offsets(scale)
        cells = (
            origin[:, None, None, :]
            + row_right[:, :, None, None] * right[:, None, None, :]
            + col_ahead[:, None, :, None] * forward[:, None, None, :]
        )  # (k, 40, 40, 2)
        best = np.full((k, GRID_SIZE * GRID_SIZE), np.inf)
        tag = np.full((k, GRID_SIZE * GRID_SIZE), -1, dtype=np.int64)
        # Walls: one mesh whose bounds hold the arena, so "closest" is the cell centre itself.
        extent = _CELL_HALF * (np.abs(right) + np.abs(forward))  # (k, 2) world half extents
        low = cells - extent[:, None, None, :]
        high = cells + extent[:, None, None, :]
        outer = WALL_HALF + WALL_THICKNESS
        in_band = (high > WALL_HALF) & (low < outer) | (low < -WALL_HALF) & (high > -outer)
        within = (high > -outer) & (low < outer)
        wall = (in_band[..., 0] & within[..., 1]) | (in_band[..., 1] & within[..., 0])
        wall_distance = np.linalg.norm(cells - origin[:, None, None, :], axis=3)
        wall = wall.reshape(k, -1)
        best = np.where(wall, wall_distance.reshape(k, -1), best)
        tag = np.where(wall, WALL_TAG, tag)
        # Food and the other agents: discs where the cells' plane cuts them.
        centres, radii, tags = self._grid_discs(areas, agents, height)
        self._mark_discs(best, tag, origin, forward, right, scale, centres, radii, tags)
        grid = np.zeros((k, len(TAGS), GRID_SIZE * GRID_SIZE), dtype=np.float32)
        rows, cells_hit = np.nonzero(tag >= 0)
        grid[rows, tag[rows, cells_hit], cells_hit] = 1.0
        return grid.reshape(k, len(TAGS), GRID_SIZE, GRID_SIZE)

    def _grid_discs(
        self, areas: np.ndarray, agents: np.ndarray, height: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Centres ``(k, m, 2)``, cut radii ``(k, m)`` (0: not cut) and tags ``(k, m)`` of the
        food and the agents of each observer's area, at each observer's cell height."""
        food = self.food[areas]  # (k, 50, 2)
        dz = height[:, None] - FOOD_RADIUS
        cut = np.sqrt(np.maximum(FOOD_RADIUS**2 - dz**2, 0.0))
        food_radii = np.broadcast_to(cut, food.shape[:2])
        food_tags = np.broadcast_to(np.where(self.is_bad, BAD_FOOD_TAG, FOOD_TAG), food.shape[:2])
        others = self.position[areas]  # (k, 5, 2)
        other_scale = self.scale[areas]
        tall = other_scale > height[:, None]  # the other's box reaches the cells' plane
        seen = tall & (np.arange(AGENTS_PER_AREA)[None, :] != agents[:, None])
        agent_radii = np.where(seen, AGENT_HALF * other_scale, 0.0)
        return (
            np.concatenate([food, others], axis=1),
            np.concatenate([food_radii, agent_radii], axis=1),
            np.concatenate([food_tags, self.agent_tags(areas)], axis=1),
        )

    @staticmethod
    def _mark_discs(
        best: np.ndarray,
        tag: np.ndarray,
        origin: np.ndarray,
        forward: np.ndarray,
        right: np.ndarray,
        scale: np.ndarray,
        centres: np.ndarray,
        radii: np.ndarray,
        tags: np.ndarray,
    ) -> None:
        """Mark the cells each disc overlaps in ``best`` (distance of the thing's bounds from the
        agent) and ``tag`` (in place), keeping the closest thing per cell."""
        offset = centres - origin[:, None, :]
        local_right = np.einsum("kmc,kc->km", offset, right)
        local_ahead = np.einsum("kmc,kc->km", offset, forward)
        middle = (GRID_SIZE - 1) / 2.0
        # Output row h has right offset (middle - h) * scale; column w ahead offset (w - middle).
        row_centre = np.rint(middle - local_right / scale[:, None]).astype(np.int64)
        col_centre = np.rint(local_ahead / scale[:, None] + middle).astype(np.int64)
        reach = int(min(math.ceil((float(radii.max(initial=0.0)) + _CELL_HALF) / scale.min()), 20))
        steps = np.arange(-reach, reach + 1)
        rows = row_centre[:, :, None, None] + steps[None, None, :, None]
        cols = col_centre[:, :, None, None] + steps[None, None, None, :]
        inside = (rows >= 0) & (rows < GRID_SIZE) & (cols >= 0) & (cols < GRID_SIZE)
        cell_right = (middle - rows) * scale[:, None, None, None]
        cell_ahead = (cols - middle) * scale[:, None, None, None]
        dx = np.abs(local_right[:, :, None, None] - cell_right) - _CELL_HALF
        dy = np.abs(local_ahead[:, :, None, None] - cell_ahead) - _CELL_HALF
        gap = np.hypot(np.maximum(dx, 0.0), np.maximum(dy, 0.0))
        radius = radii[:, :, None, None]
        hit = inside & (radius > 0.0) & (gap < radius)
        if not hit.any():
            return
        # ClosestPointOnBounds of the cell centre on the disc's world square, seen from the agent.
        cell_world = (
            origin[:, None, None, None, :]
            + cell_right[..., None] * right[:, None, None, None, :]
            + cell_ahead[..., None] * forward[:, None, None, None, :]
        )
        lower = (centres - radii[..., None])[:, :, None, None, :]
        upper = (centres + radii[..., None])[:, :, None, None, :]
        nearest = np.clip(cell_world, lower, upper)
        distance = np.linalg.norm(nearest - origin[:, None, None, None, :], axis=4)
        observer, thing, r, c = np.nonzero(hit)
        flat = rows[observer, thing, r, 0] * GRID_SIZE + cols[observer, thing, 0, c]
        values = distance[observer, thing, r, c]
        # Per (observer, cell) the closest thing: sort by cell, then distance; keep the first.
        key = observer * GRID_SIZE * GRID_SIZE + flat
        order = np.lexsort((values, key))
        first = np.ones(order.size, dtype=bool)
        first[1:] = key[order][1:] != key[order][:-1]
        chosen = order[first]
        observer, thing, flat, values = (
            observer[chosen],
            thing[chosen],
            flat[chosen],
            values[chosen],
        )
        closer = values < best[observer, flat]
        best[observer[closer], flat[closer]] = values[closer]
        tag[observer[closer], flat[closer]] = tags[observer[closer], thing[closer]]
