"""PettingZoo fronts against the multi-agent built-in scenes, through the real bridge."""

from __future__ import annotations

import functools
import types
from typing import Any

import numpy as np
import pytest
from fronts_processes import live_child_pids, wait_until_gone
from pettingzoo.test import (
    api_test,
    max_cycles_test,
    parallel_api_test,
    parallel_seed_test,
    seed_test,
)

from unity_gym.exceptions import UnityEnvironmentException
from unity_gym.pettingzoo import UnityParallelEnv, agent_name_prefixes, env, parallel_env

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.filterwarnings("ignore::UserWarning:pettingzoo"),
]

# Stress vector observation indices (see unity_gym/player/scenes/stress.py).
STEP, AGENT_ID, ACADEMY_STEP, EPISODES, LAST_ACTION = range(5)

MULTI_AGENT_SCENES = ["Tennis", "SoccerTwos"]


@pytest.mark.parametrize("scene", MULTI_AGENT_SCENES)
def test_pettingzoo_api_and_seed_tests_pass(scene: str) -> None:
    parallel = parallel_env(scene=scene)
    try:
        parallel_api_test(parallel, num_cycles=60)
    finally:
        parallel.close()
    aec = env(scene=scene)
    try:
        api_test(aec, num_cycles=30)
    finally:
        aec.close()
    seed_test(functools.partial(env, scene=scene), num_cycles=10)
    parallel_seed_test(functools.partial(parallel_env, scene=scene), num_cycles=10)


@pytest.mark.parametrize("scene", MULTI_AGENT_SCENES)
def test_max_cycles_truncates_parallel_and_aec_episodes(scene: str) -> None:
    module = types.SimpleNamespace(
        parallel_env=functools.partial(parallel_env, scene=scene),
        env=functools.partial(env, scene=scene),
    )
    max_cycles_test(module)


def test_agent_names_follow_behavior_team_and_index() -> None:
    assert agent_name_prefixes(["Tennis?team=0", "Tennis?team=1"]) == {
        "Tennis?team=0": "Tennis_team0",
        "Tennis?team=1": "Tennis_team1",
    }
    assert agent_name_prefixes(["3DBall?team=0", "Walker?team=1"]) == {
        "3DBall?team=0": "3DBall",
        "Walker?team=1": "Walker",
    }
    game = parallel_env(scene="3DBall", num_agents=3)
    try:
        assert game.possible_agents == ["3DBall_0", "3DBall_1", "3DBall_2"]
        space = game.observation_space("3DBall_1")
        assert space is game.observation_space("3DBall_1")
        assert game.action_space("3DBall_0") is game.action_space("3DBall_2")
        with pytest.raises(KeyError, match="Unknown agent 'nobody'"):
            game.action_space("nobody")
    finally:
        game.close()


def test_soccer_infos_carry_groups_and_agents_are_named_by_team() -> None:
    game = parallel_env(scene="SoccerTwos", seed=2)
    try:
        _, infos = game.reset()
        assert game.agents == [
            "SoccerTwos_team0_0",
            "SoccerTwos_team0_1",
            "SoccerTwos_team1_0",
            "SoccerTwos_team1_1",
        ]
        groups = {name: info["group_id"] for name, info in infos.items()}
        assert groups["SoccerTwos_team0_0"] == groups["SoccerTwos_team0_1"] > 0
        assert groups["SoccerTwos_team1_0"] == groups["SoccerTwos_team1_1"] > 0
        assert groups["SoccerTwos_team0_0"] != groups["SoccerTwos_team1_0"]
        actions = {a: game.action_space(a).sample() for a in game.agents}
        _, rewards, terminations, _, infos = game.step(actions)
        assert all(type(r) is float for r in rewards.values())
        assert all(type(t) is bool for t in terminations.values())
        assert all(type(i["group_reward"]) is float for i in infos.values())
        assert {i["behavior_name"] for i in infos.values()} == {
            "SoccerTwos?team=0",
            "SoccerTwos?team=1",
        }
    finally:
        game.close()


def _stress_parallel(**options: Any) -> UnityParallelEnv:
    extra = {k: options.pop(k) for k in list(options) if k in {"num_agents", "max_cycles"}}
    return UnityParallelEnv(scene="Stress", scene_options=options, **extra)


def test_finished_agents_leave_and_a_joint_restart_is_reused_by_reset() -> None:
    game = _stress_parallel(num_agents=2, episode_length=2)
    try:
        observations, _ = game.reset()
        assert game.agents == ["Stress_0", "Stress_1"]
        pid = game.unity_env.process.pid  # type: ignore[union-attr]
        zeros = {a: np.zeros(2, np.float32) for a in game.agents}
        _, _, terminations, _, _ = game.step(zeros)
        assert not any(terminations.values()) and len(game.agents) == 2
        last, _, terminations, truncations, _ = game.step(zeros)
        assert all(terminations.values()) and not any(truncations.values())
        assert game.agents == []
        # Both agents ended in the same game step and their next decisions came with it:
        # reset() starts from those decisions without resetting the game.
        observations, _ = game.reset()
        assert observations["Stress_0"][EPISODES] == 2
        assert observations["Stress_0"][ACADEMY_STEP] >= last["Stress_0"][ACADEMY_STEP]
        assert game.unity_env.process.pid == pid  # type: ignore[union-attr]
    finally:
        game.close()


def test_max_cycles_truncation_then_reset_resets_the_game() -> None:
    game = _stress_parallel(num_agents=2, max_cycles=3)
    try:
        start, _ = game.reset()
        for cycle in range(3):
            actions = {a: np.full(2, 0.5, np.float32) for a in game.agents}
            observations, _, terminations, truncations, _ = game.step(actions)
            assert not any(terminations.values())
            assert all(truncations.values()) == (cycle == 2)
        assert observations["Stress_1"][LAST_ACTION] == 0.5
        assert game.agents == []
        again, _ = game.reset()
        assert again["Stress_0"][ACADEMY_STEP] == start["Stress_0"][ACADEMY_STEP]
        assert again["Stress_0"][STEP] == start["Stress_0"][STEP]
    finally:
        game.close()


def test_masks_in_infos_fit_space_sampling() -> None:
    game = _stress_parallel(continuous=0, discrete="3,2", action_mask=True, teams=2)
    try:
        observations, infos = game.reset()
        assert game.agents == ["Stress_team0_0", "Stress_team1_0"]
        for _ in range(4):
            for agent in game.agents:
                mask = infos[agent]["action_mask"]
                step = int(observations[agent][STEP])
                assert mask[0][step % 3] == 0 and mask[1][step % 2] == 0
                assert mask[0].dtype == np.int8 and mask[0].sum() == 2
            actions = {
                a: game.action_space(a).sample(mask=infos[a]["action_mask"]) for a in game.agents
            }
            observations, _, _, _, infos = game.step(actions)
    finally:
        game.close()


def test_step_errors_name_the_agents() -> None:
    game = _stress_parallel(num_agents=2)
    try:
        game.reset()
        with pytest.raises(ValueError, match=r"without an action \['Stress_1'\]"):
            game.step({"Stress_0": np.zeros(2, np.float32)})
        with pytest.raises(ValueError, match=r"unknown agents \['ghost'\]"):
            game.step({"Stress_0": np.zeros(2), "Stress_1": np.zeros(2), "ghost": np.zeros(2)})
    finally:
        game.close()


def test_render_modes_and_close_leave_no_process() -> None:
    before = live_child_pids()
    with pytest.raises(ValueError, match="needs a camera observation"):
        parallel_env(scene="Tennis", render_mode="rgb_array")
    camera = UnityParallelEnv(
        scene="Stress",
        num_agents=2,
        scene_options={"visual": "png", "visual_shape": "3x4x5"},
        render_mode="rgb_array",
    )
    frame = None
    try:
        camera.reset()
        frame = camera.render()
    finally:
        camera.close()
    assert frame is not None and frame.shape == (4, 5, 3) and frame.dtype == np.uint8
    aec = env(scene="Tennis")
    unity = aec.unwrapped.unity_env
    assert unity.process is not None
    aec.close()
    assert wait_until_gone(live_child_pids() - before) == set()
    with pytest.raises(UnityEnvironmentException, match="This UnityParallelEnv is closed"):
        _ = aec.unwrapped.unity_env
