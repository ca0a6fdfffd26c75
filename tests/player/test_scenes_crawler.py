"""Crawler: the behavior spec (a 126-float physics-body sensor and 32 floats, 20 continuous
actions, period 5 without actions between decisions), the observation layout at episode begin,
the actions as joint targets and strengths, the reward, the -1 and episode end when the body
touches the floor, the target that moves when a leg touches it, determinism, a heuristic that
beats random actions, and the clear error without MuJoCo."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from scene_harness import idle_policy, play, random_policy, seeded_digests

pytest.importorskip("mujoco")

from unity_gym.player.errors import PlayerError
from unity_gym.player.scenes.articulated import load_mujoco, multiply, rotate
from unity_gym.player.scenes.crawler import (
    FIXED_DELTA_TIME,
    JOINT_DAMPEN,
    MAX_JOINT_FORCE,
    MAX_JOINT_SPRING,
    MAX_WALKING_SPEED,
    START_HEIGHT,
    UPPER_ROTATIONS,
    CrawlerScene,
)

pytestmark = pytest.mark.timeout(300)


def _observed(played: object, steps: int = 1) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (vector, physics-body) observations of the decisions in the next ``steps`` steps."""
    seen: list[tuple[np.ndarray, np.ndarray]] = []
    scene = played.scene  # type: ignore[attr-defined]
    original = scene.heuristic

    def record(batch: object, slots: np.ndarray, observations: list[np.ndarray]) -> object:
        physics, vector = observations  # wire order: PhysicsBodySensor:Body, VectorSensor_size32
        seen.append((vector.copy(), physics.copy()))
        return idle_policy(scene, batch, slots, observations)  # type: ignore[arg-type]

    scene.heuristic = record
    played.step(steps)  # type: ignore[attr-defined]
    scene.heuristic = original
    return seen


def _total_reward(played: object, steps: int) -> float:
    """Every agent's reward over ``steps`` Academy steps, ended episodes included."""
    batch = played.academy.batches[0]  # type: ignore[attr-defined]
    total = 0.0
    for _ in range(steps):
        before = batch.step_count.copy()
        played.step()  # type: ignore[attr-defined]
        restarted = batch.step_count != before + 1
        total += float(batch.last_episode_rewards[restarted].sum())
    return total + float(batch.cumulative_rewards.sum())


def test_behavior_matches_the_unity_scene() -> None:
    (spec,) = CrawlerScene().behaviors()
    assert spec.full_name == "Crawler?team=0"
    wire = [spec.sensors[i] for i in spec.wire_sensor_order()]
    assert [(s.wire_name, s.wire_shape) for s in wire] == [
        ("PhysicsBodySensor:Body", (126,)),
        ("VectorSensor_size32", (32,)),
    ]
    assert spec.action_spec.continuous_size == 20 and spec.action_spec.discrete_branches == ()
    assert spec.decision is not None and spec.decision.period == 5
    assert not spec.decision.take_actions_between_decisions and spec.max_step == 5000
    assert CrawlerScene.default_area_count == 10
    assert CrawlerScene.fixed_delta_time == pytest.approx(0.01333)
    assert CrawlerScene({"max_step": "300"}).behaviors()[0].max_step == 300


def test_the_first_observations_are_the_starting_pose_in_the_cube_space() -> None:
    played = play(CrawlerScene, seed=3, num_agents=4)
    scene = played.scene
    ((vector, physics),) = _observed(played)
    assert vector.shape == (4, 32) and physics.shape == (4, 126)
    assert vector.dtype == physics.dtype == np.float32
    speed = scene.walking_speed
    assert np.all((speed >= 0.1) & (speed < MAX_WALKING_SPEED)) and np.unique(speed).size == 4
    # at rest: the distance to the goal velocity is the speed; average velocity 0; goal (0, 0, S)
    np.testing.assert_allclose(vector[:, 0], speed, rtol=1e-6)
    np.testing.assert_allclose(vector[:, 1:6], 0.0, atol=1e-6)
    np.testing.assert_allclose(vector[:, 6], speed, rtol=1e-6)
    # the turn from the body's forward to the cube's forward (the cube looks at the target)
    body_forward = rotate(scene.rotation[:, 0], np.array([0.0, 0.0, 1.0]))
    turned = rotate(vector[:, 7:11].astype(np.float64), body_forward)
    to_target = (scene.target - scene.position[:, 0])[:, [0, 2]]
    np.testing.assert_allclose(turned[:, [0, 2]], to_target / np.hypot(*to_target.T)[:, None],
                               atol=1e-5)  # fmt: skip
    # the target straight ahead of the cube, on the floor 1.15 below the body's centre
    np.testing.assert_allclose(vector[:, 11], 0.0, atol=1e-4)
    np.testing.assert_allclose(vector[:, 12], 0.5 - START_HEIGHT, atol=1e-5)
    np.testing.assert_allclose(vector[:, 13], np.hypot(*to_target.T), rtol=1e-5)
    np.testing.assert_allclose(vector[:, 14], START_HEIGHT / 10.0, atol=1e-6)
    np.testing.assert_allclose(vector[:, 15:32], 0.0)  # no ground contact, no strength yet
    # physics body sensor: positions and rotations in the cube's space, velocities, local turns
    poses = physics[:, :63].reshape(4, 9, 7)
    np.testing.assert_allclose(poses[:, 0, :3], 0.0, atol=1e-6)
    distance = np.linalg.norm(poses[:, 1:, :3], axis=2)
    np.testing.assert_allclose(distance[:, 0::2], np.hypot(0.9, 0.15), atol=1e-4)  # upper legs
    np.testing.assert_allclose(distance[:, 1::2], np.hypot(1.98, 0.15), atol=1e-4)  # lower legs
    np.testing.assert_allclose(np.linalg.norm(poses[:, :, 3:], axis=2), 1.0, atol=1e-5)
    np.testing.assert_allclose(physics[:, 63:90], 0.0, atol=1e-6)
    local = physics[:, 90:].reshape(4, 9, 4)
    np.testing.assert_allclose(local[:, 0], poses[:, 0, 3:], atol=1e-6)  # the body's: the cube's
    for leg in range(4):
        same = np.abs(np.einsum("ij,j->i", local[:, 1 + 2 * leg], UPPER_ROTATIONS[leg]))
        np.testing.assert_allclose(same, 1.0, atol=1e-5)  # an upper leg's turn on the body
        np.testing.assert_allclose(np.abs(local[:, 2 + 2 * leg, 3]), 1.0, atol=1e-5)  # straight
    # the model-space rotation of a leg is the body's model rotation times its local turn
    np.testing.assert_allclose(
        np.abs(np.einsum("ij,ij->i", multiply(poses[:, 0, 3:], local[:, 1]), poses[:, 1, 3:])),
        1.0,
        atol=1e-5,
    )


def test_actions_set_joint_targets_and_strengths() -> None:
    played = play(CrawlerScene, seed=1, num_agents=1)
    action = np.array(
        [[0.5, -1.0, 0.0, 1.0, -0.25, 0.25, 1.0, -1.0, 0.5, -0.5, 1.0, -1.0,
          1.0, -1.0, 0.0, 0.5, -1.0, 1.0, 0.0, 0.0]], np.float32
    )  # fmt: skip
    played.scene.heuristic = lambda *args: (action, np.zeros((1, 0), np.int32))
    played.step()
    scene = played.scene
    # upper legs (x, y): lerp(-60, 0) and lerp(-20, 20); lower legs: lerp(0, 150) (degrees)
    expected = [-15.0, -20.0, -30.0, 20.0, -37.5, 5.0, 0.0, -20.0, 112.5, 37.5, 150.0, 0.0]
    np.testing.assert_allclose(scene.data.ctrl[:12], np.radians(expected), atol=1e-6)
    strength = [20000.0, 0.0, 0.0, 20000.0, 10000.0, 10000.0, 15000.0, 10000.0]
    np.testing.assert_allclose(scene.strength[0], strength)  # parts: upper 0, lower 0, upper 1...
    np.testing.assert_allclose(scene.model.actuator_gainprm[:12, 0], MAX_JOINT_SPRING)
    limits = [20000.0, 20000.0, 0.0, 0.0, 10000.0, 10000.0, 15000.0, 15000.0,
              0.0, 20000.0, 10000.0, 10000.0]  # fmt: skip
    np.testing.assert_allclose(scene.model.actuator_forcerange[:12, 1], limits)
    hinges = scene.rig.qvel_hinges[0]
    np.testing.assert_allclose(
        scene.model.dof_damping[hinges], JOINT_DAMPEN * np.array(limits) / MAX_JOINT_FORCE
    )
    ((vector, _),) = _observed(played, 5)  # the next decision reports the strengths / 20000
    np.testing.assert_allclose(vector[0, 17:32:2], np.array(strength) / 20000.0, atol=1e-6)


def test_a_crawler_at_rest_stands_on_its_feet_and_earns_almost_nothing() -> None:
    played = play(CrawlerScene, seed=2, num_agents=2, policy=idle_policy)
    played.step(200)
    scene = played.scene
    (batch,) = played.academy.batches
    assert scene.falls == 0 and np.all(batch.step_count == 200)
    assert np.all(batch.cumulative_rewards < 0.5), "no speed towards the target: (almost) nothing"
    assert np.all(scene.touching[:, 2::2]), "the four lower legs stand on the floor"
    assert not scene.touching[:, [0, 1, 3, 5, 7]].any(), "the body and upper legs do not"
    np.testing.assert_allclose(scene.position[:, 0, 1], 0.83, atol=0.05)


def test_the_body_touching_the_floor_sets_minus_one_and_ends_the_episode() -> None:
    limp = np.full((1, 20), -1.0, np.float32)  # no strength: the legs give way
    played = play(CrawlerScene, seed=5, num_agents=1)
    played.scene.heuristic = lambda *args: (limp, np.zeros((1, 0), np.int32))
    (batch,) = played.academy.batches
    steps = 0
    while played.scene.falls == 0 and steps < 200:
        played.step()
        steps += 1
    assert played.scene.falls == 1 and steps > 10, "the limp crawler fell onto its body"
    assert batch.last_episode_rewards[0] == pytest.approx(-1.0)
    assert batch.step_count[0] == 0, "a new episode began after the fall"
    np.testing.assert_allclose(played.scene.position[0, 0, 1], START_HEIGHT, atol=1e-9)


def test_a_leg_touching_the_target_moves_it() -> None:
    played = play(CrawlerScene, seed=4, num_agents=1, policy=idle_policy)
    played.step(100)  # standing
    scene = played.scene
    foot = scene.position[0, 2] + rotate(scene.rotation[0, 2], np.array([0.0, 0.75, 0.0]))
    scene.target[0] = [foot[0], 0.5, foot[2]]  # a cube over the first lower leg's foot
    played.step()
    assert scene.targets_reached == 1
    assert np.hypot(*(scene.target[0] - foot)[[0, 2]]) > 0.5
    assert np.hypot(*scene.target[0, [0, 2]]) <= 40.0 + 1e-9 and scene.target[0, 1] == 0.5


def test_the_scene_is_deterministic_for_a_seed() -> None:
    first = seeded_digests(CrawlerScene, 9)
    assert seeded_digests(CrawlerScene, 9) == first
    assert seeded_digests(CrawlerScene, 10) != first


def test_the_heuristic_walks_to_far_more_reward_than_random_actions() -> None:
    totals = {}
    for name, policy in (("heuristic", None), ("random", random_policy(3))):
        played = play(CrawlerScene, seed=2, policy=policy)
        totals[name] = _total_reward(played, 1000)
    assert totals["heuristic"] >= 10.0 * max(totals["random"], 1.0), totals


def test_without_mujoco_the_scene_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mujoco", None)
    with pytest.raises(PlayerError, match=r'Crawler .*pip install "unity-gym\[mujoco\]"'):
        load_mujoco("Crawler")
    with pytest.raises(PlayerError, match="scene Crawler simulates its physics with MuJoCo"):
        play(CrawlerScene, seed=0).step()
    assert FIXED_DELTA_TIME > 0
