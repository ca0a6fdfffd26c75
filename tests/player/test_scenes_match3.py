"""Match3: the four behaviors of ML-Agents' scene (one-hot board sensors as vectors or PNGs, one
branch of 127 moves with masks), the move numbering, valid moves and greedy points against a plain
transcription of the C# rules, settling (clear, drop, fill, points), the agent's own decisions and
its ``MaxMoves`` interruption, the forced-heuristic behaviors, determinism, the greedy heuristic
against random valid moves, and the official ``mlagents-envs`` playing it over gRPC."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from scene_harness import play, player_alive

from unity_gym.player.academy import AgentBatch
from unity_gym.player.errors import PlayerError
from unity_gym.player.render import BLUE, GOLD, GREEN, ORANGE, PURPLE, RED, Canvas
from unity_gym.player.scenes import Scene
from unity_gym.player.scenes.match3 import (
    COLUMNS,
    EMPTY,
    MOVE_COUNT,
    ROWS,
    Boards,
    Match3Scene,
    move_cells,
    move_index,
)
from unity_gym.player.specs import Compression

pytestmark = pytest.mark.timeout(180)

BEHAVIORS = ("Match3VectorObs", "Match3VisualObs", "Match3SimpleHeuristic", "Match3SmartHeuristic")
POINTS = (1, 2, 3)


# ---- a plain transcription of the C# rules (AbstractBoard, Match3ExampleActuator) -------------


def _half_move(
    types: np.ndarray,
    special: np.ndarray,
    size: tuple[int, int],
    cell: tuple[int, int],
    value: int,
    own_special: int,
    incoming: str,
) -> tuple[bool, int]:
    """``CheckHalfMove`` / ``EvalHalfMove``: does a piece of ``value`` arriving at ``cell`` from
    direction ``incoming`` make a line, and the points it would clear."""
    rows, columns = size
    row, column = cell
    walks = {
        "left": [(row, c) for c in range(column - 1, -1, -1)],
        "right": [(row, c) for c in range(column + 1, columns)],
        "up": [(r, column) for r in range(row + 1, rows)],
        "down": [(r, column) for r in range(row - 1, -1, -1)],
    }
    skipped = {"Right": "left", "Left": "right", "Up": "down", "Down": "up"}[incoming]
    count = dict.fromkeys(walks, 0)
    score = dict.fromkeys(walks, 0)
    for name, cells in walks.items():
        if name == skipped:
            continue
        for r, c in cells:
            if types[r, c] != value:
                break
            count[name] += 1
            score[name] += POINTS[special[r, c]]
    across = count["left"] + count["right"] >= 2
    along = count["up"] + count["down"] >= 2
    if not (across or along):
        return False, 0
    total = POINTS[own_special]
    if along:
        total += score["up"] + score["down"]
    if across:
        total += score["left"] + score["right"]
    return True, total


def _reference_moves(
    types: np.ndarray, special: np.ndarray, rows: int, columns: int
) -> tuple[np.ndarray, np.ndarray]:
    """Valid moves (``InRangeForBoard`` and ``SimpleIsMoveValid``) and ``EvalMovePoints``."""
    valid = np.zeros(MOVE_COUNT, dtype=bool)
    points = np.zeros(MOVE_COUNT, dtype=np.int64)
    for index in range(MOVE_COUNT):
        r, c, r2, c2 = (int(x) for x in move_cells(index))
        if r2 >= rows or c2 >= columns or types[r, c] == types[r2, c2]:
            continue
        direction, back = ("Right", "Left") if r2 == r else ("Up", "Down")
        size = (rows, columns)
        moved, a = _half_move(types, special, size, (r2, c2), types[r, c], special[r, c], direction)
        other, b = _half_move(types, special, size, (r, c), types[r2, c2], special[r2, c2], back)
        valid[index] = moved or other
        points[index] = a + b if valid[index] else 0
    return valid, points


def _lines(types: np.ndarray, rows: int, columns: int) -> np.ndarray:
    """``MarkMatchedCells`` as written in C#: runs of 3+ from every cell, across and along."""
    marked = np.zeros(types.shape, dtype=bool)
    for i in range(rows):
        for j in range(columns):
            run = 0
            while i + run < rows and types[i + run, j] == types[i, j]:
                run += 1
            if run >= 3:
                marked[i : i + run, j] = True
            run = 0
            while j + run < columns and types[i, j + run] == types[i, j]:
                run += 1
            if run >= 3:
                marked[i, j : j + run] = True
    return marked


def _without_lines(rows: int = 6, columns: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """A 9 x 8 board whose ``rows`` x ``columns`` corner has no line (types ``(r + 2c) % 6``)."""
    r, c = np.mgrid[0:ROWS, 0:COLUMNS]
    return (r + 2 * c) % 6, np.zeros((ROWS, COLUMNS), dtype=np.int64)


def _set_board(
    boards: Boards, index: int, types: np.ndarray, special: np.ndarray, size: Any
) -> None:
    boards.types[index], boards.special[index] = types, special
    boards.rows[index], boards.columns[index] = size
    boards.changed()


def _observed(played: Any) -> dict[str, tuple[list[np.ndarray], np.ndarray, np.ndarray]]:
    """Each behavior's observations at its decision in the next step, with the boards as they
    were then (``types``, ``special`` of every board)."""
    seen: dict[str, tuple[list[np.ndarray], np.ndarray, np.ndarray]] = {}
    scene = played.scene
    original = scene.heuristic

    def record(batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]) -> Any:
        boards = scene.boards
        seen[batch.spec.name] = (
            [o.copy() for o in observations],
            boards.types.copy(),
            boards.special.copy(),
        )
        return original(batch, slots, observations)

    scene.heuristic = record
    played.step()
    scene.heuristic = original
    return seen


def _fixed_action(move: int) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    def act(scene: Scene, batch: AgentBatch, slots: np.ndarray, obs: Any) -> Any:
        return np.zeros((slots.size, 0), np.float32), np.full((slots.size, 1), move, np.int32)

    return act


def _random_valid(seed: int) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """A uniformly random valid move (what ``Match3SimpleHeuristic`` plays)."""
    rng = np.random.default_rng(seed)

    def act(scene: Any, batch: AgentBatch, slots: np.ndarray, obs: Any) -> Any:
        valid, _ = scene.boards.evaluate_moves(scene.board_index(batch.spec.name, slots))
        moves = np.where(valid, rng.random(valid.shape), -1.0).argmax(axis=1)
        return np.zeros((slots.size, 0), np.float32), moves[:, None].astype(np.int32)

    return act


# ---- the scene -------------------------------------------------------------------------------


def test_behaviors_match_the_unity_scene() -> None:
    scene = Match3Scene()
    specs = {spec.name: spec for spec in scene.behaviors()}
    assert tuple(specs) == BEHAVIORS
    for name, spec in specs.items():
        wire = [spec.sensors[i] for i in spec.wire_sensor_order()]
        if name == "Match3VisualObs":
            assert [(s.wire_name, s.wire_shape, s.compression) for s in wire] == [
                ("Match3 Sensor (cells)", (6, 9, 8), Compression.PNG),
                ("Match3 Sensor (special)", (3, 9, 8), Compression.PNG),
            ]
            assert all(s.channel_mapping is None for s in wire), "Unity sends no mapping"
        else:
            assert [(s.wire_name, s.wire_shape, s.compression) for s in wire] == [
                ("Match3 Sensor (cells)", (432,), Compression.NONE),
                ("Match3 Sensor (special)", (216,), Compression.NONE),
            ]
        assert spec.action_spec.continuous_size == 0
        assert spec.action_spec.discrete_branches == (127,)
        assert spec.uses_action_mask and spec.decision is None and spec.max_step == 0
    per_area = [specs[name].agents_per_area * scene.base_area_count for name in BEHAVIORS]
    assert per_area == [4, 4, 2, 2], "the scene's 4 + 4 + 2 + 2 boards"
    assert Match3Scene(num_agents=24).base_area_count == 4
    with pytest.raises(PlayerError, match="multiple of 6"):
        Match3Scene(num_agents=8)
    with pytest.raises(PlayerError, match="max_moves=0"):
        Match3Scene({"max_moves": "0"})


def test_moves_are_numbered_like_ml_agents_move() -> None:
    assert MOVE_COUNT == 9 * 7 + 8 * 8
    assert [int(x) for x in move_cells(0)] == [0, 0, 0, 1]  # right moves first
    assert [int(x) for x in move_cells(8)] == [1, 1, 1, 2]  # row * 7 + column
    assert [int(x) for x in move_cells(62)] == [8, 6, 8, 7]
    assert [int(x) for x in move_cells(63)] == [0, 0, 1, 0]  # then up moves
    assert [int(x) for x in move_cells(63 + 13)] == [1, 5, 2, 5]  # 63 + row * 8 + column
    assert [int(x) for x in move_cells(126)] == [7, 7, 8, 7]
    for index in range(MOVE_COUNT):
        r, c, r2, c2 = (int(x) for x in move_cells(index))
        assert move_index(r, c, r2, c2) == index == move_index(r2, c2, r, c)
    for cells in ((0, 0, 1, 1), (0, 7, 0, 8), (8, 0, 9, 0), (2, 2, 2, 4)):
        with pytest.raises(ValueError, match="no move"):
            move_index(*cells)


def test_valid_moves_and_greedy_points_follow_the_csharp_rules() -> None:
    rng = np.random.default_rng(7)
    boards = Boards(60)
    every = np.arange(60)
    boards.draw_size(every, rng)
    boards.init_random(every, rng)  # unsettled boards: lines anywhere, every rule exercised
    boards.init_settled(every[:30], rng)
    valid, points = boards.evaluate_moves(every)
    assert valid.any(axis=1).sum() >= 50 and points.max() >= 9
    for i in range(60):
        expected_valid, expected_points = _reference_moves(
            boards.types[i], boards.special[i], int(boards.rows[i]), int(boards.columns[i])
        )
        np.testing.assert_array_equal(valid[i], expected_valid)
        np.testing.assert_array_equal(points[i], expected_points)
    # A hand-made case: swapping (1, 3) down into row 0 completes 7 7 [7] of types with specials
    # 0, 1 and the moved piece's 2: 1 + 2 + 3 points.
    types, special = _without_lines()
    types[0, 1:3] = 7
    special[0, 1:3] = (0, 1)
    types[1, 3], special[1, 3] = 7, 2
    _set_board(boards, 0, types, special, (6, 6))
    valid, points = boards.evaluate_moves(np.array([0]))
    move = move_index(0, 3, 1, 3)
    assert valid[0, move] and points[0, move] == 6
    assert not valid[0, move_index(6, 0, 7, 0)], "outside the current 6 x 6 board"


def test_settling_clears_lines_drops_the_pieces_above_and_fills_the_top() -> None:
    boards = Boards(1)
    types, special = _without_lines()
    types[1, 0:3] = 5  # a line across row 1 of specials 0, 1, 2
    special[1, 0:3] = (0, 1, 2)
    _set_board(boards, 0, types.copy(), special, (6, 6))
    np.testing.assert_array_equal(boards.matched(np.array([0]))[0], _lines(types, 6, 6))
    settled, points = boards.settle_once(np.array([0]), np.random.default_rng(1))
    assert settled.tolist() == [0] and points.tolist() == [1 + 2 + 3]
    after = boards.types[0]
    np.testing.assert_array_equal(after[0], types[0])  # below the line: unchanged
    np.testing.assert_array_equal(after[1:5, 0:3], types[2:6, 0:3])  # fell by one row
    np.testing.assert_array_equal(after[:6, 3:6], types[:6, 3:6])  # other columns: unchanged
    assert ((after[5, 0:3] >= 0) & (after[5, 0:3] < 6)).all(), "new pieces at the top"
    np.testing.assert_array_equal(after[6:], types[6:])  # outside the board: untouched
    assert EMPTY not in after
    # Settling a whole board leaves no line, and special pieces come 2 in 10 and 1 in 10.
    rng = np.random.default_rng(3)
    many = Boards(400)
    every = np.arange(400)
    many.draw_size(every, rng)
    many.init_settled(every, rng)
    assert not many.matched(every).any()
    inside = many.inside(every)
    share = [float((many.special[inside] == k).mean()) for k in (1, 2)]
    assert share == pytest.approx([0.2, 0.1], abs=0.01)
    assert set(many.rows.tolist()) == {6, 7, 8, 9} and set(many.columns.tolist()) == {6, 7, 8}


def test_observations_are_one_hot_on_the_board_and_zero_outside() -> None:
    played = play(Match3Scene, seed=5)
    played.step()
    seen = _observed(played)
    scene = played.scene
    for name in BEHAVIORS:
        (cells, special), types, specials = seen[name]
        index = scene.board_index(name, [0])[0]
        rows, columns = int(scene.boards.rows[index]), int(scene.boards.columns[index])
        if name == "Match3VisualObs":
            assert cells.shape == (4, 6, 9, 8) and special.shape == (4, 3, 9, 8)
            cells, special = cells[0].transpose(1, 2, 0), special[0].transpose(1, 2, 0)
        else:
            assert cells.shape[1:] == (432,) and special.shape[1:] == (216,)
            cells, special = cells[0].reshape(9, 8, 6), special[0].reshape(9, 8, 3)
        for hot, values in ((cells, types[index]), (special, specials[index])):
            assert not hot[rows:].any() and not hot[:, columns:].any()
            assert (hot[:rows, :columns].sum(axis=2) == 1).all()
            np.testing.assert_array_equal(
                hot[:rows, :columns].argmax(axis=2), values[:rows, :columns]
            )
    sizes = {(int(r), int(c)) for r, c in zip(scene.boards.rows, scene.boards.columns, strict=True)}
    assert len(sizes) >= 4, "board sizes are drawn per episode"


def test_the_mask_disables_invalid_moves_and_an_invalid_move_changes_nothing() -> None:
    played = play(Match3Scene, seed=2, policy=_fixed_action(MOVE_COUNT - 1), num_agents=6)
    scene = played.scene
    masks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    original = scene.write_action_mask

    def record(batch: AgentBatch, slots: np.ndarray) -> np.ndarray:
        mask = original(batch, slots)
        boards = scene.board_index(batch.spec.name, slots)
        sizes = np.stack([scene.boards.rows[boards], scene.boards.columns[boards]], axis=1)
        masks.append(
            (mask, scene.boards.types[boards].copy(), scene.boards.special[boards].copy(), sizes)
        )
        return mask

    scene.write_action_mask = record
    played.step(5)
    assert len(masks) == 5 * 4
    for mask, types, special, sizes in masks:
        for row, t, s, (rows, columns) in zip(mask, types, special, sizes, strict=True):
            expected, _ = _reference_moves(t, s, int(rows), int(columns))
            assert expected.any(), "the agent reshuffles boards without a valid move"
            np.testing.assert_array_equal(row, ~expected)
    # Move 126 swaps (7, 7) and (8, 7): outside a 6 x 6 board, valid on the board made below.
    small, full = (int(b) for b in scene.board_index("Match3VectorObs", [0, 1]))
    types, special = _without_lines()
    types[0, 1], types[1, 3] = 4, 4  # a valid move inside, or the board would be reshuffled
    _set_board(scene.boards, small, types, special, (6, 6))
    types, special = _without_lines()
    types[8, 5:7] = (7 + 14) % 6  # the type of (7, 7): swapped up it completes row 8
    _set_board(scene.boards, full, types, special, (9, 8))
    before = scene.boards.types.copy()
    played.step()
    np.testing.assert_array_equal(scene.boards.types[small], before[small])
    assert scene.boards.types[full, 8, 7] == before[full, 7, 7]
    assert scene.boards.types[full, 7, 7] == before[full, 8, 7]
    smart = scene.board_index("Match3SmartHeuristic", [0])[0]
    assert not np.array_equal(scene.boards.types[smart], before[smart]), "plays its own move"


def test_a_valid_move_swaps_and_its_line_pays_at_the_next_step() -> None:
    played = play(Match3Scene, seed=4, num_agents=6)
    played.step()
    scene = played.scene
    board = int(scene.board_index("Match3VectorObs", [0])[0])
    types, special = _without_lines()
    types[0, 1:3] = 4
    special[0, 1:3] = (1, 2)
    types[1, 3], special[1, 3] = 4, 0
    _set_board(scene.boards, board, types, special, (6, 6))
    move = move_index(0, 3, 1, 3)
    scene.heuristic = lambda batch, slots, obs: (
        np.zeros((slots.size, 0), np.float32),
        np.full((slots.size, 1), move, np.int32),
    )
    batch = played.academy.batches[0]
    played.step()  # decides on the prepared board and makes the move
    assert scene.boards.types[board, 0, 3] == 4 and scene.boards.types[board, 1, 3] == types[0, 3]
    before, points_before = float(batch.cumulative_rewards[0]), int(scene.points[board])
    played.step()  # settles: 2 + 3 + 1 points (and whatever falls into place after)
    earned = int(scene.points[board]) - points_before
    assert earned >= 6
    assert float(batch.cumulative_rewards[0]) - before == pytest.approx(0.01 * earned, rel=1e-5)


def test_episodes_are_interrupted_after_max_moves() -> None:
    played = play(Match3Scene, seed=8, options={"max_moves": 4}, num_agents=6)
    scene = played.scene
    begun: list[int] = []
    original = scene.on_episode_begin

    def count(batch: AgentBatch, slots: np.ndarray) -> None:
        begun.append(int(np.size(slots)))
        original(batch, slots)

    scene.on_episode_begin = count
    played.step(3)
    assert sum(begun) == 6 and scene.moves_made.tolist() == [3] * 6
    decisions = [int(b.step_count[0]) for b in played.academy.batches]
    played.step()  # the 4th move is counted: interrupted, no decision, a new board
    assert sum(begun) == 12 and scene.moves_made.tolist() == [0] * 6
    assert decisions == [3, 3, 3, 3]
    played.step(3)
    assert sum(begun) == 12 and scene.moves_made.tolist() == [3] * 6


def test_the_scene_is_deterministic_for_a_seed() -> None:
    runs = []
    for _ in range(2):
        played = play(Match3Scene, seed=9, policy=_random_valid(1), num_agents=6)
        played.step(60)
        runs.append(played.digests)
    assert runs[0] == runs[1]
    other = play(Match3Scene, seed=10, policy=_random_valid(1), num_agents=6)
    other.step(60)
    assert other.digests != runs[0]


def _points_per_move(played: Any, steps: int) -> dict[str, float]:
    """Points cleared per move and board, by behavior (the trainer-driven ones pooled)."""
    played.step(steps)
    scene = played.scene

    def mean(*names: str) -> float:
        boards = np.concatenate(
            [scene.board_index(n, np.arange(scene.batches[n].size)) for n in names]
        )
        return float(scene.points[boards].mean() / steps)

    return {
        "driven": mean("Match3VectorObs", "Match3VisualObs"),
        "simple": mean("Match3SimpleHeuristic"),
        "smart": mean("Match3SmartHeuristic"),
    }


def test_the_greedy_heuristic_beats_random_valid_moves() -> None:
    greedy = _points_per_move(play(Match3Scene, seed=4, num_agents=24), 400)
    chance = _points_per_move(
        play(Match3Scene, seed=4, policy=_random_valid(5), num_agents=24), 400
    )
    # ML-Agents' documentation: 37.0 (greedy) against 34.2 (random valid move) per episode of
    # 499 moves: 7.4 and 6.9 points per move.
    assert 6.0 < chance["driven"] < 7.4 and 6.5 < greedy["driven"] < 8.0
    assert greedy["driven"] > 1.04 * chance["driven"], (greedy, chance)
    # Whatever the policy, the forced heuristics play the same: greedy beats random there too.
    smart = (greedy["smart"] + chance["smart"]) / 2
    simple = (greedy["simple"] + chance["simple"]) / 2
    assert smart > 1.03 * simple, (greedy, chance)


PEER_MATCH3 = """
def decode(hot):
    # (9, 8, k) one-hot -> values, -1 outside the board
    return np.where(hot.sum(axis=2) > 0, hot.argmax(axis=2), -1)

def reference_valid(types):
    rows = int((types[:, 0] >= 0).sum())
    cols = int((types[0] >= 0).sum())
    def half(r, c, value, skip):
        runs = {}
        for name, dr, dc in (("l", 0, -1), ("r", 0, 1), ("u", 1, 0), ("d", -1, 0)):
            n, rr, cc = 0, r + dr, c + dc
            while name != skip and 0 <= rr < rows and 0 <= cc < cols and types[rr, cc] == value:
                n, rr, cc = n + 1, rr + dr, cc + dc
            runs[name] = n
        return runs["l"] + runs["r"] >= 2 or runs["u"] + runs["d"] >= 2
    valid = []
    for m in range(127):
        if m < 63:
            r, c, r2, c2, a, b = m // 7, m % 7, m // 7, m % 7 + 1, "l", "r"
        else:
            r, c = (m - 63) // 8, (m - 63) % 8
            r2, c2, a, b = r + 1, c, "d", "u"
        ok = r2 < rows and c2 < cols and types[r, c] != types[r2, c2]
        ok = ok and (half(r2, c2, types[r, c], a) or half(r, c, types[r2, c2], b))
        valid.append(bool(ok))
    return np.array(valid), rows, cols

env = open_env("Match3", extra=["--option", "max_moves=6"], seed=5)
pid = env._process.pid
out = {"mask_checks": 0, "mask_errors": 0, "sizes": set(), "rewards_off_grid": 0,
       "positive_rewards": 0, "terminal": [], "lengths": [], "png_values": set()}
try:
    env.reset()
    names = sorted(env.behavior_specs)
    out["names"] = names
    out["obs"] = {n: [[o.name, list(o.shape), [int(p) for p in o.dimension_property]]
                      for o in env.behavior_specs[n].observation_specs] for n in names}
    out["branches"] = {n: list(env.behavior_specs[n].action_spec.discrete_branches)
                       for n in names}
    rng = np.random.default_rng(2)
    since = {}
    for step in range(40):
        for name in names:
            d, t = env.get_steps(name)
            for i, agent in enumerate(t.agent_id.tolist()):
                out["terminal"].append(bool(t.interrupted[i]))
                out["lengths"].append(since.pop(agent, 0))
            for r in np.concatenate([d.reward, t.reward]).tolist():
                out["rewards_off_grid"] += abs(r * 100 - round(r * 100)) > 1e-3
                out["positive_rewards"] += r > 0
            visual = d.obs[0].ndim == 4
            if visual:
                out["png_values"].update(np.unique(d.obs[0]).tolist())
            for k in range(len(d)):
                hot = d.obs[0][k].transpose(1, 2, 0) if visual else d.obs[0][k].reshape(9, 8, 6)
                valid, rows, cols = reference_valid(decode(hot))
                out["sizes"].add((rows, cols))
                out["mask_checks"] += 1
                out["mask_errors"] += int((d.action_mask[0][k] != ~valid).any())
            for agent in d.agent_id.tolist():
                since[agent] = since.get(agent, 0) + 1
            actions = np.array([[rng.choice(np.flatnonzero(~d.action_mask[0][k]))]
                                for k in range(len(d))], dtype=np.int32).reshape(len(d), 1)
            env.set_actions(name, ActionTuple(discrete=actions))
        env.step()
finally:
    out["code"] = close_env(env)
out["pid"] = pid
out["sizes"] = sorted(out["sizes"])
out["png_values"] = sorted(out["png_values"])
emit(out)
"""


@pytest.mark.peer
@pytest.mark.timeout(240)
def test_official_peer_plays_match3(peer: Callable[..., Any]) -> None:
    result = peer(PEER_MATCH3, timeout=200)
    assert result["names"] == sorted(f"{name}?team=0" for name in BEHAVIORS)
    vector = [["Match3 Sensor (cells)", [432], [1]], ["Match3 Sensor (special)", [216], [1]]]
    visual = [
        ["Match3 Sensor (cells)", [6, 9, 8], [1, 2, 2]],
        ["Match3 Sensor (special)", [3, 9, 8], [1, 2, 2]],
    ]
    for name in BEHAVIORS:
        assert result["obs"][f"{name}?team=0"] == (visual if "Visual" in name else vector)
        assert result["branches"][f"{name}?team=0"] == [127]
    assert result["png_values"] == [0.0, 1.0], "the PNGs decode to the one-hot board"
    assert result["mask_checks"] >= 12 * 30 and result["mask_errors"] == 0
    assert len(result["sizes"]) >= 6 and all(
        6 <= rows <= 9 and 6 <= cols <= 8 for rows, cols in result["sizes"]
    )
    assert result["rewards_off_grid"] == 0 and result["positive_rewards"] >= 100
    # max_moves 6: interrupted after 5 decisions (the 6th move counted ends the episode)
    assert result["terminal"] and all(result["terminal"])
    assert set(result["lengths"]) == {5}
    assert result["code"] == 0 and not player_alive(result["pid"])


def test_the_picture_shows_each_board_piece_in_its_colour() -> None:
    played = play(Match3Scene, seed=4)
    played.step(3)
    scene = played.scene
    width, height = 3 * COLUMNS + 2 * 1.5, 2 * (ROWS + 1.4) + 1.5
    picture = scene.draw(1, (560, 440))
    to_pixels = Canvas(560, 440, (0.0, 0.0, width, height)).to_pixels
    colours = [np.round(255 * np.array(c)) for c in (RED, GREEN, BLUE, GOLD, PURPLE, ORANGE)]
    # Area 1's third board (top row, right) is its first Match3VisualObs board.
    board = int(scene.board_index("Match3VisualObs", [2])[0])
    x0, y0 = 2 * (COLUMNS + 1.5), height - (ROWS + 1.4)
    seen = 0
    for row in range(int(scene.boards.rows[board])):
        for column in range(int(scene.boards.columns[board])):
            x, y = to_pixels([x0 + column + 0.5 + 0.3, y0 + row + 0.5])  # right of any dot
            kind = int(scene.boards.types[board, row, column])
            pixel = picture[round(y), round(x)].astype(int)
            nearest = int(np.argmin([np.abs(pixel - c).sum() for c in colours]))
            assert nearest == kind, (row, column, kind, pixel)
            seen += 1
    assert seen >= 36
