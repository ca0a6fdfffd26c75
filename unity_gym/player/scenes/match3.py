"""Match3: swap neighbouring pieces to line up three or more of a kind (ML-Agents' ``Match3``).

Four behaviors, as in ML-Agents' ``Match3.unity``: 4 boards ``Match3VectorObs``, 4 boards
``Match3VisualObs``, 2 boards ``Match3SimpleHeuristic`` and 2 boards ``Match3SmartHeuristic`` (2
areas of 2 + 2 + 1 + 1 agents; ``--num-agents`` must be a multiple of 6). One agent plays one board.

The board (``Match3Board.cs`` and the prefabs' ``Match3Board`` values): at most 9 rows and 8
columns, 6 cell types (colours) and 2 special types; each cell holds a type ``0..5`` and a special
type ``0..2`` (drawn as ``U{0..9}``: 0 gives special 2, 1 or 2 give special 1, else 0). At each
episode begin the board takes a random size, ``U{6..9}`` rows by ``U{6..8}`` columns (the prefabs'
``MinRows``/``MaxRows``/``MinColumns``/``MaxColumns``), and is filled at random and settled.
Row 0 is the bottom: pieces fall towards lower rows and new ones come in at the top.

Observations (``Match3SensorComponent`` named ``Match3 Sensor``; the package's ``Match3Sensor``),
one-hot per cell of the 9 x 8 maximum board, cells outside the current board all zero:

* ``Match3VectorObs``, ``Match3SimpleHeuristic``, ``Match3SmartHeuristic`` (vector observations):
  ``Match3 Sensor (cells)`` ``(432,)`` and ``Match3 Sensor (special)`` ``(216,)``, laid out row by
  row, column by column, then the one-hot (``(row * 8 + column) * k + value``).
* ``Match3VisualObs`` (compressed visual observations): ``Match3 Sensor (cells)`` ``(6, 9, 8)``
  sent as two RGB PNGs and ``Match3 Sensor (special)`` ``(3, 9, 8)`` as one PNG (no channel
  mapping), image row ``r`` = board row ``r``. The package's sources at hand declare the shape as
  ``(rows, columns, channels)`` (the API before ML-Agents 2.0); with 2.0's channel-first visual
  observations, which the official ``mlagents-envs`` reads, it is ``(channels, rows, columns)``.

Actions (``Match3ExampleActuatorComponent``, the package's ``Match3Actuator`` and ``Move``): one
discrete branch of the 127 potential moves of the maximum board, the swaps of a cell with its
right neighbour first (``index = row * 7 + column``, 63 moves), then with its upper neighbour
(``63 + row * 8 + column``, 64 moves). The action mask disables every move that leaves the current
board or is not valid: a swap is valid when the two pieces differ and one of them lands in a line
of three or more of its type (``AbstractBoard.SimpleIsMoveValid``). Were no move valid, the last
move would stay enabled. An invalid move changes nothing.

The agent (``Match3Agent.cs``) decides itself, once per Academy step before the step
(``FixedUpdate`` with a trainer: ``FastUpdate``): it settles the board -- every line of 3+ is
cleared at once, adding ``0.01 x`` the points cleared (1 per plain piece, 2 per special 1, 3 per
special 2) as a reward, the pieces above drop and new random ones fill the top, again until no line
is left -- reshuffles the board (a new random settled board) while no move is valid, requests a
decision and counts a move. When ``MaxMoves`` (500, scene option ``max_moves``) moves are counted
the episode is interrupted (so an episode makes 499 moves); there is no ``MaxStep``. (Without a
trainer Unity animates the same steps, one per ``MoveTime``; the player always runs them at once.)

Heuristics: ``Match3SimpleHeuristic`` and ``Match3SmartHeuristic`` agents force their actuator's
heuristic (``ForceHeuristic``): whatever the trainer answers, ``Match3SimpleHeuristic`` plays a
uniformly random valid move and ``Match3SmartHeuristic`` the greedy one -- the valid move whose two
half moves clear the most points, ties broken uniformly at random (``Match3ExampleActuator``'s
``EvalMovePoints`` with ``Match3Actuator.GreedyMove``). Without a trainer every behavior plays its
actuator's heuristic: the greedy move, a random valid one for ``Match3SimpleHeuristic``. ML-Agents'
documentation gives 34.2 (random valid move) and 37.0 (greedy) as mean episode rewards.

Sources: the scripts and the package's ``Integrations/Match3`` code are those of
``Unity-Technologies/ml-agents``; the stored upstream prefabs predate the board-size range, whose
values come from a copy of a later release (``Match3VectorObs.prefab``, ``Match3VisualObs.prefab``
and ``Match3.unity`` of ``yiqide/ai_2048``). Estimated: the heuristic behaviors' board (not in
that copy: taken as the other prefabs' board, with vector observations as in the older stored
``Match3Heuristic.prefab``), which heuristic ``Match3SimpleHeuristic`` runs (a random valid move,
as the documentation describes it), the visual shape's order (above), and that the agent's
``FixedUpdate`` runs before the Academy's step. Each board draws from the player's seeded
generator instead of a ``System.Random`` per board.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from ..academy import AgentBatch, SceneContext
from ..errors import PlayerError
from ..render import (
    BACKGROUND,
    BLUE,
    FLOOR,
    GOLD,
    GREEN,
    ORANGE,
    PURPLE,
    RED,
    WHITE,
    Canvas,
    Colour,
)
from ..specs import ActionSpec, BehaviorSpec, Compression, SensorSpec
from .base import Scene, SceneOption
from .registry import register_scene

__all__ = [
    "COLUMNS",
    "EMPTY",
    "MOVE_COUNT",
    "ROWS",
    "Boards",
    "Match3Scene",
    "move_cells",
    "move_index",
]

ROWS = 9
COLUMNS = 8
MIN_ROWS = 6
MIN_COLUMNS = 6
CELL_TYPES = 6
SPECIAL_TYPES = 2
SPECIAL_SIZE = SPECIAL_TYPES + 1
#: Points of a cleared piece by special type (``BasicCellPoints``, ``SpecialCell1Points``, ...).
POINTS = np.array([1, 2, 3], dtype=np.int64)
REWARD_PER_POINT = np.float32(0.01)
MAX_MOVES = 500
EMPTY = -1
#: The colour of each cell type in :meth:`Match3Scene.draw`, and the layout of its boards.
_PIECE_COLOURS: tuple[Colour, ...] = (RED, GREEN, BLUE, GOLD, PURPLE, ORANGE)
_BOARD_GAP = 1.5
_LABEL_HEIGHT = 1.4
#: Stands for cells outside the current board while moves are evaluated.
_OUTSIDE = -2
RIGHT_MOVES = ROWS * (COLUMNS - 1)
MOVE_COUNT = RIGHT_MOVES + (ROWS - 1) * COLUMNS

SENSOR_CELLS = "Match3 Sensor (cells)"
SENSOR_SPECIAL = "Match3 Sensor (special)"
VECTOR = "Match3VectorObs"
VISUAL = "Match3VisualObs"
SIMPLE = "Match3SimpleHeuristic"
SMART = "Match3SmartHeuristic"
#: Behaviors whose actuator ignores the trainer's action and plays its heuristic.
FORCED_HEURISTIC = frozenset({SIMPLE, SMART})


def move_cells(index: np.ndarray | int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``Move.FromMoveIndex`` on the 9 x 8 board: the moved cell and the cell it swaps with.

    Returns:
        ``(row, column, other_row, other_column)``, each shaped like ``index``.
    """
    index = np.asarray(index, dtype=np.int64)
    right = index < RIGHT_MOVES
    up = index - RIGHT_MOVES
    row = np.where(right, index // (COLUMNS - 1), up // COLUMNS)
    column = np.where(right, index % (COLUMNS - 1), up % COLUMNS)
    return row, column, row + (~right).astype(np.int64), column + right.astype(np.int64)


def move_index(row: int, column: int, other_row: int, other_column: int) -> int:
    """The move swapping two neighbouring cells of the 9 x 8 board (``Move`` normalised to a
    swap to the right or upwards).

    Raises:
        ValueError: if the cells are not neighbours on the board.
    """
    (r0, c0), (r1, c1) = sorted([(row, column), (other_row, other_column)])
    inside = all(0 <= r < ROWS and 0 <= c < COLUMNS for r, c in ((r0, c0), (r1, c1)))
    if inside and r0 == r1 and c1 == c0 + 1:
        return r0 * (COLUMNS - 1) + c0
    if inside and c0 == c1 and r1 == r0 + 1:
        return RIGHT_MOVES + r0 * COLUMNS + c0
    raise ValueError(f"cells ({row}, {column}) and ({other_row}, {other_column}) are no move")


_MOVE_ROW, _MOVE_COLUMN, _OTHER_ROW, _OTHER_COLUMN = move_cells(np.arange(MOVE_COUNT))
_IS_RIGHT = np.arange(MOVE_COUNT) < RIGHT_MOVES
#: Directions (row step, column step): left, right, up, down.
_DIRECTIONS = ((0, -1), (0, 1), (1, 0), (-1, 0))
#: Where each move's pieces come from (indices into ``_DIRECTIONS``): the moved piece from the
#: left (right moves) or below (up moves), the other piece from the right or above.
_FROM_MOVED = np.where(_IS_RIGHT, 0, 3)
_FROM_OTHER = np.where(_IS_RIGHT, 1, 2)


class Boards:
    """``n`` match-3 boards of at most 9 x 8 cells, vectorized (``Match3Board.cs``).

    Attributes:
        types: ``(n, 9, 8)`` cell types, ``EMPTY`` (-1) only inside a settling step; cells outside
            the current board keep values nobody sees.
        special: ``(n, 9, 8)`` special types.
        rows: ``(n,)`` rows of the current board.
        columns: ``(n,)`` columns of the current board.
    """

    def __init__(self, n: int) -> None:
        self.types = np.zeros((n, ROWS, COLUMNS), dtype=np.int64)
        self.special = np.zeros((n, ROWS, COLUMNS), dtype=np.int64)
        self.rows = np.full(n, ROWS, dtype=np.int64)
        self.columns = np.full(n, COLUMNS, dtype=np.int64)
        self._valid = np.zeros((n, MOVE_COUNT), dtype=bool)
        self._points = np.zeros((n, MOVE_COUNT), dtype=np.int64)
        self._stale = np.ones(n, dtype=bool)

    def changed(self, idx: np.ndarray | None = None) -> None:
        """Forget the moves evaluated on boards ``idx`` (all: ``None``): call it after editing
        the arrays directly (the methods below call it themselves)."""
        if idx is None:
            self._stale[:] = True
        else:
            self._stale[idx] = True

    def inside(self, idx: np.ndarray) -> np.ndarray:
        """``(k, 9, 8)`` bool: the cells of boards ``idx`` inside their current size."""
        r = np.arange(ROWS)[None, :, None] < self.rows[idx, None, None]
        c = np.arange(COLUMNS)[None, None, :] < self.columns[idx, None, None]
        return r & c

    # ---- filling and settling ----------------------------------------------------------------

    def draw_size(self, idx: np.ndarray, rng: np.random.Generator) -> None:
        """``UpdateCurrentBoardSize``: ``U{6..9}`` rows, ``U{6..8}`` columns."""
        self.changed(idx)
        self.rows[idx] = rng.integers(MIN_ROWS, ROWS + 1, idx.size)
        self.columns[idx] = rng.integers(MIN_COLUMNS, COLUMNS + 1, idx.size)

    def init_random(self, idx: np.ndarray, rng: np.random.Generator) -> None:
        """``InitRandom``: every cell of the maximum board drawn anew."""
        self.changed(idx)
        shape = (idx.size, ROWS, COLUMNS)
        self.types[idx] = rng.integers(0, CELL_TYPES, shape)
        self.special[idx] = _special_types(rng.integers(0, 10, shape))

    def matched(self, idx: np.ndarray) -> np.ndarray:
        """``MarkMatchedCells``: ``(k, 9, 8)`` cells in a line of 3+ of one type (current board)."""
        t = self.types[idx]
        inside = self.inside(idx)
        marked = np.zeros(t.shape, dtype=bool)
        across = (t[:, :, :-2] == t[:, :, 1:-1]) & (t[:, :, 1:-1] == t[:, :, 2:]) & inside[:, :, 2:]
        for shift in range(3):
            marked[:, :, shift : COLUMNS - 2 + shift] |= across
        along = (t[:, :-2] == t[:, 1:-1]) & (t[:, 1:-1] == t[:, 2:]) & inside[:, 2:]
        for shift in range(3):
            marked[:, shift : ROWS - 2 + shift] |= along
        return marked

    def clear(self, idx: np.ndarray, marked: np.ndarray) -> np.ndarray:
        """``ClearMatchedCells``: empty the ``marked`` cells; ``(k,)`` points cleared."""
        self.changed(idx)
        points = np.where(marked, POINTS[self.special[idx]], 0).sum(axis=(1, 2))
        self.types[idx] = np.where(marked, EMPTY, self.types[idx])
        self.special[idx] = np.where(marked, 0, self.special[idx])
        return points

    def drop(self, idx: np.ndarray) -> None:
        """``DropCells``: in each column of the current board the pieces fall to the lowest rows,
        the empty cells go to the top."""
        self.changed(idx)
        rows_inside = np.arange(ROWS)[None, :, None] < self.rows[idx, None, None]
        key = np.where(rows_inside, (self.types[idx] == EMPTY).astype(np.int64), 2)
        order = np.argsort(key, axis=1, kind="stable")
        self.types[idx] = np.take_along_axis(self.types[idx], order, axis=1)
        self.special[idx] = np.take_along_axis(self.special[idx], order, axis=1)

    def fill(self, idx: np.ndarray, rng: np.random.Generator) -> None:
        """``FillFromAbove``: new random pieces in the empty cells of the current board."""
        self.changed(idx)
        types, special = self.types[idx], self.special[idx]
        empty = (types == EMPTY) & self.inside(idx)
        count = int(empty.sum())
        types[empty] = rng.integers(0, CELL_TYPES, count)
        special[empty] = _special_types(rng.integers(0, 10, count))
        self.types[idx], self.special[idx] = types, special

    def settle_once(
        self, idx: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """One round of clearing every line, dropping and filling, on the boards of ``idx`` that
        have a line.

        Returns:
            ``(boards, points)``: the boards that had a line and the points each cleared.
        """
        marked = self.matched(idx)
        hit = marked.any(axis=(1, 2))
        boards = idx[hit]
        if not boards.size:
            return boards, np.zeros(0, dtype=np.int64)
        points = self.clear(boards, marked[hit])
        self.drop(boards)
        self.fill(boards, rng)
        return boards, points

    def init_settled(self, idx: np.ndarray, rng: np.random.Generator) -> None:
        """``InitSettled``: a random board, settled (no points counted)."""
        self.init_random(idx, rng)
        pending = idx
        while pending.size:
            pending, _ = self.settle_once(pending, rng)

    # ---- moves -------------------------------------------------------------------------------

    def evaluate_moves(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every potential move of boards ``idx``: is it valid, and how many points would it clear.

        Valid: inside the current board (``Move.InRangeForBoard``) and
        ``AbstractBoard.SimpleIsMoveValid``. Points: ``Match3ExampleActuator.EvalMovePoints``, the
        points of each half move (the moved piece and the lines of 3+ it completes across and
        along), 0 for a half move that completes no line. Kept until the board changes.

        Returns:
            ``(valid, points)``, both ``(k, 127)``.
        """
        stale = idx[self._stale[idx]]
        if stale.size:
            stale = np.unique(stale)
            self._valid[stale], self._points[stale] = self._evaluate(stale)
            self._stale[stale] = False
        return self._valid[idx], self._points[idx]

    def _evaluate(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        board = np.full((idx.size, ROWS + 2, COLUMNS + 2), _OUTSIDE, dtype=np.int64)
        board[:, 1:-1, 1:-1] = np.where(self.inside(idx), self.types[idx], _OUTSIDE)
        points_at = np.zeros(board.shape, dtype=np.int64)
        points_at[:, 1:-1, 1:-1] = POINTS[self.special[idx]]
        runs = [_runs(board, points_at, dr, dc) for dr, dc in _DIRECTIONS]
        rows, columns = _MOVE_ROW + 1, _MOVE_COLUMN + 1
        other_rows, other_columns = _OTHER_ROW + 1, _OTHER_COLUMN + 1
        value = board[:, rows, columns]
        other_value = board[:, other_rows, other_columns]
        # The moved piece lands on the other cell, the other piece on the moved one's; neither
        # looks back where it came from (the other piece is there now).
        moved = _half_move(
            board, runs, other_rows, other_columns, value, points_at[:, rows, columns], _FROM_MOVED
        )
        back = _half_move(
            board, runs, rows, columns, other_value, points_at[:, other_rows, other_columns],
            _FROM_OTHER,
        )  # fmt: skip
        in_range = (_OTHER_ROW[None, :] < self.rows[idx, None]) & (
            _OTHER_COLUMN[None, :] < self.columns[idx, None]
        )
        valid = in_range & (value != other_value) & ((moved > 0) | (back > 0))
        return valid, np.where(valid, moved + back, 0)

    def make_moves(self, idx: np.ndarray, moves: np.ndarray, valid: np.ndarray) -> None:
        """``MakeMove``: swap the two cells of each valid move (``valid`` ``(k,)``)."""
        boards = idx[valid]
        if not boards.size:
            return
        self.changed(boards)
        r, c, r2, c2 = (
            a[moves[valid]] for a in (_MOVE_ROW, _MOVE_COLUMN, _OTHER_ROW, _OTHER_COLUMN)
        )
        for array in (self.types, self.special):
            first = array[boards, r, c].copy()
            array[boards, r, c] = array[boards, r2, c2]
            array[boards, r2, c2] = first


def _runs(
    board: np.ndarray, points_at: np.ndarray, dr: int, dc: int
) -> tuple[np.ndarray, np.ndarray]:
    """For every cell of the padded ``board``: how many cells of its type follow one another from
    it in direction ``(dr, dc)`` (itself included), and their points."""
    length = np.ones(board.shape, dtype=np.int64)
    score = points_at.copy()
    axis = 1 if dr else 2
    step = dr or dc
    size = board.shape[axis]
    # Cells are resolved from the far end of the direction backwards.
    order = range(size - 2, -1, -1) if step > 0 else range(1, size)
    for i in order:
        here = (slice(None), i) if axis == 1 else (slice(None), slice(None), i)
        there = (slice(None), i + step) if axis == 1 else (slice(None), slice(None), i + step)
        same = board[here] == board[there]
        length[here] = np.where(same, length[there] + 1, 1)
        score[here] = np.where(same, score[there] + points_at[here], points_at[here])
    return length, score


def _half_move(
    board: np.ndarray,
    runs: list[tuple[np.ndarray, np.ndarray]],
    rows: np.ndarray,
    columns: np.ndarray,
    value: np.ndarray,
    own_points: np.ndarray,
    came_from: np.ndarray,
) -> np.ndarray:
    """Points ``(k, 127)`` of a piece of type ``value`` landing on the padded cells ``(rows,
    columns)``, not looking in direction ``came_from`` (``EvalHalfMove``); 0 without a line."""
    counts = []
    scores = []
    for d, (dr, dc) in enumerate(_DIRECTIONS):
        r, c = rows + dr, columns + dc
        follows = (board[:, r, c] == value) & (came_from != d)
        length, score = runs[d]
        counts.append(np.where(follows, length[:, r, c], 0))
        scores.append(np.where(follows, score[:, r, c], 0))
    across = counts[0] + counts[1] >= 2
    along = counts[2] + counts[3] >= 2
    total = (
        own_points
        + np.where(across, scores[0] + scores[1], 0)
        + np.where(along, scores[2] + scores[3], 0)
    )
    return np.where(across | along, total, 0)


def _special_types(draws: np.ndarray) -> np.ndarray:
    """``GetRandomSpecialType`` from ``U{0..9}`` draws: 0 -> 2, 1..2 -> 1, else 0."""
    return np.select([draws == 0, draws <= 2], [2, 1], 0)


def _max_moves_option() -> SceneOption:
    return SceneOption(
        "max_moves", int, MAX_MOVES, "Match3Agent.MaxMoves: moves counted before an interruption"
    )


@register_scene
class Match3Scene(Scene):
    """Match-3 boards: one-hot board sensors (vector or PNG), one discrete branch of moves with
    masks of the invalid ones, two behaviors that play the heuristics."""

    name = "Match3"
    summary = (
        "match-3 boards (one-hot cells 9x8x6 + specials 9x8x3, vector or PNG; 127 moves, masks; "
        "4 behaviors, 12 agents)"
    )
    default_area_count = 2
    draw_size = (336, 264)
    option_specs: ClassVar[tuple[SceneOption, ...]] = (_max_moves_option(),)

    #: Agents per area of each behavior, in area order.
    PER_AREA: ClassVar[tuple[tuple[str, int], ...]] = (
        (VECTOR, 2),
        (VISUAL, 2),
        (SIMPLE, 1),
        (SMART, 1),
    )

    def __init__(
        self, options: Mapping[str, object] | None = None, *, num_agents: int | None = None
    ) -> None:
        super().__init__(options, num_agents=num_agents)
        if int(self.options["max_moves"]) < 1:
            raise PlayerError(
                f"scene {self.name}: option max_moves={self.options['max_moves']} must be at "
                "least 1"
            )

    @property
    def max_moves(self) -> int:
        """Moves counted before the episode is interrupted."""
        return int(self.options["max_moves"])

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """The four behaviors: one-hot sensors (vector for all but ``Match3VisualObs``, whose are
        PNG), one discrete branch of 127 moves with masks, decisions requested by the agent."""
        cells = ROWS * COLUMNS
        vector = (
            SensorSpec(SENSOR_CELLS, (cells * CELL_TYPES,)),
            SensorSpec(SENSOR_SPECIAL, (cells * SPECIAL_SIZE,)),
        )
        visual = (
            SensorSpec(SENSOR_CELLS, (CELL_TYPES, ROWS, COLUMNS), Compression.PNG),
            SensorSpec(SENSOR_SPECIAL, (SPECIAL_SIZE, ROWS, COLUMNS), Compression.PNG),
        )
        return [
            BehaviorSpec(
                name=name,
                sensors=visual if name == VISUAL else vector,
                action_spec=ActionSpec(discrete_branches=(MOVE_COUNT,)),
                agents_per_area=count,
                decision=None,
                uses_action_mask=True,
            )
            for name, count in self.PER_AREA
        ]

    def setup(self, context: SceneContext) -> None:
        """One set of boards for all agents (behavior after behavior) and their move counters."""
        super().setup(context)
        self.batches = {name: context.batch(name) for name, _ in self.PER_AREA}
        sizes = [batch.size for batch in self.batches.values()]
        starts = np.cumsum([0, *sizes[:-1]])
        #: Index of each behavior's first board in :attr:`boards`.
        self.offsets = {name: int(start) for name, start in zip(self.batches, starts, strict=True)}
        self.boards = Boards(sum(sizes))
        #: Which behavior (its position in :attr:`batches`) each board belongs to.
        self.owner = np.repeat(np.arange(len(sizes)), sizes)
        #: Moves counted in each board's episode (``Match3Agent.m_MovesMade``).
        self.moves_made = np.zeros(self.boards.rows.size, dtype=np.int64)
        #: Points cleared on each board since start-up (heuristic comparisons, tests).
        self.points = np.zeros(self.boards.rows.size, dtype=np.int64)

    def board_index(self, behavior: str, slots: np.ndarray | Sequence[int]) -> np.ndarray:
        """Indices into :attr:`boards` of the agents ``slots`` of ``behavior`` (plain name)."""
        return self.offsets[behavior] + np.asarray(slots, dtype=np.intp)

    # ---- episode -----------------------------------------------------------------------------

    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """A new board size, a settled random board, no moves made."""
        boards = self.board_index(batch.spec.name, slots)
        self.boards.draw_size(boards, self.ctx.rng)
        self.boards.init_settled(boards, self.ctx.rng)
        self.moves_made[boards] = 0

    def before_academy_step(self, academy_step: int) -> None:
        """``Match3Agent.FixedUpdate``: settle (rewarding the points), reshuffle boards without a
        valid move, request a decision, count the move; interrupt at ``max_moves``."""
        rng = self.ctx.rng
        active = {name: np.flatnonzero(batch.active) for name, batch in self.batches.items()}
        every = np.concatenate([self.board_index(name, s) for name, s in active.items()])
        pending = every
        while pending.size:
            pending, points = self.boards.settle_once(pending, rng)
            self.points[pending] += points
            rewards = REWARD_PER_POINT * points.astype(np.float32)
            for number, (name, batch) in enumerate(self.batches.items()):
                mine = self.owner[pending] == number
                if mine.any():
                    batch.add_reward(pending[mine] - self.offsets[name], rewards[mine])
        stuck = every
        while stuck.size:
            valid, _ = self.boards.evaluate_moves(stuck)
            stuck = stuck[~valid.any(axis=1)]
            if stuck.size:
                self.boards.init_settled(stuck, rng)
        self.moves_made[every] += 1
        for name, batch in self.batches.items():
            slots = active[name]
            batch.request_decision(slots)
            done = slots[self.moves_made[self.board_index(name, slots)] >= self.max_moves]
            if done.size:
                batch.interrupt_episode(done)

    # ---- observations and masks --------------------------------------------------------------

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """One-hot cell types and special types of the current board (zeros outside it)."""
        boards = self.board_index(batch.spec.name, slots)
        inside = self.boards.inside(boards)
        cells = _one_hot(self.boards.types[boards], CELL_TYPES, inside)
        special = _one_hot(self.boards.special[boards], SPECIAL_SIZE, inside)
        if batch.spec.name == VISUAL:
            return [cells.transpose(0, 3, 1, 2), special.transpose(0, 3, 1, 2)]
        return [cells.reshape(slots.size, -1), special.reshape(slots.size, -1)]

    def write_action_mask(self, batch: AgentBatch, slots: np.ndarray) -> np.ndarray:
        """Invalid moves disabled; the last move stays enabled on a board without valid moves."""
        valid, _ = self.boards.evaluate_moves(self.board_index(batch.spec.name, slots))
        mask = ~valid
        mask[~valid.any(axis=1), MOVE_COUNT - 1] = False
        return mask

    # ---- actions -----------------------------------------------------------------------------

    def draw(self, area: int, size: tuple[int, int]) -> np.ndarray:
        """The area's six boards, two rows of three in behavior order (vector, visual, simple,
        smart): each piece a square in its type's colour, special pieces with a white dot (larger
        for special 2), cells outside the board's current size dark; above each board its
        behavior and the points it cleared since start-up."""
        boards = [
            (name, int(board))
            for name, count in self.PER_AREA
            for board in self.board_index(name, np.arange(area * count, (area + 1) * count))
        ]
        per_row = 3
        lines = -(-len(boards) // per_row)
        width = per_row * COLUMNS + (per_row - 1) * _BOARD_GAP
        height = lines * (ROWS + _LABEL_HEIGHT) + (lines - 1) * _BOARD_GAP
        canvas = Canvas(*size, (0.0, 0.0, width, height))
        label_size = max(8, round(canvas.pixels(0.8)))
        for k, (name, board) in enumerate(boards):
            x0 = (k % per_row) * (COLUMNS + _BOARD_GAP)
            y0 = height - (k // per_row + 1) * (ROWS + _LABEL_HEIGHT) - (k // per_row) * _BOARD_GAP
            canvas.rectangle((x0 + COLUMNS / 2, y0 + ROWS / 2), (COLUMNS / 2, ROWS / 2), BACKGROUND)
            rows, columns = int(self.boards.rows[board]), int(self.boards.columns[board])
            canvas.rectangle((x0 + columns / 2, y0 + rows / 2), (columns / 2, rows / 2), FLOOR)
            for row in range(rows):
                for column in range(columns):
                    kind = int(self.boards.types[board, row, column])
                    if kind == EMPTY:
                        continue
                    centre = (x0 + column + 0.5, y0 + row + 0.5)
                    canvas.rectangle(centre, (0.42, 0.42), _PIECE_COLOURS[kind])
                    special = int(self.boards.special[board, row, column])
                    if special:
                        canvas.circle(centre, 0.12 + 0.08 * special, WHITE)
            label = f"{name.removeprefix('Match3').removesuffix('Obs')} {self.points[board]}"
            canvas.text((x0 + COLUMNS / 2, y0 + ROWS + _LABEL_HEIGHT / 2), label, size=label_size)
        return canvas.picture()

    def on_action_received(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        continuous: np.ndarray,
        discrete: np.ndarray,
    ) -> None:
        """Make the move (the heuristic's for the forced-heuristic behaviors); invalid moves
        change nothing."""
        name = batch.spec.name
        boards = self.board_index(name, slots)
        valid, points = self.boards.evaluate_moves(boards)
        if name in FORCED_HEURISTIC:
            moves = self._heuristic_moves(name, valid, points)
        else:
            moves = np.clip(discrete[:, 0].astype(np.int64), 0, MOVE_COUNT - 1)
        allowed = valid[np.arange(slots.size), moves]
        self.boards.make_moves(boards, moves, allowed)

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """The actuator's heuristic: greedy, a random valid move for ``Match3SimpleHeuristic``."""
        name = batch.spec.name
        valid, points = self.boards.evaluate_moves(self.board_index(name, slots))
        moves = self._heuristic_moves(name, valid, points)
        return np.zeros((slots.size, 0), np.float32), moves[:, None].astype(np.int32)

    def _heuristic_moves(self, name: str, valid: np.ndarray, points: np.ndarray) -> np.ndarray:
        """``GreedyMove``: uniformly among the valid moves of the most points (all valid moves
        for ``Match3SimpleHeuristic``); move 0 on a board without valid moves."""
        score = np.where(valid, points if name != SIMPLE else 1, -1)
        best = (score == score.max(axis=1, keepdims=True)) & valid
        weights = self.ctx.rng.random(score.shape)
        choice = np.argmax(np.where(best, weights, -1.0), axis=1)
        return np.where(best.any(axis=1), choice, 0)


def _one_hot(values: np.ndarray, size: int, inside: np.ndarray) -> np.ndarray:
    """``(k, 9, 8, size)`` float32 one-hot of ``values``, all zeros outside the board."""
    hot = values[..., None] == np.arange(size)
    return (hot & inside[..., None]).astype(np.float32)
