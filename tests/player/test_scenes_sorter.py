"""Sorter: the behavior spec (a variable-length buffer sensor of tiles, the rigid-body sensor and
the stacked position vector, discrete 3x3x3), the tiles' rows, the touch rules (next tile +1,
wrong tile -1 and the end, visited tiles ignored, all visited ends), ``num_tiles``, determinism
and a heuristic that clearly beats chance."""

from __future__ import annotations

import numpy as np
import pytest
from scene_harness import idle_policy, play, random_policy

from unity_gym.player.scenes.sorter import (
    AGENT_RADIUS,
    TILE_COUNT,
    TILE_HALF_DEPTH,
    TILE_RADIUS,
    SorterScene,
    tile_centres,
)
from unity_gym.player.specs import DimensionProperty

pytestmark = pytest.mark.timeout(180)


def _observed(played: object, steps: int = 1) -> list[list[np.ndarray]]:
    """The observations of the decisions made in the next ``steps`` Academy steps."""
    seen: list[list[np.ndarray]] = []
    scene = played.scene  # type: ignore[attr-defined]
    original = scene.heuristic

    def record(batch: object, slots: np.ndarray, observations: list[np.ndarray]) -> object:
        seen.append([o.copy() for o in observations])
        return idle_policy(scene, batch, slots, observations)  # type: ignore[arg-type]

    scene.heuristic = record
    played.step(steps)  # type: ignore[attr-defined]
    scene.heuristic = original
    return seen


def _in_front_of(slot: int) -> np.ndarray:
    """An agent position touching the tile at wall ``slot``."""
    centre = tile_centres(np.array(slot))
    return centre * (TILE_RADIUS - TILE_HALF_DEPTH - AGENT_RADIUS + 0.01) / TILE_RADIUS


def test_behavior_matches_the_unity_scene() -> None:
    (spec,) = SorterScene().behaviors()
    assert spec.full_name == "Sorter?team=0"
    wire = [spec.sensors[i] for i in spec.wire_sensor_order()]
    assert [(s.wire_name, s.wire_shape) for s in wire] == [
        ("BufferSensor", (20, 23)),
        ("RBSensor", (10,)),
        ("StackingSensor_size2_VectorSensor_size4", (8,)),
    ]
    assert wire[0].dimension_properties == (
        DimensionProperty.VARIABLE_SIZE,
        DimensionProperty.NONE,
    )
    assert spec.action_spec.discrete_branches == (3, 3, 3)
    assert spec.decision is not None and spec.decision.period == 5
    assert spec.decision.take_actions_between_decisions and spec.max_step == 5000
    assert SorterScene.default_area_count == 8


def test_the_buffer_rows_describe_the_shown_tiles_in_increasing_order() -> None:
    played = play(SorterScene, seed=3, num_agents=4)
    ((rows, body, vector), *_) = _observed(played)
    scene = played.scene
    for area in range(4):
        count = int((scene.numbers[area] > 0).sum())
        assert 1 <= count <= TILE_COUNT
        numbers = scene.numbers[area, :count]
        assert list(numbers) == sorted(numbers)
        assert np.all(rows[area, count:] == 0.0), "absent tiles are rows of zeros"
        for row, number, slot in zip(rows[area, :count], numbers, scene.slots[area], strict=False):
            expected = np.zeros(23, np.float32)
            expected[number] = 1.0
            offset = (tile_centres(np.array(slot)) - scene.position[area]) / 20.0
            expected[20:22] = offset  # index 20 overwrites tile 20's one-hot, as in Unity
            np.testing.assert_allclose(row, expected, atol=1e-6)
    # the agent starts in the centre facing -z, its body pose is the identity
    np.testing.assert_allclose(vector[:, 4:], [[0.0, 0.0, 0.0, -1.0]] * 4, atol=1e-6)
    np.testing.assert_allclose(body[:, :7], [[0, 0, 0, 0, 0, 0, 1]] * 4)


def test_touching_tiles_in_order_rewards_and_a_wrong_one_ends_the_episode() -> None:
    played = play(SorterScene, seed=1, num_agents=1, parameters={"num_tiles": 3.0})
    played.step()
    scene = played.scene
    while int((scene.numbers[0] > 0).sum()) < 2:  # an episode with two tiles or more
        scene.position[0] = _in_front_of(int(scene.slots[0, 1 if scene.numbers[0, 1] > 0 else 0]))
        played.step()
    (batch,) = played.academy.batches
    first, second = int(scene.slots[0, 0]), int(scene.slots[0, 1])
    before = float(batch.cumulative_rewards[0])
    correct = scene.correct
    scene.position[0] = _in_front_of(first)
    played.step()
    assert scene.visited[0, 0] and scene.next_tile[0] == 1 and scene.correct == correct + 1
    assert float(batch.cumulative_rewards[0]) == pytest.approx(before + 1.0 - 1 / 5000)
    played.step(3)  # still against the visited tile: nothing more
    assert scene.correct == correct + 1 and scene.wrong == 0
    count = int((scene.numbers[0] > 0).sum())
    wrong = 2 if count > 2 else None
    if wrong is not None:  # skip the second tile: touching the third is wrong
        scene.position[0] = _in_front_of(int(scene.slots[0, wrong]))
        played.step()
        assert scene.wrong == 1 and not scene.visited[0].any(), "ended and reset"
    else:
        scene.position[0] = _in_front_of(second)
        played.step()
        assert scene.correct == correct + 2 and not scene.visited[0].any(), "all visited: ended"


def test_num_tiles_bounds_the_tiles_shown() -> None:
    played = play(SorterScene, seed=4, num_agents=8, parameters={"num_tiles": 2.0})
    played.step()
    counts = (played.scene.numbers > 0).sum(axis=1)
    assert set(counts.tolist()) <= {1, 2}


def test_the_scene_is_deterministic_for_a_seed() -> None:
    runs = []
    for _ in range(2):
        played = play(SorterScene, seed=9, policy=random_policy(1), num_agents=4)
        played.step(300)
        runs.append(played.digests)
    assert runs[0] == runs[1]
    other = play(SorterScene, seed=10, policy=random_policy(1), num_agents=4)
    other.step(300)
    assert other.digests != runs[0]


def test_the_heuristic_sorts_far_better_than_chance() -> None:
    outcomes = {}
    for name, policy in (("heuristic", None), ("random", random_policy(3))):
        played = play(SorterScene, seed=2, policy=policy)
        played.step(2000)
        outcomes[name] = (played.scene.correct, played.scene.wrong)
    assert outcomes["heuristic"][0] >= 100 and outcomes["heuristic"][1] <= 2
    assert outcomes["heuristic"][0] >= 20 * max(outcomes["random"][0], 1)
