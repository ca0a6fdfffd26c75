"""GridWorld: walk to the goal of the signalled colour on a small grid (ML-Agents' ``GridWorld``).

Behavior ``GridWorld?team=0``, 9 areas with one agent each. Observations (wire order):
``CameraSensor`` (3, 64, 84), a top-down picture sent as an RGB PNG, and ``VectorSensor`` (2,), a
GOAL_SIGNAL one-hot telling which goal to reach (``[1, 0]`` green plus, ``[0, 1]`` red cross).
One discrete branch of 5: 0 stay, 1 up (+z), 2 down (-z), 3 left (-x), 4 right (+x). Moves that
would hit the surrounding wall are masked (true = disabled), and ignored if taken anyway. A
decision is requested every step (the agent's script calls ``RequestDecision``); max step 100.
Each executed action adds -0.01; stepping onto the signalled goal *sets* the step's reward to +1,
onto the other goal to -1, and ends the episode.

At each episode begin the area reads the environment parameter ``gridSize`` (default 5, clamped
to 2..16), places the green plus, the red cross and the agent on distinct random cells and draws
the goal colour. The camera sees the grid as Unity's orthographic camera does: the ``gridSize``
rows fill the 64 pixel rows (top = largest z), the grid is centred horizontally and the wall shows
in the side bands; the agent is a light-blue hollow square, the goals a green plus and a red
cross on a dark floor (colours taken from Unity's rendering).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from ..academy import AgentBatch, SceneContext
from ..render import fit_picture
from ..specs import ActionSpec, BehaviorSpec, Compression, ObservationType, SensorSpec
from .base import Scene
from .registry import register_scene

__all__ = ["GridWorldScene"]

IMAGE_HEIGHT = 64
IMAGE_WIDTH = 84
DEFAULT_GRID_SIZE = 5
MIN_GRID_SIZE = 2
MAX_GRID_SIZE = 16
STEP_PENALTY = -0.01
GREEN_PLUS, RED_CROSS = 0, 1
#: Cell offsets of actions 0..4: stay, up (+z), down (-z), left (-x), right (+x).
MOVES = np.array([[0, 0], [0, 1], [0, -1], [-1, 0], [1, 0]])

_BACKGROUND = (0.0, 0.0, 0.0)
_FLOOR = (70 / 255, 74 / 255, 79 / 255)
_WALL = (137 / 255, 139 / 255, 143 / 255)
_AGENT = (61 / 255, 195 / 255, 255 / 255)
_PLUS = (140 / 255, 238 / 255, 151 / 255)
_CROSS = (238 / 255, 92 / 255, 75 / 255)


class _Canvas:
    """Pixel geometry of the camera for one grid size, shared by all areas of that size."""

    def __init__(self, grid_size: int) -> None:
        cell = IMAGE_HEIGHT / grid_size
        margin = (IMAGE_WIDTH - IMAGE_HEIGHT) / 2.0
        column = (np.arange(IMAGE_WIDTH) + 0.5 - margin) / cell
        row = (np.arange(IMAGE_HEIGHT) + 0.5) / cell
        cell_x = np.floor(column).astype(np.int64)
        cell_z = grid_size - 1 - np.floor(row).astype(np.int64)
        inside_x = (cell_x >= 0) & (cell_x < grid_size)
        wall_x = (cell_x == -1) | (cell_x == grid_size)
        #: Cell index ``x * grid_size + z`` of every pixel, -1 outside the grid.
        self.cell = np.where(inside_x[None, :], cell_x[None, :] * grid_size + cell_z[:, None], -1)
        base = np.empty((3, IMAGE_HEIGHT, IMAGE_WIDTH), dtype=np.float32)
        for channel in range(3):
            plane = np.where(wall_x, _WALL[channel], _BACKGROUND[channel])
            base[channel] = np.where(inside_x[None, :], _FLOOR[channel], plane[None, :])
        self.base = base
        u = np.broadcast_to(np.mod(column, 1.0)[None, :], self.cell.shape)
        v = np.broadcast_to(np.mod(row, 1.0)[:, None], self.cell.shape)
        centred_u, centred_v = np.abs(u - 0.5), np.abs(v - 0.5)
        ring = np.maximum(centred_u, centred_v)
        #: Pixel stencils of the three shapes within their cell.
        self.agent = (ring < 0.46) & (ring > 0.30)
        bar = 0.09
        self.plus = ((centred_u < bar) & (centred_v < 0.40)) | (
            (centred_v < bar) & (centred_u < 0.40)
        )
        diagonal = np.minimum(np.abs(u - v), np.abs(u + v - 1.0))
        self.cross = (diagonal < 0.11) & (ring < 0.38)
        self.pixels = {
            name: self._pixels_per_cell(stencil, grid_size * grid_size)
            for name, stencil in (("agent", self.agent), ("plus", self.plus), ("cross", self.cross))
        }

    def _pixels_per_cell(self, stencil: np.ndarray, cells: int) -> np.ndarray:
        """``(cells, m)`` flat pixel indices of ``stencil`` in each cell, padded by repeating
        the cell's first pixel (painting a pixel twice is harmless)."""
        flat_cell = self.cell.reshape(-1)
        chosen = np.flatnonzero(stencil.reshape(-1) & (flat_cell >= 0))
        owners = flat_cell[chosen]
        counts = np.bincount(owners, minlength=cells)
        order = np.argsort(owners, kind="stable")
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        width = max(int(counts.max()), 1)
        position = np.minimum(np.arange(width)[None, :], np.maximum(counts[:, None] - 1, 0))
        return chosen[order][np.minimum(starts[:, None] + position, chosen.size - 1)]

    def render(self, agent: np.ndarray, plus: np.ndarray, cross: np.ndarray) -> np.ndarray:
        """Images ``(k, 3, H, W)`` for cells ``(k,)`` of the agent and the two goals."""
        k = agent.size
        size = IMAGE_HEIGHT * IMAGE_WIDTH
        flat = np.empty((k, 3, size), dtype=np.float32)
        flat[:] = self.base.reshape(1, 3, size)
        rows = np.arange(k)[:, None, None]
        channels = np.arange(3)[None, None, :]
        for cells, name, colour in (
            (plus, "plus", _PLUS),
            (cross, "cross", _CROSS),
            (agent, "agent", _AGENT),
        ):
            pixels = self.pixels[name][cells][:, :, None]
            flat[rows, channels, pixels] = np.asarray(colour, dtype=np.float32)
        return flat.reshape(k, 3, IMAGE_HEIGHT, IMAGE_WIDTH)


@lru_cache(maxsize=MAX_GRID_SIZE + 1)
def _canvas(grid_size: int) -> _Canvas:
    return _Canvas(grid_size)


@register_scene
class GridWorldScene(Scene):
    """Reach the goal whose colour the goal signal names; camera plus goal-signal observations."""

    name = "GridWorld"
    summary = "reach the signalled goal on a grid (camera PNG 3x64x84 + goal signal, 9 agents)"
    default_area_count = 9
    fixed_delta_time = 0.02
    draw_size = (336, 256)
    frame_steps = 1

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``GridWorld?team=0``: camera + goal signal, discrete (5) with masks, max step 100."""
        return [
            BehaviorSpec(
                name="GridWorld",
                sensors=(
                    SensorSpec("CameraSensor", (3, IMAGE_HEIGHT, IMAGE_WIDTH), Compression.PNG),
                    SensorSpec("VectorSensor", (2,), observation_type=ObservationType.GOAL_SIGNAL),
                ),
                action_spec=ActionSpec(discrete_branches=(5,)),
                decision=None,
                max_step=100,
                uses_action_mask=True,
            )
        ]

    def setup(self, context: SceneContext) -> None:
        """Per-area grid size, agent cell, goal cells and goal colour."""
        super().setup(context)
        self.agents = context.batch("GridWorld")
        n = context.area_count
        self.grid_size = np.full(n, DEFAULT_GRID_SIZE, dtype=np.int64)
        self.agent_xz = np.zeros((n, 2), dtype=np.int64)
        self.goal_xz = np.zeros((n, 2, 2), dtype=np.int64)  # [area, GREEN_PLUS/RED_CROSS, xz]
        self.goal = np.zeros(n, dtype=np.int64)
        #: Episodes ended on the signalled goal / on the other goal (for statistics and tests).
        self.successes = 0
        self.failures = 0

    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """Read ``gridSize``, scatter goals and agent on distinct cells, draw the goal colour."""
        rng = self.ctx.rng
        sizes = self.ctx.parameters.read_many("gridSize", DEFAULT_GRID_SIZE, slots.size)
        for slot, size in zip(slots.tolist(), sizes, strict=True):
            grid = int(np.clip(round(size), MIN_GRID_SIZE, MAX_GRID_SIZE))
            cells = rng.choice(grid * grid, size=3, replace=False)
            self.grid_size[slot] = grid
            self.goal_xz[slot] = np.stack([cells[:2] // grid, cells[:2] % grid], axis=1)
            self.agent_xz[slot] = (cells[2] // grid, cells[2] % grid)
        self.goal[slots] = rng.integers(0, 2, size=slots.size)

    def before_academy_step(self, academy_step: int) -> None:
        """The agent's script requests a decision every step."""
        self.agents.request_decision(slice(None))

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """The rendered grid and the goal one-hot."""
        sizes = self.grid_size[slots]
        grids = np.unique(sizes).tolist()
        if len(grids) == 1:
            images = self._render(grids[0], slots)
        else:
            images = np.empty((slots.size, 3, IMAGE_HEIGHT, IMAGE_WIDTH), dtype=np.float32)
            for grid in grids:
                chosen = np.flatnonzero(sizes == grid)
                images[chosen] = self._render(grid, slots[chosen])
        goal = np.zeros((slots.size, 2), dtype=np.float32)
        goal[np.arange(slots.size), self.goal[slots]] = 1.0
        return [images, goal]

    def _render(self, grid: int, areas: np.ndarray) -> np.ndarray:
        flat_agent = self.agent_xz[areas, 0] * grid + self.agent_xz[areas, 1]
        flat_goals = self.goal_xz[areas, :, 0] * grid + self.goal_xz[areas, :, 1]
        return _canvas(grid).render(flat_agent, flat_goals[:, GREEN_PLUS], flat_goals[:, RED_CROSS])

    def draw(self, area: int, size: tuple[int, int]) -> np.ndarray:
        """The agent's camera picture, scaled to ``size``, framed in the colour of the goal the
        goal signal names."""
        grid = int(self.grid_size[area])
        image = self._render(grid, np.array([area]))[0]
        pixels = np.rint(np.transpose(image, (1, 2, 0)) * 255.0).astype(np.uint8)
        width, height = size
        border = max(2, min(width, height) // 40)
        picture = fit_picture(pixels, width - 2 * border, height - 2 * border)
        framed = np.empty((height, width, 3), dtype=np.uint8)
        colour = _PLUS if self.goal[area] == GREEN_PLUS else _CROSS
        framed[:] = np.rint(np.asarray(colour) * 255.0).astype(np.uint8)
        framed[border : height - border, border : width - border] = picture
        return framed

    def write_action_mask(self, batch: AgentBatch, slots: np.ndarray) -> np.ndarray:
        """Disable the moves that would leave the grid."""
        x, z = self.agent_xz[slots, 0], self.agent_xz[slots, 1]
        top = self.grid_size[slots] - 1
        mask = np.zeros((slots.size, 5), dtype=bool)
        mask[:, 1] = z == top
        mask[:, 2] = z == 0
        mask[:, 3] = x == 0
        mask[:, 4] = x == top
        return mask

    def on_action_received(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        continuous: np.ndarray,
        discrete: np.ndarray,
    ) -> None:
        """Pay -0.01, move unless blocked; on a goal set +1 or -1 and end the episode."""
        batch.add_reward(slots, STEP_PENALTY)
        action = np.clip(discrete[:, 0], 0, len(MOVES) - 1)
        target = self.agent_xz[slots] + MOVES[action]
        top = self.grid_size[slots][:, None] - 1
        allowed = ((target >= 0) & (target <= top)).all(axis=1)
        moved = np.where(allowed[:, None], target, self.agent_xz[slots])
        self.agent_xz[slots] = moved
        on_goal = (moved[:, None, :] == self.goal_xz[slots]).all(axis=2)  # (k, 2)
        reached = on_goal.any(axis=1)
        if not reached.any():
            return
        finished = slots[reached]
        right = on_goal[reached][np.arange(finished.size), self.goal[finished]]
        batch.set_reward(finished, np.where(right, np.float32(1.0), np.float32(-1.0)))
        self.successes += int(right.sum())
        self.failures += int((~right).sum())
        batch.end_episode(finished)

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Walk to the signalled goal, stepping around the other one."""
        here = self.agent_xz[slots]
        target = self.goal_xz[slots, self.goal[slots]]
        avoid = self.goal_xz[slots, 1 - self.goal[slots]]
        delta = target - here
        along_x = np.where(delta[:, 0] > 0, 4, 3)
        along_z = np.where(delta[:, 1] > 0, 1, 2)
        prefer_x = delta[:, 0] != 0
        first = np.where(prefer_x, along_x, along_z)
        second = np.where(prefer_x, np.where(delta[:, 1] != 0, along_z, 0), 0)
        blocked = (here + MOVES[first] == avoid).all(axis=1)
        # Detour sideways when the other goal stands in the way of a straight line.
        sideways = np.where(
            prefer_x, np.where(here[:, 1] > 0, 2, 1), np.where(here[:, 0] > 0, 3, 4)
        )
        action = np.where(blocked, np.where(second > 0, second, sideways), first)
        return np.zeros((slots.size, 0), np.float32), action[:, None].astype(np.int32)
