"""Walker: the behavior spec (243 floats, 39 continuous actions, period 5 without actions between
decisions), the observation layout at episode begin, the actions as joint targets and strengths,
the speed-match x look-at reward, the ground contact that sets -1 and ends the episode, the
target touch (+1, the target moves), the torso masses from the environment parameters,
determinism, a heuristic that stays up where random actions fall, and the clear error without
MuJoCo."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from scene_harness import idle_policy, play, random_policy, seeded_digests, terminal_reports

pytest.importorskip("mujoco")

from unity_gym.player.errors import PlayerError
from unity_gym.player.scenes.articulated import load_mujoco, yaw_towards
from unity_gym.player.scenes.walker import (
    HINGE_HIGH,
    HINGE_LOW,
    JOINT_DAMPEN,
    JOINTS,
    MAX_JOINT_FORCE,
    MAX_JOINT_SPRING,
    PARTS,
    START_HEIGHT,
    STRENGTH_ORDER,
    WalkerScene,
)

pytestmark = pytest.mark.timeout(300)

#: Where each part's observations start (10 floats, then 5 more for the parts with a joint).
STARTS: list[int] = []
_column = 18
for _part in PARTS:
    STARTS.append(_column)
    _column += 10 + (5 if _part.name not in ("hips", "handL", "handR") else 0)
assert _column == 243


def _observed(played: object, steps: int = 1) -> list[np.ndarray]:
    """The observations of the decisions made in the next ``steps`` Academy steps."""
    seen: list[np.ndarray] = []
    scene = played.scene  # type: ignore[attr-defined]
    original = scene.heuristic

    def record(batch: object, slots: np.ndarray, observations: list[np.ndarray]) -> object:
        seen.append(observations[0].copy())
        return original(batch, slots, observations)

    scene.heuristic = record
    played.step(steps)  # type: ignore[attr-defined]
    scene.heuristic = original
    return seen


def _part(name: str) -> int:
    return [part.name for part in PARTS].index(name)


def test_behavior_matches_the_unity_scene() -> None:
    (spec,) = WalkerScene().behaviors()
    assert spec.full_name == "Walker?team=0"
    assert [(s.wire_name, s.wire_shape) for s in spec.sensors] == [("VectorSensor_size243", (243,))]
    assert spec.action_spec.continuous_size == 39 and spec.action_spec.discrete_branches == ()
    assert spec.decision is not None and spec.decision.period == 5
    assert not spec.decision.take_actions_between_decisions and spec.max_step == 5000
    assert WalkerScene.default_area_count == 10
    assert WalkerScene.fixed_delta_time == pytest.approx(0.01333)
    assert WalkerScene({"max_step": "300"}).behaviors()[0].max_step == 300
    assert len(PARTS) == 16 and len(JOINTS) == 13
    assert sum(len(joint.axes) for joint in JOINTS) == 26  # target actions
    assert [PARTS[p].name for p in STRENGTH_ORDER] == [
        "chest", "spine", "head", "thighL", "shinL", "footL", "thighR", "shinR", "footR",
        "armL", "forearmL", "armR", "forearmR",
    ]  # fmt: skip
    # 12 parts end the episode on touching the ground: all but the shins and the feet
    assert [p.name for p in PARTS if not p.done_on_ground] == ["shinL", "footL", "shinR", "footR"]


def test_the_first_observation_is_the_starting_pose_in_the_cube_space() -> None:
    played = play(WalkerScene, seed=3, num_agents=4, policy=idle_policy)
    (obs,) = _observed(played)
    assert obs.shape == (4, 243) and obs.dtype == np.float32
    np.testing.assert_allclose(obs[:, 0], 10.0, atol=1e-5)  # at rest: 10 from the goal velocity
    np.testing.assert_allclose(obs[:, 1:4], 0.0, atol=1e-6)
    np.testing.assert_allclose(obs[:, 4:7], [[0.0, 0.0, 10.0]] * 4)
    # hips and head face the same way: the same turn to the cube's forward, about y only
    np.testing.assert_allclose(obs[:, 7:11], obs[:, 11:15], atol=1e-6)
    np.testing.assert_allclose(obs[:, [7, 9]], 0.0, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(obs[:, 7:11], axis=1), 1.0, atol=1e-5)
    # the cube looks at the target: the target lies straight ahead of it (x = 0, z > 0)
    scene = played.scene
    np.testing.assert_allclose(obs[:, 15], 0.0, atol=1e-4)
    distance = np.hypot(*(scene.target - scene.cube_position)[:, [0, 2]].T)  # the cube: hips
    np.testing.assert_allclose(obs[:, 17], distance, rtol=1e-5)
    np.testing.assert_allclose(obs[:, 16], 0.5 - START_HEIGHT, atol=1e-5)
    for index, part in enumerate(PARTS):
        start = STARTS[index]
        # ground contact, velocity, angular velocity: none yet
        np.testing.assert_allclose(obs[:, start : start + 7], 0.0, atol=1e-6)
        # the position relative to the hips, in the cube's space: the height is the prefab's
        relative = obs[:, start + 7 : start + 10]
        assert np.all(np.abs(relative[:, 1] - relative[0, 1]) < 1e-5)
        if part.name not in ("hips", "handL", "handR"):  # identity, strength 0 (no action yet)
            np.testing.assert_allclose(np.abs(obs[:, start + 10 : start + 14]), [[0, 0, 0, 1]] * 4,
                                       atol=1e-6)  # fmt: skip
            np.testing.assert_allclose(obs[:, start + 14], 0.0)
    np.testing.assert_allclose(obs[:, STARTS[_part("chest")] + 8], 1.488, atol=1e-5)
    np.testing.assert_allclose(obs[:, STARTS[_part("head")] + 8], 2.85, atol=1e-5)
    np.testing.assert_allclose(obs[:, STARTS[_part("footL")] + 8], -2.4, atol=1e-5)
    np.testing.assert_allclose(
        np.linalg.norm(obs[:, STARTS[_part("handR")] + 7 : STARTS[_part("handR")] + 10], axis=1),
        np.hypot(2.95, 1.488),
        atol=1e-5,
    )


def test_actions_set_joint_targets_and_strengths() -> None:
    played = play(WalkerScene, seed=1, num_agents=2, policy=idle_policy)
    action = np.linspace(-1.0, 1.0, 39, dtype=np.float32)[None].repeat(2, axis=0)
    action[1] = -action[1]
    played.scene.heuristic = lambda *args: (action, np.zeros((2, 0), np.int32))
    played.step()
    scene = played.scene
    lerp = HINGE_LOW + (HINGE_HIGH - HINGE_LOW) * (action[:, :26] + 1.0) / 2.0
    np.testing.assert_allclose(scene.data.ctrl.reshape(2, 26), lerp, atol=1e-6)
    strength = (action[:, 26:] + 1.0) / 2.0 * MAX_JOINT_FORCE
    np.testing.assert_allclose(scene.strength, strength, rtol=1e-6)
    np.testing.assert_allclose(scene.model.actuator_gainprm[:52, 0], MAX_JOINT_SPRING)
    forces = scene.model.actuator_forcerange[:26, 1]
    # the shins' single angle (actions 10 and 11) follow the strength actions 30 and 33
    np.testing.assert_allclose(forces[[10, 11]], strength[0, [4, 7]], rtol=1e-6)
    damping = scene.model.dof_damping[scene.rig.qvel_hinges[0]]
    np.testing.assert_allclose(damping, forces * JOINT_DAMPEN / MAX_JOINT_FORCE, rtol=1e-6)
    # the shin's limits are 0..120 degrees: action -1 bends it 0, +1 bends it 120
    np.testing.assert_allclose(np.degrees([HINGE_LOW[10], HINGE_HIGH[10]]), [0.0, 120.0])
    (obs,) = _observed(played, 5)  # the next decision reports the strengths / 20000
    for order, part in enumerate(STRENGTH_ORDER):
        np.testing.assert_allclose(
            obs[:, STARTS[part] + 14], strength[:, order] / MAX_JOINT_FORCE, atol=1e-6
        )


def test_the_heuristic_stands_and_earns_nothing_at_rest() -> None:
    played = play(WalkerScene, seed=2, num_agents=3)
    played.step(400)
    scene = played.scene
    (batch,) = played.academy.batches
    assert scene.falls == 0 and np.all(batch.episodes_begun == 1)
    assert np.all(np.abs(batch.cumulative_rewards) < 1e-3), "standing still: speed match 0"
    # the feet on the floor, the hips their height above them (the prefab's legs stretched)
    np.testing.assert_allclose(scene.position[:, 0, 1], 2.468, atol=0.03)
    assert np.all(scene.touching[:, [_part("footL"), _part("footR")]])


def test_the_reward_is_speed_match_times_look_at() -> None:
    played = play(WalkerScene, seed=5, num_agents=1)
    played.step(100)  # standing
    scene = played.scene
    (batch,) = played.academy.batches
    before = float(batch.cumulative_rewards[0])
    # move the whole body at 4 towards the target: speed miss 6, look-at as the head faces
    root = scene.rig.qvel_root[0]
    yaw = float(yaw_towards(scene.target[:1], scene.cube_position[:1])[0])  # as FixedUpdate
    scene.data.qvel[root : root + 3] = 4.0 * np.array([np.sin(yaw), 0.0, np.cos(yaw)])
    scene._refresh()
    average = scene.velocity[0].mean(axis=0)
    head = scene.rotation[0, 3]
    forward = np.array(
        [2 * (head[0] * head[2] + head[3] * head[1]), 2 * (head[1] * head[2] - head[3] * head[0]),
         1 - 2 * (head[0] ** 2 + head[1] ** 2)]
    )  # fmt: skip
    look = (forward @ [np.sin(yaw), 0.0, np.cos(yaw)] + 1.0) / 2.0
    played.step()
    direction = np.array([np.sin(yaw), 0.0, np.cos(yaw)])
    miss = np.linalg.norm(average - 10.0 * direction)
    assert miss == pytest.approx(6.0, abs=0.02)  # the body's own sway is small
    expected = (1.0 - (miss / 10.0) ** 2) ** 2 * look
    assert float(batch.cumulative_rewards[0]) - before == pytest.approx(expected, rel=1e-3)


def test_touching_the_ground_sets_minus_one_and_ends_the_episode() -> None:
    played = play(WalkerScene, seed=4, num_agents=2)
    played.step(3)
    scene = played.scene
    # lay area 1's walker on its back, the hips just touching the floor
    root = scene.rig.qpos_root[1]
    scene.data.qpos[root + 1] = 0.27
    scene.data.qpos[root + 3 : root + 7] = [np.sqrt(0.5), -np.sqrt(0.5), 0.0, 0.0]
    (batch,) = played.academy.batches
    batch.add_reward(1, 0.25)  # earned since the last decision: replaced by -1
    played.step()
    ends = terminal_reports(played.academy)
    assert [(t.agent_id, t.reward, t.interrupted) for t in ends] == [
        (int(batch.ids[1]), -1.0, False)
    ]
    assert scene.falls == 1 and batch.episodes_begun.tolist() == [1, 2]
    # a new episode: back to the starting pose (within this step's fall)
    assert scene.position[1, 0, 1] == pytest.approx(START_HEIGHT, abs=0.05)
    assert not scene.touching[1].any()
    assert float(batch.cumulative_rewards[1]) == 0.0


def test_a_body_part_touching_the_target_earns_one_and_moves_it() -> None:
    played = play(WalkerScene, seed=6, num_agents=1)
    played.step(100)  # standing
    scene = played.scene
    hips = scene.position[0, 0]
    forward = scene.position[0, _part("footL"), [0, 2]] - scene.position[0, _part("shinL"), [0, 2]]
    forward = np.array([forward[0], 0.0, forward[1]]) / np.linalg.norm(forward)
    # a target just in front of the toes (the feet reach 0.315 ahead of the hips)
    scene.place_target(0, np.array([hips[0], 0.5, hips[2]]) + 0.75 * forward)
    (batch,) = played.academy.batches
    before = float(batch.cumulative_rewards[0])
    played.step()
    assert scene.targets_reached == 1
    assert float(batch.cumulative_rewards[0]) - before == pytest.approx(1.0, abs=1e-3)
    offset = scene.target[0] - scene.target_start[0]
    assert np.hypot(offset[0], offset[2]) <= 40.0 + 1e-9 and scene.target[0, 1] == 0.5
    np.testing.assert_array_equal(scene.model.geom_pos[scene._target_geoms[0]], scene.target[0])
    played.step()
    assert scene.targets_reached == 1 or np.hypot(*(scene.target[0] - hips)[[0, 2]]) < 5.0


def test_torso_masses_come_from_the_environment_parameters() -> None:
    played = play(WalkerScene, seed=1, num_agents=2, parameters={"hip_mass": 12.0})
    played.step()
    scene = played.scene
    hips = scene.rig.bodies[:, 0]
    np.testing.assert_allclose(scene.model.body_mass[hips], 12.0)
    np.testing.assert_allclose(
        scene.model.body_inertia[hips], scene._base_inertia[hips] * 12.0 / 8.0, rtol=1e-6
    )
    np.testing.assert_allclose(scene.model.body_mass[scene.rig.bodies[:, 1:3]], 8.0)  # defaults


def test_the_scene_is_deterministic_for_a_seed() -> None:
    first = seeded_digests(WalkerScene, 9)
    assert seeded_digests(WalkerScene, 9) == first
    assert seeded_digests(WalkerScene, 10) != first


def test_the_heuristic_stays_up_where_random_actions_fall() -> None:
    falls = {}
    for name, policy in (("heuristic", None), ("random", random_policy(3))):
        played = play(WalkerScene, seed=2, policy=policy)
        played.step(1000)
        falls[name] = played.scene.falls
    assert falls["heuristic"] == 0 and falls["random"] >= 20, falls


def test_without_mujoco_the_scene_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mujoco", None)
    with pytest.raises(PlayerError, match=r'scene Walker .*pip install "unity-gym\[mujoco\]"'):
        load_mujoco("Walker")
    with pytest.raises(PlayerError, match="scene Walker simulates its physics with MuJoCo"):
        play(WalkerScene, seed=0).step()
