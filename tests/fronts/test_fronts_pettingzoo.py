"""PettingZoo fronts against the multi-agent built-in scenes, through the real bridge."""

from __future__ import annotations

import functools
import logging
import os
import signal
import threading
import time
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fronts_processes import live_child_pids, wait_until_gone
from fronts_scenes import OBS_SIZE_VARIABLE, RESIZABLE_SCENE, SCENE_FOLDER
from pettingzoo.test import (
    api_test,
    max_cycles_test,
    parallel_api_test,
    parallel_seed_test,
    seed_test,
)
from process_utils import python_path_with

from unity_gym.exceptions import UnityEnvironmentException
from unity_gym.pettingzoo import (
    RestartLimitError,
    UnityParallelEnv,
    agent_name_prefixes,
    env,
    parallel_env,
)
from unity_gym.vector import RestartPolicy

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


# -- crashed and hung games -------------------------------------------------------------------

STRESS_PAIR = ["Stress_0", "Stress_1"]
HALF = {agent: np.full(2, 0.5, np.float32) for agent in STRESS_PAIR}


def _game_pid(game: UnityParallelEnv) -> int:
    process = game.unity_env.process
    assert process is not None
    return process.pid


def test_a_crashed_game_is_restarted_and_its_live_agents_truncated(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # crash_after=5: the game exits with code 3 during the 5th step after its reset
    # (hang_after=3 likewise stops answering during the 3rd).
    game = UnityParallelEnv(scene="Stress", num_agents=2, scene_options={"crash_after": 5})
    try:
        start, _ = game.reset()
        old_pid = _game_pid(game)
        for _ in range(4):
            last, rewards, _, truncations, infos = game.step(HALF)
            assert rewards == {"Stress_0": 0.5, "Stress_1": 0.5}
            assert not any(truncations.values())
            assert all("restart_reason" not in info for info in infos.values())
        assert [last[agent][STEP] for agent in STRESS_PAIR] == [5, 5]
        with caplog.at_level(logging.WARNING, logger="unity_gym.pettingzoo"):
            observations, rewards, terminations, truncations, infos = game.step(HALF)
        assert terminations == {"Stress_0": False, "Stress_1": False}
        assert truncations == {"Stress_0": True, "Stress_1": True}
        assert rewards == {"Stress_0": 0.0, "Stress_1": 0.0}  # nothing reported before the crash
        for index, agent in enumerate(STRESS_PAIR):
            np.testing.assert_array_equal(observations[agent], last[agent])  # the pre-crash one
            assert observations[agent][LAST_ACTION] == 0.5
            reason = infos[agent]["restart_reason"]
            assert reason.startswith("game crashed (") and reason.endswith("); restarted")
            assert "return code 3" in reason
            assert infos[agent]["agent_id"] == index
            assert infos[agent]["behavior_name"] == "Stress?team=0"
        assert game.agents == []
        assert game.restart_count == 1
        new_pid = _game_pid(game)
        assert new_pid != old_pid
        assert wait_until_gone({old_pid}) == set()
        warnings = [r for r in caplog.records if r.name == "unity_gym.pettingzoo"]
        assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
        assert "restarting it with the same settings (restart 1, seed 0)" in warnings[0].message
        # reset() starts from the relaunched game (same seed: the same first observations)
        again, infos = game.reset()
        assert _game_pid(game) == new_pid and game.restart_count == 1
        assert game.agents == STRESS_PAIR
        for agent in STRESS_PAIR:
            np.testing.assert_array_equal(again[agent], start[agent])
            assert again[agent][STEP] == 1 and again[agent][ACADEMY_STEP] == 1
            assert "restart_reason" not in infos[agent]
        observations, rewards, _, truncations, _ = game.step(HALF)
        assert [observations[agent][STEP] for agent in STRESS_PAIR] == [2, 2]
        assert rewards == {"Stress_0": 0.5, "Stress_1": 0.5}
        assert not any(truncations.values())
    finally:
        game.close()


def test_a_hung_game_times_out_and_is_restarted() -> None:
    game = UnityParallelEnv(
        scene="Stress", num_agents=2, scene_options={"hang_after": 3}, timeout_wait=2
    )
    try:
        game.reset()
        game.step(HALF)
        last, *_ = game.step(HALF)
        observations, _, terminations, truncations, infos = game.step(HALF)  # hangs: times out
        assert truncations == {"Stress_0": True, "Stress_1": True}
        assert not any(terminations.values())
        for agent in STRESS_PAIR:
            assert infos[agent]["restart_reason"] == (
                "game stopped answering (no message within timeout_wait=2 s); restarted"
            )
            np.testing.assert_array_equal(observations[agent], last[agent])
            assert observations[agent][STEP] == 3
        assert game.restart_count == 1
        first, _ = game.reset()
        assert [first[agent][STEP] for agent in STRESS_PAIR] == [1, 1]
    finally:
        game.close()


def test_closing_while_another_thread_steps_stops_at_once_without_a_restart() -> None:
    # the game hangs in its 2nd step: the stepping thread waits until the env is closed
    before = live_child_pids()
    game = UnityParallelEnv(
        scene="Stress", num_agents=2, scene_options={"hang_after": 2}, timeout_wait=60
    )
    outcome: dict[str, BaseException | None] = {}

    def step() -> None:
        try:
            game.step(HALF)
            outcome["error"] = None
        except BaseException as error:
            outcome["error"] = error

    try:
        game.reset()
        game.step(HALF)
        stepping = threading.Thread(target=step)
        stepping.start()
        time.sleep(0.5)  # the step is waiting for the hung game
        assert stepping.is_alive()
    finally:
        closed_at = time.monotonic()
        game.close()
    stepping.join(timeout=10)
    assert not stepping.is_alive() and time.monotonic() - closed_at < 10  # not timeout_wait
    assert isinstance(outcome["error"], UnityEnvironmentException)
    assert "closed while it waited for its game" in str(outcome["error"])
    assert game.restart_count == 0
    assert wait_until_gone(live_child_pids() - before) == set()  # nothing relaunched


def test_a_game_killed_before_reset_is_restarted_within_the_rate_limit() -> None:
    before = live_child_pids()
    game = UnityParallelEnv(scene="Stress", num_agents=2, restarts_rate_limit_period_s=600)
    try:
        start, _ = game.reset()
        game.step(HALF)
        victim = _game_pid(game)
        os.kill(victim, signal.SIGKILL)
        assert wait_until_gone({victim}) == set()
        observations, infos = game.reset()  # the reset fails: the game is restarted
        assert game.restart_count == 1 and game.agents == STRESS_PAIR
        assert _game_pid(game) != victim
        for agent in STRESS_PAIR:
            np.testing.assert_array_equal(observations[agent], start[agent])
            assert infos[agent]["restart_reason"].startswith("game crashed (")
        game.step(HALF)
        os.kill(_game_pid(game), signal.SIGKILL)
        with pytest.raises(RestartLimitError, match=r"restarts_rate_limit_n=1\)") as refused:
            game.step(HALF)
        assert "already restarted 1 times in the last 600 s" in str(refused.value)
        assert game.restart_count == 1 and game.agents == []
    finally:
        game.close()
    assert wait_until_gone(live_child_pids() - before) == set()


def test_a_game_that_crashes_while_it_starts_is_restarted(tmp_path: Path) -> None:
    before = live_child_pids()
    marker = tmp_path / "crashed-once"
    game = UnityParallelEnv(scene="Stress", num_agents=2, scene_options={"crash_once": str(marker)})
    try:
        assert marker.exists() and game.restart_count == 1
        assert game.possible_agents == STRESS_PAIR
        observations, infos = game.reset()
        assert game.agents == STRESS_PAIR
        assert all("restart_reason" not in info for info in infos.values())
        for agent in STRESS_PAIR:
            assert observations[agent][STEP] == 1
    finally:
        game.close()
    assert wait_until_gone(live_child_pids() - before) == set()


def test_a_new_seed_whose_launch_fails_is_restarted_with_that_seed(tmp_path: Path) -> None:
    marker = tmp_path / "crashed-once"
    marker.touch()  # no crash until the marker is removed
    game = UnityParallelEnv(scene="Stress", num_agents=2, scene_options={"crash_once": str(marker)})
    try:
        first, _ = game.reset(seed=5)
        game.reset(seed=3)
        marker.unlink()
        observations, infos = game.reset(seed=5)  # this launch crashes while it starts
        assert marker.exists() and game.restart_count == 1 and game.settings.seed == 5
        for agent in STRESS_PAIR:
            np.testing.assert_array_equal(observations[agent], first[agent])
            assert infos[agent]["restart_reason"].startswith("game crashed (")
    finally:
        game.close()


def test_the_lifetime_limit_stops_a_crashing_game_and_closes_it() -> None:
    before = live_child_pids()
    game = UnityParallelEnv(
        scene="Stress", num_agents=2, scene_options={"crash_after": 3}, max_lifetime_restarts=0
    )
    steps = 0
    with pytest.raises(RestartLimitError, match=r"max_lifetime_restarts=0\)") as refused:
        game.reset()
        for steps in range(1, 10):  # noqa: B007  (counted for the assertion below)
            game.step(HALF)
    assert steps == 3  # two steps played, the third one crashed the game
    message = str(refused.value)
    assert message.startswith("The game of this UnityParallelEnv crashed (")
    assert "return code 3" in message and "is not restarted" in message
    assert game.restart_count == 0 and game.agents == []
    assert wait_until_gone(live_child_pids() - before) == set()
    with pytest.raises(UnityEnvironmentException, match="This UnityParallelEnv is closed"):
        _ = game.unity_env


@pytest.mark.parametrize(
    ("limits", "named"),
    [
        ({"max_lifetime_restarts": -2}, "max_lifetime_restarts must be an integer >= -1"),
        ({"restarts_rate_limit_n": 1.5}, "restarts_rate_limit_n must be an integer >= -1"),
        ({"restarts_rate_limit_period_s": 0}, "restarts_rate_limit_period_s must be a positive"),
    ],
)
def test_invalid_restart_limits_are_refused_before_any_game_starts(
    limits: dict[str, Any], named: str
) -> None:
    before = live_child_pids()
    with pytest.raises(ValueError, match=named):
        parallel_env(scene="Stress", **limits)
    with pytest.raises(ValueError, match=named):
        env(scene="Stress", **limits)
    assert live_child_pids() == before


def test_restart_limits_reach_both_fronts_and_stay_out_of_the_game_settings() -> None:
    parallel = parallel_env(
        scene="Stress", num_agents=2, max_lifetime_restarts=-1, restarts_rate_limit_n=3
    )
    try:
        assert parallel.restart_policy == RestartPolicy(-1, 3, 60.0)
        assert parallel.restart_count == 0
        assert not hasattr(parallel.settings, "max_lifetime_restarts")
    finally:
        parallel.close()
    aec = env(scene="Stress", num_agents=2, restarts_rate_limit_period_s=5.0)
    try:
        game = aec.unwrapped
        assert isinstance(game, UnityParallelEnv)
        assert game.restart_policy == RestartPolicy(10, 1, 5.0)
    finally:
        aec.close()


def test_a_relaunched_game_with_other_specs_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", python_path_with(SCENE_FOLDER))
    monkeypatch.setenv(OBS_SIZE_VARIABLE, "8")
    before = live_child_pids()
    game = UnityParallelEnv(scene=RESIZABLE_SCENE, num_agents=2)
    try:
        assert game.observation_space("Stress_0").shape == (8,)
        game.reset()
        monkeypatch.setenv(OBS_SIZE_VARIABLE, "5")  # the next launch has another observation
        victim = _game_pid(game)
        os.kill(victim, signal.SIGKILL)
        assert wait_until_gone({victim}) == set()
        with pytest.raises(UnityEnvironmentException) as refused:
            game.step(HALF)
        assert not isinstance(refused.value, RestartLimitError)
        message = str(refused.value)
        assert "does not match the game this UnityParallelEnv started with" in message
        assert "behaviors ['Stress?team=0'] are new, missing or have other specs" in message
        assert game.restart_count == 1 and game.agents == []
        assert game.observation_space("Stress_0").shape == (8,)
    finally:
        game.close()
    assert wait_until_gone(live_child_pids() - before) == set()


def test_a_scene_whose_agents_move_between_behaviors_declares_them_all() -> None:
    """WallJump moves each area's agent between SmallWallJump and BigWallJump (Unity's
    SetModel): possible_agents, spaces and metadata cover both from the start, and episodes
    bring either without error."""
    game = parallel_env(scene="WallJump", num_areas=2, seed=0)
    try:
        expected = ["BigWallJump_0", "BigWallJump_1", "SmallWallJump_0", "SmallWallJump_1"]
        assert game.possible_agents == expected
        assert game.metadata["agent_behaviors"] == {
            name: f"{name.rsplit('_', 1)[0]}?team=0" for name in expected
        }
        for agent in expected:
            assert game.action_space(agent).nvec.tolist() == [3, 3, 3, 2]
        first_episode = []
        played: set[str] = set()
        for episode in range(12):
            _, infos = game.reset()
            if episode == 0:
                first_episode = list(game.agents)
            assert len(game.agents) == 2  # one agent per area decides
            for agent, info in infos.items():
                assert info["behavior_name"] == game.metadata["agent_behaviors"][agent]
            played |= set(game.agents)
            for _ in range(3):
                game.step({a: game.action_space(a).sample() for a in game.agents})
        # the configuration draw (2 of 5 small) brings the other behavior within 12 episodes
        assert {name.rsplit("_", 1)[0] for name in played} == {"BigWallJump", "SmallWallJump"}
        assert set(first_episode) < set(expected)
    finally:
        game.close()


def test_agent_autoreset_restarts_each_agent_in_the_step_its_episode_ends() -> None:
    """``agent_autoreset=True``: Unity's restarted agent keeps its name and stays in ``agents``;
    the step that ends its episode returns the new episode's first observation and the final
    one in ``info["final_observation"]`` (same-step autoreset, per agent); no reset needed."""
    game = UnityParallelEnv(
        scene="Stress", num_agents=2, agent_autoreset=True, scene_options={"episode_length": 2}
    )
    try:
        game.reset()
        pid = game.unity_env.process.pid  # type: ignore[union-attr]
        for cycle in range(3):  # three episodes of two steps, without reset()
            first = {a: np.full(2, 0.25, np.float32) for a in game.agents}
            observations, rewards, terminations, truncations, infos = game.step(first)
            assert not any(terminations.values()) and "final_observation" not in infos["Stress_0"]
            second = {a: np.full(2, 0.5, np.float32) for a in game.agents}
            observations, rewards, terminations, truncations, infos = game.step(second)
            assert game.agents == ["Stress_0", "Stress_1"]
            for slot, agent in enumerate(game.agents):
                assert terminations[agent] and not truncations[agent]
                assert rewards[agent] == 0.5
                final = infos[agent]["final_observation"]
                assert final[[STEP, AGENT_ID, EPISODES, LAST_ACTION]].tolist() == [
                    2, slot, cycle + 1, 0.5
                ]  # fmt: skip
                new = observations[agent]
                assert new[[AGENT_ID, EPISODES, LAST_ACTION]].tolist() == [slot, cycle + 2, 0]
                assert infos[agent]["agent_id"] == infos[agent]["final_info"]["agent_id"] == slot
        assert game.unity_env.process.pid == pid  # type: ignore[union-attr]
    finally:
        game.close()


def test_agent_autoreset_lets_an_agent_that_changed_behavior_join_under_its_new_name() -> None:
    """WallJump moves an area's agent between ``SmallWallJump`` and ``BigWallJump`` (Unity's
    ``SetModel``) when its episode ends: with agent autoreset it leaves under one behavior's
    name and joins under a name of the other at its first decision there (reward 0, not done),
    while an agent that stays with its behavior is restarted in the step its episode ends."""
    game = UnityParallelEnv(scene="WallJump", num_areas=6, seed=3, agent_autoreset=True)
    try:
        game.reset(seed=3)
        behaviors = game.metadata["agent_behaviors"]
        joins = same_step = 0
        for _ in range(600):
            before = list(game.agents)
            actions = {a: game.action_space(a).sample() for a in before}
            observations, rewards, terminations, truncations, infos = game.step(actions)
            assert len(game.agents) <= 6 and set(game.agents) <= set(observations)
            for agent in observations:
                assert infos[agent]["behavior_name"] == behaviors[agent]
                if agent not in before:
                    joins += 1
                    assert rewards[agent] == 0 and not terminations[agent] | truncations[agent]
                    assert "final_observation" not in infos[agent]
                elif agent in game.agents and terminations[agent] | truncations[agent]:
                    same_step += 1
                    final = infos[agent]["final_info"]
                    assert final["behavior_name"] == behaviors[agent]
            if joins >= 2 and same_step >= 1:
                break
        assert joins >= 2 and same_step >= 1, (joins, same_step)
    finally:
        game.close()


def test_the_aec_env_refuses_agent_autoreset() -> None:
    with pytest.raises(ValueError, match="parallel_env"):
        env(scene="Tennis", agent_autoreset=True)
