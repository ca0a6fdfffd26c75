"""Worm: the behavior spec (64 floats, 9 continuous actions, period 5 without actions between
decisions), the observation layout at episode begin, the actions as joint targets and strengths,
the reward, the target that moves when the mouth touches it, determinism, a heuristic that beats
random actions, and the clear error without MuJoCo."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from scene_harness import idle_policy, play, random_policy, seeded_digests

pytest.importorskip("mujoco")

from unity_gym.player.errors import PlayerError
from unity_gym.player.scenes.articulated import load_mujoco
from unity_gym.player.scenes.worm import (
    FIXED_DELTA_TIME,
    JOINT_LIMIT_DEGREES,
    MAX_JOINT_FORCE,
    MAX_JOINT_SPRING,
    MOUTH_CENTRE,
    START_HEIGHT,
    WormScene,
)

pytestmark = pytest.mark.timeout(300)


def _observed(played: object, steps: int = 1) -> list[np.ndarray]:
    """The observations of the decisions made in the next ``steps`` Academy steps."""
    seen: list[np.ndarray] = []
    scene = played.scene  # type: ignore[attr-defined]
    original = scene.heuristic

    def record(batch: object, slots: np.ndarray, observations: list[np.ndarray]) -> object:
        seen.append(observations[0].copy())
        return idle_policy(scene, batch, slots, observations)  # type: ignore[arg-type]

    scene.heuristic = record
    played.step(steps)  # type: ignore[attr-defined]
    scene.heuristic = original
    return seen


def test_behavior_matches_the_unity_scene() -> None:
    (spec,) = WormScene().behaviors()
    assert spec.full_name == "Worm?team=0"
    assert [(s.wire_name, s.wire_shape) for s in spec.sensors] == [("VectorSensor_size64", (64,))]
    assert spec.action_spec.continuous_size == 9 and spec.action_spec.discrete_branches == ()
    assert spec.decision is not None and spec.decision.period == 5
    assert not spec.decision.take_actions_between_decisions and spec.max_step == 5000
    assert WormScene.default_area_count == 10
    assert WormScene.fixed_delta_time == pytest.approx(0.01333)
    assert WormScene({"max_step": "300"}).behaviors()[0].max_step == 300


def test_the_first_observation_is_the_starting_pose_in_the_cube_space() -> None:
    played = play(WormScene, seed=3, num_agents=4)
    (obs,) = _observed(played)
    assert obs.shape == (4, 64) and obs.dtype == np.float32
    np.testing.assert_allclose(obs[:, 0], START_HEIGHT / 10.0, atol=1e-6)
    np.testing.assert_allclose(obs[:, 1:4], [[0.0, 0.0, 10.0]] * 4)
    scene = played.scene
    # the cube looks at the target: the target lies straight ahead of it (x = 0, z > 0)
    np.testing.assert_allclose(obs[:, 9], 0.0, atol=1e-5)
    assert np.all(obs[:, 11] > 0.0)
    distance = np.hypot(*(scene.target - scene.position[:, 0])[:, [0, 2]].T)
    np.testing.assert_allclose(obs[:, 11], distance, rtol=1e-5)
    # segment 0: ground 0, velocity 0, angular velocity 0, strength 0 (no action yet)
    np.testing.assert_allclose(obs[:, 12:20], 0.0, atol=1e-6)
    for start in (20, 35):  # segments 1 and 2: ground, velocities, position, rotation, strength
        np.testing.assert_allclose(obs[:, start : start + 7], 0.0, atol=1e-6)
        assert np.all(obs[:, start + 14] == 0.0)
    np.testing.assert_allclose(np.linalg.norm(obs[:, 27:30], axis=1), 1.3163, atol=1e-4)
    np.testing.assert_allclose(np.abs(obs[:, 30:34]), [[np.sqrt(0.5), 0, 0, np.sqrt(0.5)]] * 4,
                               atol=1e-5)  # fmt: skip
    np.testing.assert_allclose(np.abs(obs[:, 45:49]), [[0, 0, 0, 1]] * 4, atol=1e-5)
    np.testing.assert_allclose(np.abs(obs[:, 60:64]), [[0, 0, 0, 1]] * 4, atol=1e-5)
    # the head's angle to the cube and the turn from its forward to the cube's agree
    angle = 2.0 * np.degrees(np.arccos(np.clip(np.abs(obs[:, 8]), 0.0, 1.0)))
    np.testing.assert_allclose(obs[:, 4] * 180.0, angle, atol=1e-3)


def test_actions_set_joint_targets_and_strengths() -> None:
    played = play(WormScene, seed=1, num_agents=1)
    action = np.array([[0.5, -1.0, 0.0, 1.0, -0.25, 0.25, 1.0, -1.0, 0.0]], np.float32)
    played.scene.heuristic = lambda *args: (action, np.zeros((1, 0), np.int32))
    played.step()
    scene = played.scene
    np.testing.assert_allclose(
        scene.data.ctrl[:6], np.radians(JOINT_LIMIT_DEGREES) * action[0, :6], atol=1e-6
    )
    np.testing.assert_allclose(scene.strength[0], [MAX_JOINT_FORCE, 0.0, 0.5 * MAX_JOINT_FORCE])
    np.testing.assert_allclose(scene.model.actuator_gainprm[:6, 0], MAX_JOINT_SPRING)
    np.testing.assert_allclose(
        scene.model.actuator_forcerange[:6, 1], np.repeat([MAX_JOINT_FORCE, 0.0, 5000.0], 2)
    )
    (obs,) = _observed(played, 5)  # the next decision reports the strengths / 10000
    np.testing.assert_allclose(obs[0, [19, 34, 49]], [1.0, 0.0, 0.5], atol=1e-6)


def test_a_worm_at_rest_earns_nothing_and_lands_on_the_floor() -> None:
    played = play(WormScene, seed=2, num_agents=2, policy=idle_policy)
    played.step(150)
    (batch,) = played.academy.batches
    assert np.all(batch.cumulative_rewards == 0.0), "no speed towards the target: no reward"
    scene = played.scene
    assert np.all(scene.touching[:, [0, 1, 3]]), "the head, first and last segments touch the floor"
    np.testing.assert_allclose(scene.position[:, 0, 1], 0.37, atol=0.02)


def test_the_mouth_touching_the_target_moves_it() -> None:
    played = play(WormScene, seed=4, num_agents=1, policy=idle_policy)
    played.step(100)  # lying on the floor
    scene = played.scene
    head = scene.position[0, 0]
    forward = scene.position[0, 0] - scene.position[0, 1]
    forward /= np.linalg.norm(forward)
    # a target just in front of the mouth (the mouth sphere reaches about 1.3 ahead of the head)
    scene.target[0] = head + forward * (MOUTH_CENTRE[2] + 0.6)
    scene.target[0, 1] = 0.5
    played.step()
    assert scene.targets_reached == 1
    assert np.hypot(*(scene.target[0] - head)[[0, 2]]) > 2.0 or scene.targets_reached == 1
    assert np.hypot(*scene.target[0, [0, 2]]) <= 40.0 + 1e-9 and scene.target[0, 1] == 0.5


def test_the_scene_is_deterministic_for_a_seed() -> None:
    first = seeded_digests(WormScene, 9)
    assert seeded_digests(WormScene, 9) == first
    assert seeded_digests(WormScene, 10) != first


def test_the_heuristic_crawls_to_far_more_reward_than_random_actions() -> None:
    totals = {}
    for name, policy in (("heuristic", None), ("random", random_policy(3))):
        played = play(WormScene, seed=2, policy=policy)
        played.step(2000)
        (batch,) = played.academy.batches
        totals[name] = float(batch.cumulative_rewards.sum())
    assert totals["heuristic"] >= 2.0 * max(totals["random"], 1.0), totals


def test_without_mujoco_the_scene_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mujoco", None)
    with pytest.raises(PlayerError, match=r'pip install "unity-gym\[mujoco\]"'):
        load_mujoco("Worm")
    with pytest.raises(PlayerError, match="MuJoCo"):
        play(WormScene, seed=0).step()
    assert FIXED_DELTA_TIME > 0
