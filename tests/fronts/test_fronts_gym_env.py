"""``UnityGymEnv`` against built-in scenes of the headless player, through the real bridge."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
from fronts_processes import live_child_pids, wait_until_gone
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import unity_gym  # noqa: F401  (registers the ids)
from unity_gym.base_env import ActionSpec, BehaviorSpec
from unity_gym.exceptions import UnityEnvironmentException, UnityMultipleBehaviorsException
from unity_gym.gym_env import UnityGymEnv, select_behavior
from unity_gym.spaces import check_sb3_action_space

pytestmark = pytest.mark.timeout(180)

# Stress vector observation: [agent step, agent id, academy step since reset, episode count,
# last action's first component, stress_value, slot, ...] (see unity_gym/player/scenes/stress.py).
STEP, AGENT_ID, ACADEMY_STEP, EPISODES, LAST_ACTION, PARAMETER = range(6)


def _stress(**options: Any) -> UnityGymEnv:
    extra = {k: options.pop(k) for k in list(options) if k in {"num_agents", "agent_index"}}
    env_params = options.pop("env_params", None)
    return UnityGymEnv(scene="Stress", scene_options=options, env_params=env_params, **extra)


def _pid(env: gymnasium.Env[Any, Any]) -> int:
    process = env.unwrapped.unity_env.process  # type: ignore[attr-defined]
    assert process is not None
    return int(process.pid)


@pytest.fixture(scope="module")
def stress_env() -> Iterator[UnityGymEnv]:
    env = _stress()
    yield env
    env.close()


_KNOWN_WARNINGS = ("infinity", "-infinity")


@pytest.mark.parametrize("scene", ["3DBall", "Basic", "GridWorld"])
def test_gymnasium_and_sb3_env_checkers_pass(scene: str) -> None:
    env = gymnasium.make(f"Unity-{scene}-v0")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            gymnasium_check_env(env.unwrapped)
            sb3_check_env(env.unwrapped)
        unexpected = [str(w.message) for w in caught if "infinity" not in str(w.message)]
        assert unexpected == []
    finally:
        env.close()


def test_step_returns_python_types_fresh_arrays_and_applies_the_action(
    stress_env: UnityGymEnv,
) -> None:
    obs, info = stress_env.reset()
    assert info == {"agent_id": int(obs[AGENT_ID]), "group_id": 0, "group_reward": 0.0}
    first, reward, terminated, truncated, info = stress_env.step(np.array([0.5, 0.0]))
    second, *_ = stress_env.step(np.array([0.25, 0.0]))
    assert type(reward) is float and reward == 0.5
    assert type(terminated) is bool and type(truncated) is bool
    assert not (terminated or truncated)
    assert first[LAST_ACTION] == 0.5 and second[LAST_ACTION] == 0.25
    assert second[STEP] == first[STEP] + 1
    assert not np.shares_memory(first, second)
    assert info["agent_id"] == int(first[AGENT_ID])


def test_reset_in_the_middle_of_an_episode_resets_the_game(stress_env: UnityGymEnv) -> None:
    start, _ = stress_env.reset()
    for _ in range(3):
        stress_env.step(np.zeros(2))
    pid = _pid(stress_env)
    again, _ = stress_env.reset()
    assert again[ACADEMY_STEP] == start[ACADEMY_STEP] and again[STEP] == start[STEP]
    assert _pid(stress_env) == pid


def test_step_needs_a_reset_after_the_episode_ends() -> None:
    env = _stress(episode_length=2)
    try:
        with pytest.raises(gymnasium.error.ResetNeeded):
            env.step(np.zeros(2))
        env.reset()
        env.step(np.zeros(2))
        *_, terminated, _, _ = env.step(np.zeros(2))
        assert terminated
        with pytest.raises(gymnasium.error.ResetNeeded, match="reset"):
            env.step(np.zeros(2))
    finally:
        env.close()


def test_terminal_with_simultaneous_new_decision_is_returned_then_reused_by_reset() -> None:
    env = _stress(episode_length=3)
    try:
        env.reset()
        pid = _pid(env)
        results = [env.step(np.array([1.0, 0.0])) for _ in range(3)]
        last_obs, reward, _, truncated, _ = results[-1]
        assert [r[2] for r in results] == [False, False, True] and not truncated
        assert reward == 1.0 and last_obs[EPISODES] == 1
        # Unity already sent the first decision of the next episode with the terminal step:
        # reset() returns it without resetting the game (the Academy step count goes on).
        obs, _ = env.reset()
        assert obs[EPISODES] == 2 and obs[ACADEMY_STEP] > last_obs[ACADEMY_STEP] - 1
        assert obs[ACADEMY_STEP] >= 3 and _pid(env) == pid
    finally:
        env.close()


def test_interrupted_episode_is_truncated_not_terminated() -> None:
    env = _stress(max_step=2)
    try:
        env.reset()
        outcomes = [env.step(np.zeros(2))[2:4] for _ in range(2)]
        assert outcomes == [(False, False), (False, True)]
    finally:
        env.close()


def test_reset_seed_restarts_the_game_and_equal_seeds_repeat() -> None:
    env = gymnasium.make("Unity-v0")
    try:
        first, _ = env.reset(seed=5)
        pid = _pid(env)
        same_fresh, _ = env.reset(seed=5)  # just started with 5: no restart needed
        assert _pid(env) == pid
        env.step(env.action_space.sample())
        repeated, _ = env.reset(seed=5)
        assert _pid(env) != pid
        other, _ = env.reset(seed=6)
        np.testing.assert_array_equal(first, same_fresh)
        np.testing.assert_array_equal(first, repeated)
        assert not np.array_equal(first, other)
        unseeded_pid = _pid(env)
        env.step(env.action_space.sample())
        env.reset()  # mid-episode: the game is reset, not restarted
        assert _pid(env) == unseeded_pid
        assert env.unwrapped.settings.seed == 6  # type: ignore[attr-defined]
        # A reset game is not a freshly seeded one: the same seed restarts it again.
        again, _ = env.reset(seed=6)
        assert _pid(env) != unseeded_pid
        np.testing.assert_array_equal(again, other)
    finally:
        env.close()


def test_more_than_one_agent_is_refused_with_guidance() -> None:
    before = live_child_pids()
    with pytest.raises(UnityEnvironmentException) as error:
        _stress(num_agents=3)
    message = str(error.value)
    for expected in ("3 agents", "make_vec", "unity_gym.pettingzoo", "agent_index=0"):
        assert expected in message
    assert wait_until_gone(live_child_pids() - before) == set()


def test_agent_index_drives_one_agent_while_the_others_act_with_zeros() -> None:
    env = _stress(num_agents=3, agent_index=1)
    try:
        obs, info = env.reset()
        decisions, _ = env.unity_env.get_steps(env.behavior_name)
        assert info["agent_id"] == int(decisions.agent_id[1])
        obs, *_ = env.step(np.array([0.75, 0.0]))
        assert obs[LAST_ACTION] == 0.75
        decisions, _ = env.unity_env.get_steps(env.behavior_name)
        others = [row for row in range(3) if int(decisions.agent_id[row]) != info["agent_id"]]
        assert len(others) == 2
        assert all(decisions.obs[0][row][LAST_ACTION] == 0.0 for row in others)
    finally:
        env.close()


def test_group_id_and_group_reward_are_in_info() -> None:
    env = _stress(group_size=1)
    try:
        _, info = env.reset()
        _, reward, _, _, info = env.step(np.array([0.5, 0.0]))
        assert info["group_id"] > 0
        assert info["group_reward"] == 1.0 and reward == 0.5
    finally:
        env.close()


def test_action_mask_is_flat_true_allowed_inverse_of_unity() -> None:
    env = _stress(continuous=0, discrete="3,2", action_mask=True)
    try:
        assert env.action_space == gymnasium.spaces.MultiDiscrete([3, 2])
        obs, info = env.reset()
        for _ in range(3):
            decisions, _ = env.unity_env.get_steps(env.behavior_name)
            assert decisions.action_mask is not None
            unity_flags = np.concatenate([branch[0] for branch in decisions.action_mask])
            np.testing.assert_array_equal(info["action_mask"], ~unity_flags)
            np.testing.assert_array_equal(env.action_masks(), info["action_mask"])
            step = int(obs[STEP])
            expected = np.ones(5, dtype=bool)
            expected[step % 3] = expected[3 + step % 2] = False
            np.testing.assert_array_equal(info["action_mask"], expected)
            allowed = [int(np.flatnonzero(expected[:3])[0]), int(np.flatnonzero(expected[3:])[0])]
            obs, _, _, _, info = env.step(np.array(allowed))
    finally:
        env.close()


def test_hybrid_actions_use_a_dict_space_that_sb3_refuses_clearly() -> None:
    env = _stress(continuous=1, discrete="2")
    try:
        assert isinstance(env.action_space, gymnasium.spaces.Dict)
        env.reset()
        obs, *_ = env.step({"continuous": np.array([0.5], np.float32), "discrete": np.array([1])})
        assert obs[LAST_ACTION] == 0.5
        with pytest.raises(TypeError, match="hybrid actions"):
            check_sb3_action_space(env.action_space)
    finally:
        env.close()


@pytest.mark.parametrize(
    ("value", "expected"),
    [(7.0, 7.0), ({"sampler_type": "uniform", "min_value": 2.5, "max_value": 2.5}, 2.5)],
)
def test_env_params_reach_the_game(value: object, expected: float) -> None:
    env = _stress(env_params={"stress_value": value})
    try:
        obs, _ = env.reset()
        assert obs[PARAMETER] == expected
    finally:
        env.close()


def test_engine_settings_log_folder_and_extra_args_reach_the_player(tmp_path: Path) -> None:
    env = gymnasium.make(
        "Unity-v0",
        width=64,
        height=48,
        quality_level=2,
        time_scale=7.0,
        target_frame_rate=30,
        capture_frame_rate=25,
        log_folder=tmp_path,
        additional_args=["--frobnicate"],
        no_graphics=True,
        num_areas=2,
        agent_index=1,
    )
    try:
        env.reset()
        env.step(env.action_space.sample())
        bridge = env.unwrapped.unity_env  # type: ignore[attr-defined]
        assert len(bridge.get_steps(env.unwrapped.behavior_name)[0]) == 2  # type: ignore[attr-defined]
    finally:
        env.close()
    log = (tmp_path / "Player-0.log").read_text()
    for line in (
        "screen resolution 64x48",
        "quality_level=2",
        "time_scale=7",
        "target_frame_rate=30",
        "capture_frame_rate=25",
        "--frobnicate",
    ):
        assert line in log


def test_rgb_array_render_shows_the_first_camera() -> None:
    env = UnityGymEnv(
        scene="Stress",
        scene_options={"visual": "png", "visual_shape": "1x4x5"},
        render_mode="rgb_array",
    )
    try:
        obs, _ = env.reset()
        frame = env.render()
        assert frame is not None and frame.shape == (4, 5, 3) and frame.dtype == np.uint8
        np.testing.assert_array_equal(frame[..., 0], obs["StressCamera"][..., 0])
        np.testing.assert_array_equal(frame[..., 0], frame[..., 2])
    finally:
        env.close()
    with pytest.raises(ValueError, match="needs a camera observation"):
        UnityGymEnv(render_mode="rgb_array")
    with pytest.raises(ValueError, match="not supported"):
        UnityGymEnv(render_mode="human")


def test_float_chw_cameras_and_flattened_vectors() -> None:
    env = UnityGymEnv(
        scene="Stress",
        scene_options={"visual": "float", "visual_shape": "3x4x5"},
        visual_obs="float_chw",
        flatten_obs=True,
    )
    try:
        obs, _ = env.reset()
        assert set(obs) == {"vector", "StressCamera"}
        assert obs["StressCamera"].shape == (3, 4, 5) and obs["StressCamera"].dtype == np.float32
        assert env.observation_space.contains(obs)
    finally:
        env.close()


def test_close_stops_the_game_process() -> None:
    env = gymnasium.make("Unity-Basic-v0")
    bridge = env.unwrapped.unity_env  # type: ignore[attr-defined]
    pid = _pid(env)
    assert pid in live_child_pids()
    env.close()
    assert wait_until_gone({pid}) == set()
    env.close()  # idempotent
    with pytest.raises(UnityEnvironmentException, match="This UnityGymEnv is closed"):
        _ = env.unwrapped.unity_env  # type: ignore[attr-defined]
    assert bridge.process is not None and bridge.process.returncode is not None


def test_unknown_keywords_are_rejected_before_starting_a_game() -> None:
    with pytest.raises(TypeError, match="unknown keyword"):
        UnityGymEnv(frame_skip=4)


def test_behavior_selection_rules() -> None:
    spec = BehaviorSpec([], ActionSpec(1, ()))
    teams = {"Tennis?team=0": spec, "Tennis?team=1": spec}
    assert select_behavior({"3DBall?team=0": spec}, None) == "3DBall?team=0"
    assert select_behavior({"3DBall?team=0": spec}, "3DBall") == "3DBall?team=0"
    assert select_behavior(teams, "Tennis?team=1") == "Tennis?team=1"
    with pytest.raises(UnityMultipleBehaviorsException, match="behavior_name"):
        select_behavior(teams, None)
    with pytest.raises(UnityEnvironmentException, match="ambiguous"):
        select_behavior(teams, "Tennis")
    with pytest.raises(UnityEnvironmentException, match="not in the game"):
        select_behavior(teams, "Soccer")
