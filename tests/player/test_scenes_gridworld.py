"""GridWorld: the wire contract seen by the official peer (camera PNG + goal signal, masks), the
rewards, the ``gridSize`` parameter, determinism and a heuristic that clearly beats chance."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scene_harness import play, player_alive, random_policy, terminal_reports

from unity_gym.player.scenes.gridworld import GridWorldScene
from unity_gym.player.specs import Compression, ObservationType

pytestmark = pytest.mark.timeout(120)

AGENT_COLOUR = np.array([61, 195, 255]) / 255.0


def test_behavior_matches_the_unity_scene() -> None:
    (spec,) = GridWorldScene().behaviors()
    assert spec.full_name == "GridWorld?team=0"
    camera, goal = (spec.sensors[i] for i in spec.wire_sensor_order())
    assert (camera.wire_name, camera.wire_shape, camera.compression) == (
        "CameraSensor",
        (3, 64, 84),
        Compression.PNG,
    )
    assert camera.dimension_properties == (1, 2, 2)
    assert (goal.wire_name, goal.wire_shape, goal.observation_type) == (
        "VectorSensor",
        (2,),
        ObservationType.GOAL_SIGNAL,
    )
    assert spec.action_spec.discrete_branches == (5,) and spec.action_spec.continuous_size == 0
    assert spec.decision is None and spec.max_step == 100 and spec.uses_action_mask
    assert GridWorldScene.default_area_count == 9


def _agent_cells(images: np.ndarray, grid: int) -> np.ndarray:
    """Cell (x, z) of the light-blue agent square in each image."""
    cells = []
    for image in images:
        match = (np.abs(image - AGENT_COLOUR[:, None, None]) < 0.01).all(axis=0)
        rows, cols = np.nonzero(match)
        size = 64 / grid
        x = int((cols.mean() - 10.0) // size)
        z = grid - 1 - int(rows.mean() // size)
        cells.append((x, z))
    return np.array(cells)


def test_camera_shows_the_agent_where_it_stands_and_the_goal_signal_is_one_hot() -> None:
    seen: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def record(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> None:
        seen.append((obs[0], obs[1], scene.agent_xz[slots].copy()))
        return None

    played = play(GridWorldScene, seed=3, policy=record)
    played.step(20)
    for images, goals, cells in seen:
        assert images.shape[1:] == (3, 64, 84) and images.min() >= 0 and images.max() <= 1
        np.testing.assert_array_equal(_agent_cells(images, 5), cells)
        assert (goals.sum(axis=1) == 1).all() and set(np.unique(goals)) <= {0.0, 1.0}


def test_goal_rewards_and_step_limit() -> None:
    played = play(GridWorldScene, seed=1, policy=random_policy(2))
    terminals = []
    for _ in range(400):
        played.step()
        terminals += terminal_reports(played.academy)
    rewards = {round(t.reward, 4) for t in terminals if not t.interrupted}
    assert rewards == {1.0, -1.0}, "reaching a goal sets the reward to +1 or -1"
    assert all(t.reward == pytest.approx(-0.01) for t in terminals if t.interrupted)
    scene = played.scene
    assert scene.successes + scene.failures == sum(not t.interrupted for t in terminals)


def test_grid_size_parameter_is_read_at_episode_begin() -> None:
    played = play(GridWorldScene, seed=4, policy=random_policy(1), parameters={"gridSize": 8})
    largest = 0
    for _ in range(150):
        played.step()
        assert (played.scene.grid_size == 8).all()
        largest = max(largest, int(played.scene.agent_xz.max()), int(played.scene.goal_xz.max()))
    assert largest > 4, "cells beyond the default 5x5 grid are used"


def test_same_seed_same_run_other_seed_other_run() -> None:
    def digests(seed: int) -> list[int]:
        played = play(GridWorldScene, seed=seed, policy=random_policy(9))
        played.step(60)
        return played.digests

    first = digests(5)
    assert digests(5) == first
    assert digests(6) != first


def test_heuristic_reaches_the_right_goal_far_more_often_than_chance() -> None:
    scripted = play(GridWorldScene, seed=2)
    scripted.step(300)
    chance = play(GridWorldScene, seed=2, policy=random_policy(3))
    chance.step(300)
    assert scripted.scene.failures == 0
    assert scripted.scene.successes > 4 * max(chance.scene.successes, 1)


PEER_GRIDWORLD = """
import hashlib
def digest(d):
    return hashlib.md5(b"".join(np.ascontiguousarray(o).tobytes() for o in d.obs)).hexdigest()

def run(seed, steps, check=False):
    env = open_env("GridWorld", seed=seed)
    pid = env._process.pid
    env.reset()
    name = "GridWorld?team=0"
    spec = env.behavior_specs[name]
    rng = np.random.default_rng(11)
    out = {"digests": [], "terminal_rewards": [], "interrupted_rewards": [],
           "decision_rewards": set(), "mask_checks": 0, "mask_errors": [], "goal_rows": set()}
    try:
        play(env, name, rng, out, steps, check)
    finally:
        out["code"] = close_env(env)
    out["pid"] = pid
    out["decision_rewards"] = sorted(out["decision_rewards"])
    out["goal_rows"] = sorted(out["goal_rows"])
    return out, spec

def play(env, name, rng, out, steps, check):
    for step in range(steps):
        d, t = env.get_steps(name)
        out["digests"].append(digest(d))
        for r, i in zip(t.reward.tolist(), t.interrupted.tolist()):
            (out["interrupted_rewards"] if i else out["terminal_rewards"]).append(round(r, 4))
        out["decision_rewards"].update(round(r, 4) for r in d.reward.tolist())
        mask = d.action_mask[0]
        if check:
            colour = np.array([61, 195, 255])[:, None, None] / 255.0
            for k in range(len(d)):
                hit = (np.abs(d.obs[0][k] - colour) < 0.01).all(axis=0)
                rows, cols = np.nonzero(hit)
                x = int((cols.mean() - 10.0) // 12.8)
                z = 4 - int(rows.mean() // 12.8)
                expected = [False, z == 4, z == 0, x == 0, x == 4]
                out["mask_checks"] += 1
                if mask[k].tolist() != expected:
                    out["mask_errors"].append([x, z, mask[k].tolist()])
                out["goal_rows"].add(tuple(d.obs[1][k].tolist()))
        actions = np.array([[rng.choice(np.flatnonzero(~mask[k]))] for k in range(len(d))],
                           dtype=np.int32).reshape(len(d), 1)
        env.set_actions(name, ActionTuple(discrete=actions))
        env.step()

env = open_env("GridWorld", seed=3)
facts = {}
try:
    env.reset()
    name = list(env.behavior_specs)[0]
    spec = env.behavior_specs[name]
    first, _ = env.get_steps(name)
    facts.update({
        "names": list(env.behavior_specs),
        "obs": [[o.name, list(o.shape), [int(p) for p in o.dimension_property],
                 o.observation_type.value] for o in spec.observation_specs],
        "continuous": spec.action_spec.continuous_size,
        "branches": list(spec.action_spec.discrete_branches),
        "ids": first.agent_id.tolist(),
        "mask_shapes": [list(m.shape) for m in first.action_mask],
    })
finally:
    facts["code"] = close_env(env)
long_run, _ = run(3, 500, check=True)
again, _ = run(3, 40)
emit({"facts": facts, "long": long_run, "again": again["digests"],
      "codes": [long_run["code"], again["code"]],
      "pids": [long_run["pid"], again["pid"]]})
"""


@pytest.mark.peer
@pytest.mark.timeout(180)
def test_official_peer_plays_gridworld(peer: Callable[..., Any]) -> None:
    result = peer(PEER_GRIDWORLD, timeout=150)
    facts = result["facts"]
    assert facts["names"] == ["GridWorld?team=0"]
    assert facts["obs"] == [
        ["CameraSensor", [3, 64, 84], [1, 2, 2], 0],
        ["VectorSensor", [2], [1], 1],
    ]
    assert facts["continuous"] == 0 and facts["branches"] == [5]
    assert facts["ids"] == list(range(9))
    assert facts["mask_shapes"] == [[9, 5]]
    long_run = result["long"]
    assert long_run["mask_checks"] >= 500 * 9 and long_run["mask_errors"] == []
    assert long_run["goal_rows"] == [[0.0, 1.0], [1.0, 0.0]]
    assert set(long_run["terminal_rewards"]) == {1.0, -1.0}
    assert set(long_run["interrupted_rewards"]) <= {-0.01}
    assert set(long_run["decision_rewards"]) <= {0.0, -0.01}
    assert result["again"] == long_run["digests"][:40], "same seed, same actions, same run"
    assert result["codes"] == [0, 0]
    assert not any(player_alive(pid) for pid in result["pids"]), "no player left behind"
