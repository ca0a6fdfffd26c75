"""Hallway: the wire contract seen by the official peer (stacked ray and step sensors), the symbol
seen only near the start (so far from it two symbols look the same), goal rewards, the step
penalty, the 3000-step interruption, Unity's push / drag / friction movement, no passing through
walls, the symbol block or the goals at top speed, and a privileged heuristic that clearly beats
chance."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scene_harness import idle_policy, play, player_alive, random_policy, terminal_reports

from unity_gym.player.scenes.hallway import (
    GOAL_Y,
    MAX_STEP,
    O_SYMBOL,
    TOP_SPEED,
    X_SYMBOL,
    HallwayScene,
)

pytestmark = pytest.mark.timeout(120)

O_TAG, X_TAG = 2, 3


def _rays(observation: np.ndarray) -> np.ndarray:
    """``(k, 105)`` -> ``(k, 3 frames, 5 rays, 7 values)``."""
    return observation.reshape(-1, 3, 5, 7)


def test_behavior_matches_the_unity_scene() -> None:
    (spec,) = HallwayScene().behaviors()
    assert spec.full_name == "Hallway?team=0"
    wire = [spec.sensors[i] for i in spec.wire_sensor_order()]
    assert [(s.wire_name, s.wire_shape) for s in wire] == [
        ("StackingSensor_size3_RayPerceptionSensor", (105,)),
        ("StackingSensor_size3_VectorSensor_size1", (3,)),
    ]
    assert spec.action_spec.discrete_branches == (5,)
    assert spec.decision is not None and spec.decision.period == 6
    assert spec.decision.take_actions_between_decisions and spec.max_step == 3000
    assert HallwayScene.default_area_count == 16


def test_symbol_is_seen_near_the_start_only() -> None:
    seen: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def record(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> None:
        newest = _rays(obs[0])[:, 2]
        seen.append(
            (
                newest.copy(),
                scene.position[slots],
                scene.symbol_position[slots],
                scene.symbol[slots],
            )
        )

    played = play(HallwayScene, seed=1, policy=record)
    played.step(900)  # the heuristic walks past the symbol to the goals
    near = far = 0
    for newest, position, symbol_position, symbol in seen:
        tags = newest[..., :5]
        sees_o, sees_x = tags[..., O_TAG].any(axis=1), tags[..., X_TAG].any(axis=1)
        # The symbol shows with the episode's tag only.
        assert not (sees_o & (symbol == X_SYMBOL)).any()
        assert not (sees_x & (symbol == O_SYMBOL)).any()
        beyond = position[:, 1] - symbol_position[:, 1] > 13.0  # rays reach 12 (+ radii)
        assert not (sees_o | sees_x)[beyond].any()
        near += int((sees_o | sees_x).sum())
        far += int((beyond & (position[:, 1] > GOAL_Y - 8.0)).sum())
        # Per ray: one tag or the no-hit flag; fraction 1 exactly when nothing was hit.
        np.testing.assert_array_equal(newest[..., :6].sum(axis=-1), 1.0)
        np.testing.assert_array_equal(newest[..., 5] == 1.0, newest[..., 6] == 1.0)
    assert near > 20 and far > 20, "the run both saw symbols and reached the goal end"


def test_far_from_the_symbol_o_and_x_look_the_same() -> None:
    played = play(HallwayScene, seed=2, policy=idle_policy)
    played.step()
    scene = played.scene
    batch = played.academy.batch("Hallway")
    pair = np.array([0, 1])
    scene.symbol[pair] = [O_SYMBOL, X_SYMBOL]
    scene.symbol_position[pair] = [0.0, 2.0]
    scene.o_goal_x[pair] = 7.0
    scene.heading[pair] = np.pi / 2
    scene.position[pair] = [0.0, 16.0]  # 14 beyond the symbol, facing the goals
    rays, steps = scene.collect_observations(batch, pair)
    np.testing.assert_array_equal(rays[0], rays[1])
    assert rays.reshape(2, 5, 7)[:, :, :2].any(), "the goals are in view"
    scene.position[pair] = [0.0, -4.0]  # 5.5 in front of the symbol, facing it
    rays, _ = scene.collect_observations(batch, pair)
    forward = rays.reshape(2, 5, 7)[:, 0]
    np.testing.assert_allclose(forward[0], [0, 0, 1, 0, 0, 0, 5.0 / 12], atol=1e-6)
    np.testing.assert_allclose(forward[1], [0, 0, 0, 1, 0, 0, 5.0 / 12], atol=1e-6)
    np.testing.assert_allclose(steps, batch.step_count[pair, None] / MAX_STEP)


def test_max_step_option_shortens_episodes_and_scales_penalty_and_sensor() -> None:
    (spec,) = HallwayScene({"max_step": "60"}).behaviors()
    assert spec.max_step == 60
    played = play(HallwayScene, options={"max_step": 60}, policy=idle_policy)
    played.step(60)
    ended = terminal_reports(played.academy)
    assert len(ended) == 16 and all(t.interrupted for t in ended)
    # Six actions (steps 55-60) since the last decision, -1/60 each.
    assert ended[0].reward == pytest.approx(-6.0 / 60)
    (reports,) = [r for r in played.academy.batch("Hallway").queued if r.done]
    np.testing.assert_allclose(reports.observations[1][:, 2], 1.0)


def _walk_into_goal(played: Any, area: int, correct: bool) -> Any:
    scene = played.scene
    goal = scene.goal_centres(np.array([area]))[0, scene.symbol[area] ^ (not correct)]
    scene.position[area] = goal - [0.0, 2.6]
    scene.heading[area] = np.pi / 2
    scene.velocity[area] = [0.0, 4.0]
    agent_id = int(played.academy.batch("Hallway").ids[area])
    for _ in range(10):
        played.step()
        found = [t for t in terminal_reports(played.academy) if t.agent_id == agent_id]
        if found:
            return found[0]
    raise AssertionError("the agent did not reach the goal")


def test_goal_rewards_and_step_penalty() -> None:
    rewards: list[float] = []

    def record(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> Any:
        for reports in batch.queued:
            if not reports.done:
                rewards.extend(reports.rewards.tolist())
        return idle_policy(scene, batch, slots, obs)

    played = play(HallwayScene, seed=3, policy=record)
    played.step(13)
    assert rewards[:16] == [0.0] * 16
    np.testing.assert_allclose(rewards[16:], -6.0 / MAX_STEP, rtol=1e-5)
    right = _walk_into_goal(played, 0, correct=True)
    wrong = _walk_into_goal(played, 1, correct=False)
    assert right.reward == pytest.approx(1.0) and not right.interrupted
    assert wrong.reward == pytest.approx(-0.1) and not wrong.interrupted
    assert played.scene.correct == 1 and played.scene.wrong == 1
    assert played.scene.position[0, 1] < -9.0, "a new episode began near the start"


def test_episodes_are_interrupted_at_max_step() -> None:
    played = play(HallwayScene, seed=4, policy=idle_policy)
    played.step(MAX_STEP - 1)
    assert not terminal_reports(played.academy)
    played.step()
    ended = terminal_reports(played.academy)
    assert len(ended) == 16 and all(t.interrupted for t in ended)
    (reports,) = [r for r in played.academy.batch("Hallway").queued if r.done]
    steps = reports.observations[1]
    np.testing.assert_allclose(steps[:, 2], 1.0)  # newest frame: 3000 / 3000


def test_privileged_heuristic_far_beats_chance() -> None:
    scripted = play(HallwayScene, seed=5)
    scripted.step(1500)
    chance = play(HallwayScene, seed=5, policy=random_policy(6))
    chance.step(1500)
    assert scripted.scene.correct >= 25 and scripted.scene.wrong == 0
    assert chance.scene.correct + chance.scene.wrong <= 2


PEER_HALLWAY = """
env = open_env("Hallway", seed=2)
out = {"pid": env._process.pid, "rewards": set(), "steps": []}
try:
    env.reset()
    name = "Hallway?team=0"
    spec = env.behavior_specs[name]
    out["names"] = list(env.behavior_specs)
    out["obs"] = [[o.name, list(o.shape)] for o in spec.observation_specs]
    out["branches"] = list(spec.action_spec.discrete_branches)
    rng = np.random.default_rng(3)
    for _ in range(20):
        d, t = env.get_steps(name)
        out["rewards"].update(round(r, 6) for r in d.reward.tolist())
        out["steps"].append(d.obs[1][:, 2].tolist())
        env.set_actions(name, ActionTuple(discrete=rng.integers(0, 5, (len(d), 1))))
        env.step()
finally:
    out["code"] = close_env(env)
out["rewards"] = sorted(out["rewards"])
emit(out)
"""


@pytest.mark.peer
@pytest.mark.timeout(180)
def test_official_peer_plays_hallway(peer: Callable[..., Any]) -> None:
    result = peer(PEER_HALLWAY)
    assert result["names"] == ["Hallway?team=0"]
    assert result["obs"] == [
        ["StackingSensor_size3_RayPerceptionSensor", [105]],
        ["StackingSensor_size3_VectorSensor_size1", [3]],
    ]
    assert result["branches"] == [5]
    assert set(result["rewards"]) <= {0.0, round(-6 / 3000, 6)}
    # The step sensor: decisions every 6 steps, starting at step 1.
    for index, values in enumerate(result["steps"]):
        np.testing.assert_allclose(values, (1 + 6 * index) / 3000, rtol=1e-5)
    assert result["code"] == 0 and not player_alive(result["pid"])


def _forward_policy(
    scene: Any, batch: Any, slots: np.ndarray, obs: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Action 1 (forward) for every agent."""
    return np.zeros((slots.size, 0), np.float32), np.ones((slots.size, 1), np.int32)


def test_pushes_drag_and_friction_follow_unity() -> None:
    """A push adds 1.5 units/s along the facing every step; PhysX drag keeps 0.96 of the speed
    and friction takes 0.6 * 19.62 * 0.02 off, so holding forward levels off near 30 units/s;
    turning leaves the world-frame velocity alone."""
    chosen = {"action": 1}

    def policy(scene: Any, batch: Any, slots: np.ndarray, obs: Any) -> Any:
        return np.zeros((slots.size, 0), np.float32), np.full((slots.size, 1), chosen["action"])

    played = play(HallwayScene, seed=6, policy=policy)
    played.step()
    scene = played.scene
    scene.symbol_position[:] = [0.0, 0.0]
    scene.position[:] = [-8.0, -24.0]  # a clear run up the left side to the goal there
    scene.heading[:] = np.pi / 2
    scene.velocity[:] = 0.0
    speed, y = 0.0, -24.0
    for _ in range(65):  # steps 2-66; the next decision is at step 67
        played.step()
        speed = max((speed + 1.5) * 0.96 - 0.6 * 19.62 * 0.02, 0.0)
        y += speed * 0.02
        np.testing.assert_allclose(scene.velocity, np.tile([0.0, speed], (16, 1)), atol=1e-9)
        np.testing.assert_allclose(scene.position[:, 1], y, atol=1e-9)
    assert 27.0 < speed < TOP_SPEED and abs(TOP_SPEED - 30.11) < 0.01
    assert not terminal_reports(played.academy)
    chosen["action"] = 3  # turn right for one decision: 3 degrees a step, velocity unchanged
    for _ in range(6):
        played.step()
        speed = speed * 0.96 - 0.6 * 19.62 * 0.02
    np.testing.assert_allclose(scene.velocity, np.tile([0.0, speed], (16, 1)), atol=1e-9)
    np.testing.assert_allclose(scene.heading, np.pi / 2 - np.radians(18.0), atol=1e-9)


def _gap_to_box(centres: np.ndarray, box: np.ndarray, half: np.ndarray) -> np.ndarray:
    """Distance from each centre to an axis-aligned box (0 inside it)."""
    closest = np.clip(centres, box - half, box + half)
    return np.sqrt(((centres - closest) ** 2).sum(axis=1))


def test_top_speed_never_carries_the_agent_through_walls_block_or_goals() -> None:
    played = play(HallwayScene, seed=7, policy=_forward_policy)
    played.step()
    scene = played.scene
    scene.symbol[:] = O_SYMBOL
    scene.symbol_position[:] = [0.0, -5.0]  # the block spans x in [-2, 2], y in [-5.5, -4.5]
    scene.o_goal_x[:] = 7.0  # the O goal spans x in [5, 9], y from 20.29
    # (start, heading, where the agent comes to rest: (axis, value) or None for a goal touch)
    runs = [
        ((0.0, -15.0), 0.0, (0, 9.0)),  # the right wall
        ((0.0, -15.0), np.pi, (0, -9.0)),  # the left wall
        ((0.0, -15.0), -np.pi / 2, (1, -24.25)),  # the back wall
        ((0.0, -15.0), np.pi / 2, (1, -6.0)),  # the symbol block from below
        ((0.0, 5.0), -np.pi / 2, (1, -4.0)),  # ... from above
        ((-8.0, -5.0), 0.0, (0, -2.5)),  # ... from the left
        ((8.0, -5.0), np.pi, (0, 2.5)),  # ... from the right
        ((-6.0, -9.0), np.pi / 4, None),  # ... at its corner
        ((7.0, 10.0), np.pi / 2, None),  # the O goal from below
        ((0.0, 22.29), 0.0, None),  # the O goal from its side
    ]
    runs += runs[:6]
    start = np.array([run[0] for run in runs])
    scene.position[:] = start
    scene.heading[:] = [run[1] for run in runs]
    # Areas 10-15 repeat the first six runs at 3x the top speed (1.8 units a step, more than
    # the block is deep): the margin of the collision sub-steps.
    speed = np.where(np.arange(16) < 10, TOP_SPEED, 3.0 * TOP_SPEED)
    scene.velocity[:] = _unit_vectors(scene.heading) * speed[:, None]
    ids = played.academy.batch("Hallway").ids.copy()
    ended: dict[int, float] = {}
    box_half = np.array([2.0, 0.5])
    for _ in range(40):
        played.step()
        for t in terminal_reports(played.academy):
            ended.setdefault(t.agent_id, t.reward)
        position = scene.position
        assert (np.abs(position) <= [9.0 + 1e-9, 24.25 + 1e-9]).all()
        assert (_gap_to_box(position, scene.symbol_position, box_half) >= 0.5 - 1e-9).all()
        for centres in np.moveaxis(scene.goal_centres(np.arange(16)), 1, 0):
            assert (_gap_to_box(position, centres, np.array([2.0, 2.0])) >= 0.5 - 1e-9).all()
    # Both goal runs ended their episodes at the right goal; nobody else touched one.
    assert ended == {int(ids[8]): pytest.approx(1.0), int(ids[9]): pytest.approx(1.0)}
    for area, (_, _, rest) in enumerate(runs):
        if rest is None:
            continue
        axis, value = rest
        assert scene.position[area, axis] == pytest.approx(value, abs=1e-9), area
        assert scene.velocity[area, axis] == 0.0, "the obstacle took the velocity into it"
        assert scene.position[area, 1 - axis] == pytest.approx(start[area, 1 - axis], abs=1e-9)


def _unit_vectors(angles: np.ndarray) -> np.ndarray:
    return np.stack([np.cos(angles), np.sin(angles)], axis=-1)
