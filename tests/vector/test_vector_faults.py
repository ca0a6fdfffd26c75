"""Crashed and hung games are restarted within limits; worker timers reach the main tree."""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gymnasium.error import NoAsyncCallError
from gymnasium.vector import AutoresetMode
from vector_helpers import eventually, pid_alive

from unity_gym.exceptions import UnityEnvironmentException
from unity_gym.timers import get_timer_tree, reset_timers
from unity_gym.vector import RestartLimitError, UnityVectorEnv

pytestmark = pytest.mark.timeout(180)

ZEROS = np.zeros((4, 2), dtype=np.float32)
UNLIMITED_RATE = {"restarts_rate_limit_n": -1}


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_crashed_games_restart_and_truncate(
    backend: str,
    mode: AutoresetMode,
    make_vector_env: Callable[..., UnityVectorEnv],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # crash_after=5: each game exits with code 3 during the 5th step after its reset.
    env = make_vector_env(
        num_envs=4,
        num_processes=2,
        backend=backend,
        autoreset_mode=mode,
        scene_options={"crash_after": 5},
        **UNLIMITED_RATE,
    )
    env.reset()
    for _ in range(4):
        _, _, _, truncated, info = env.step(ZEROS)
        assert not truncated.any() and "restart_reason" not in info
    old_pids = env.game_pids
    with caplog.at_level(logging.WARNING, logger="unity_gym.vector"):
        obs, _, terminated, truncated, info = env.step(ZEROS)
    assert truncated.all() and not terminated.any()
    assert info["_restart_reason"].all()
    for reason in info["restart_reason"]:
        assert "crashed" in reason and "return code 3" in reason
    assert env.restart_counts == [1, 1]
    assert all(p not in old_pids for p in env.game_pids)
    assert sum("restarting it with the same settings" in r.message for r in caplog.records) == 2
    if mode is AutoresetMode.NEXT_STEP:
        np.testing.assert_array_equal(obs[:, 0], 5)  # the last observation before the crash
        obs, *_ = env.step(ZEROS)
        np.testing.assert_array_equal(obs[:, 0], 2)  # restarted game, after one zero action
    else:
        np.testing.assert_array_equal(obs[:, 0], 1)  # the restarted game's first observation
        np.testing.assert_array_equal(np.stack(list(info["final_obs"]))[:, 0], 5)
        obs, *_ = env.step(ZEROS)
        np.testing.assert_array_equal(obs[:, 0], 2)


def test_a_killed_game_does_not_disturb_the_others(
    make_vector_env: Callable[..., UnityVectorEnv],
) -> None:
    env = make_vector_env(num_envs=4, num_processes=2, backend="subprocess")
    env.reset()
    env.step(ZEROS)
    victim = env.game_pids[1]
    assert victim is not None
    os.kill(victim, signal.SIGKILL)
    assert eventually(lambda: not pid_alive(victim))
    obs, _, _, truncated, info = env.step(ZEROS)
    assert truncated.tolist() == [False, False, True, True]
    assert info["_restart_reason"].tolist() == [False, False, True, True]
    assert "game process 1 crashed" in info["restart_reason"][2]
    np.testing.assert_array_equal(obs[:2, 0], 3)  # game 0 simply went on
    assert env.restart_counts == [0, 1]
    obs, _, _, truncated, _ = env.step(ZEROS)
    assert not truncated.any()
    np.testing.assert_array_equal(obs[:, 0], [4, 4, 2, 2])


def test_hung_game_times_out_and_restarts(make_vector_env: Callable[..., UnityVectorEnv]) -> None:
    env = make_vector_env(
        num_envs=4,
        num_processes=1,
        backend="subprocess",
        autoreset_mode=AutoresetMode.SAME_STEP,
        scene_options={"hang_after": 3},
        timeout_wait=3,
    )
    env.reset()
    env.step(ZEROS)
    env.step(ZEROS)
    obs, _, _, truncated, info = env.step(ZEROS)  # the game hangs during this third step
    assert truncated.all()
    assert "stopped answering" in info["restart_reason"][0]
    assert "timeout_wait=3 s" in info["restart_reason"][0]
    np.testing.assert_array_equal(obs[:, 0], 1)
    np.testing.assert_array_equal(np.stack(list(info["final_obs"]))[:, 0], 3)


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ({"max_lifetime_restarts": 1, "restarts_rate_limit_n": -1}, "max_lifetime_restarts=1"),
        ({"restarts_rate_limit_n": 1, "restarts_rate_limit_period_s": 600}, "rate_limit_n=1"),
    ],
)
def test_restart_limits_stop_a_failing_game(
    limits: dict[str, Any], message: str, make_vector_env: Callable[..., UnityVectorEnv]
) -> None:
    env = make_vector_env(
        num_envs=4, backend="inprocess", scene_options={"crash_after": 3}, **limits
    )
    env.reset()
    truncations = 0
    with pytest.raises(RestartLimitError, match=message):
        for _ in range(20):
            _, _, _, truncated, _ = env.step(ZEROS)
            truncations += int(truncated.all())
    assert truncations == 1  # the first crash was restarted, the second one refused


@pytest.mark.parametrize("backend_name", ["inprocess", "subprocess"])
def test_worker_timers_are_merged_into_the_main_tree(
    backend_name: str, make_vector_env: Callable[..., UnityVectorEnv]
) -> None:
    env = make_vector_env(num_envs=8, num_processes=2, backend=backend_name, timer_interval_s=0.0)
    env.reset()
    reset_timers()
    for _ in range(3):
        env.step(np.zeros((8, 2), dtype=np.float32))
    tree = get_timer_tree()
    workers = tree["children"]["UnityVectorEnv.step_wait"]["children"]["vector_workers"]
    assert workers["is_parallel"] is True
    step = workers["children"]["worker_step"]
    assert step["count"] == 3 * 2
    assert "UnityEnvironment.step" in step["children"]


@pytest.mark.parametrize("backend_name", ["inprocess", "subprocess"])
def test_a_game_that_crashes_while_it_starts_is_restarted(
    backend_name: str,
    make_vector_env: Callable[..., UnityVectorEnv],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # crash_once: of the two games, the first to start exits with code 3 while it starts.
    marker = tmp_path / "crashed-once"
    with caplog.at_level(logging.WARNING, logger="unity_gym.vector"):
        env = make_vector_env(
            num_envs=4,
            num_processes=2,
            backend=backend_name,
            scene_options={"crash_once": str(marker)},
        )
    assert marker.exists()
    assert sorted(env.restart_counts) == [0, 1]
    warnings = [r.message for r in caplog.records if "restarting it with the same" in r.message]
    assert len(warnings) == 1 and "crashed" in warnings[0] and "return code 3" in warnings[0]
    obs, _ = env.reset()
    np.testing.assert_array_equal(obs[:, 0], 1)  # every slot starts its first episode
    obs, _, _, truncated, _ = env.step(ZEROS)
    assert not truncated.any()
    np.testing.assert_array_equal(obs[:, 0], 2)


def test_a_game_that_cannot_be_launched_is_not_restarted(
    make_vector_env: Callable[..., UnityVectorEnv], tmp_path: Path
) -> None:
    with pytest.raises(UnityEnvironmentException, match="no executable found") as raised:
        make_vector_env(num_envs=2, file_name=str(tmp_path / "missing-build"), scene=None)
    assert not isinstance(raised.value, RestartLimitError)


def test_a_new_seed_whose_launch_fails_is_restarted_with_that_seed(
    make_vector_env: Callable[..., UnityVectorEnv], tmp_path: Path
) -> None:
    marker = tmp_path / "crashed-once"
    marker.touch()  # no crash until the marker is removed
    env = make_vector_env(
        num_envs=4, backend="inprocess", scene_options={"crash_once": str(marker)}
    )
    first, _ = env.reset(seed=5)
    env.reset(seed=3)
    marker.unlink()
    obs, info = env.reset(seed=5)  # this launch crashes while it starts
    assert marker.exists() and env.restart_counts == [1]
    np.testing.assert_array_equal(obs, first)
    assert info["_restart_reason"].all()
    assert "crashed" in info["restart_reason"][0]


@pytest.mark.parametrize("backend_name", ["inprocess", "subprocess"])
def test_a_failed_step_leaves_no_step_pending(
    backend_name: str, make_vector_env: Callable[..., UnityVectorEnv]
) -> None:
    # Gymnasium's AsyncVectorEnv receives every worker's answer before it raises a worker's
    # error; here too the other game's step is drained, so the env is not left wedged.
    env = make_vector_env(
        num_envs=4, num_processes=2, backend=backend_name, max_lifetime_restarts=0
    )
    env.reset()
    env.step(ZEROS)
    victim = env.game_pids[1]
    assert victim is not None
    os.kill(victim, signal.SIGKILL)
    assert eventually(lambda: not pid_alive(victim))
    with pytest.raises(RestartLimitError, match="Game process 1 crashed") as caught:
        env.step(ZEROS)
    assert any("Game processes [0] finished this step" in note for note in caught.value.__notes__)
    with pytest.raises(NoAsyncCallError):
        env.step_wait()  # nothing is pending
    with pytest.raises(UnityEnvironmentException, match="Game process 1 failed earlier"):
        env.step(ZEROS)  # the game's failure again, not AlreadyPendingCallError
    with pytest.raises(UnityEnvironmentException, match="Game process 1 failed earlier"):
        env.reset()
