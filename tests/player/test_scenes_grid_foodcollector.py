"""GridFoodCollector: the behavior spec (one 5 x 40 x 40 one-hot PNG grid, hybrid 3 + (2,),
4 areas x 5 agents), where food, walls and agents land in the grid (rows from the agent's right
to its left, columns from behind to ahead), frozen agents, ``agent_scale`` lifting the grid over
the food, and a heuristic that clearly beats chance."""

from __future__ import annotations

import numpy as np
import pytest
from scene_harness import Played, idle_policy, play, random_policy

from unity_gym.player.scenes.foodcollector import AGENTS_PER_AREA, FOOD_COUNT, TAGS
from unity_gym.player.scenes.grid_foodcollector import GridFoodCollectorScene, grid_cell_offsets
from unity_gym.player.specs import Compression

pytestmark = pytest.mark.timeout(180)

FOOD, AGENT, WALL, BAD, FROZEN = (TAGS.index(t) for t in TAGS)


def _ready(seed: int = 1, **kwargs: object) -> Played:
    """One area, stepped once, every agent and all food parked in a far corner."""
    played = play(GridFoodCollectorScene, seed=seed, policy=idle_policy, num_agents=5, **kwargs)  # type: ignore[arg-type]
    played.step()
    scene = played.scene
    scene.food[:] = np.array([-44.0, -44.0])
    for agent in range(AGENTS_PER_AREA):
        scene.position[0, agent] = [-44.0 + 2.0 * agent, 44.0]
    scene.frozen[:] = False
    scene.position[0, 0] = [0.0, 0.0]
    scene.heading[0, 0] = 0.0  # facing +x: ahead is +x, right is -y
    return played


def _cells(grid: np.ndarray, channel: int) -> set[tuple[int, int]]:
    return {(int(r), int(c)) for r, c in zip(*np.nonzero(grid[channel]), strict=True)}


def test_behavior_matches_the_unity_scene() -> None:
    (spec,) = GridFoodCollectorScene().behaviors()
    assert spec.full_name == "GridFoodCollector?team=0"
    (sensor,) = spec.sensors
    assert (sensor.wire_name, sensor.wire_shape) == ("GridSensor", (5, 40, 40))
    assert sensor.compression is Compression.PNG
    assert spec.action_spec.continuous_size == 3 and spec.action_spec.discrete_branches == (2,)
    assert spec.agents_per_area == 5 and GridFoodCollectorScene.default_area_count == 4
    assert spec.decision is not None and spec.decision.period == 5 and spec.max_step == 5000


def test_rows_run_from_the_right_to_the_left_and_columns_from_behind_to_ahead() -> None:
    right, ahead = grid_cell_offsets(np.array([1.0]))
    assert (right[0, 0], right[0, 39]) == (19.5, -19.5)
    assert (ahead[0, 0], ahead[0, 39]) == (-19.5, 19.5)
    played = _ready()
    scene = played.scene
    scene.food[0, 0] = [5.0, 0.0]  # 5 ahead
    scene.food[0, FOOD_COUNT] = [0.0, -6.0]  # bad food 6 to the right
    (grid,) = scene.collect_observations(None, np.array([0]))
    assert _cells(grid[0], FOOD) == {(19, 24), (19, 25), (20, 24), (20, 25)}
    assert _cells(grid[0], BAD) == {(13, 19), (13, 20), (14, 19), (14, 20)}
    assert not grid[0, WALL].any() and not grid[0, AGENT].any(), "the agent does not see itself"


def test_walls_fill_the_columns_that_reach_them() -> None:
    played = _ready()
    scene = played.scene
    scene.position[0, 0] = [45.0, 0.0]  # the wall's inner face 5 ahead
    (grid,) = scene.collect_observations(None, np.array([0]))
    assert _cells(grid[0], WALL) == {(row, 25) for row in range(40)}


def test_other_agents_and_frozen_agents() -> None:
    played = _ready()
    scene = played.scene
    scene.position[0, 1] = [0.0, 3.0]  # 3 to the left
    scene.position[0, 2] = [-3.0, 0.0]  # 3 behind
    scene.frozen[0, 2] = True
    (grid,) = scene.collect_observations(None, np.array([0]))
    assert (22, 19) in _cells(grid[0], AGENT) and (22, 20) in _cells(grid[0], AGENT)
    assert (19, 16) in _cells(grid[0], FROZEN) and (20, 16) in _cells(grid[0], FROZEN)
    assert grid[0].sum(axis=0).max() == 1.0, "one tag per cell"


def test_a_tall_agent_looks_over_the_food() -> None:
    played = _ready(parameters={"agent_scale": 3.0})
    scene = played.scene
    scene.food[0, 0] = [9.0, 0.0]
    (grid,) = scene.collect_observations(None, np.array([0]))
    assert not grid[0, FOOD].any(), "the cells' plane 1.5 above the floor misses the food"
    scene.scale[0, 0] = 1.0
    (grid,) = scene.collect_observations(None, np.array([0]))
    assert grid[0, FOOD].any()


def test_the_heuristic_collects_far_more_than_chance() -> None:
    outcomes = {}
    for name, policy in (("heuristic", None), ("random", random_policy(3))):
        played = play(GridFoodCollectorScene, seed=2, policy=policy, num_agents=10)
        played.step(600)
        outcomes[name] = played.scene.eaten_good - played.scene.eaten_bad
    assert outcomes["heuristic"] >= 60
    assert outcomes["heuristic"] >= 10 * max(outcomes["random"], 1)
