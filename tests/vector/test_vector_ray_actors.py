"""Ray backend: a lost actor is replaced and its game's slots continue as after a game restart.

The actor is killed for real (``ray.kill``), as a node failure would take it; the expected
per-step values are those of ``test_crashed_games_restart_and_truncate`` (the Stress scene's
first observation entry counts the steps since its game's reset).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from process_utils import kill_ray_actor

from unity_gym.vector import RestartLimitError, UnityVectorEnv
from unity_gym.vector.backends.ray_pool import RayPlacementError

pytestmark = pytest.mark.timeout(180)

ZEROS = np.zeros((4, 2), dtype=np.float32)


def _kill_actor(env: UnityVectorEnv, ray: Any, worker: int) -> None:
    """Kill the Ray actor of ``worker`` (no restart by Ray: the backend must replace it)."""
    kill_ray_actor(env._backend._actors[worker])  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_a_lost_actor_is_replaced_and_its_slots_truncated(
    ray_instance: Any,
    mode: AutoresetMode,
    make_vector_env: Callable[..., UnityVectorEnv],
    caplog: pytest.LogCaptureFixture,
) -> None:
    env = make_vector_env(
        num_envs=4, num_processes=2, backend="ray", autoreset_mode=mode, restarts_rate_limit_n=-1
    )
    env.reset()
    for _ in range(4):
        env.step(ZEROS)
    assert all(where.startswith("Ray node ") for where in env.game_locations)
    _kill_actor(env, ray_instance, 1)
    with caplog.at_level(logging.WARNING, logger="unity_gym.vector"):
        obs, _, terminated, truncated, info = env.step(ZEROS)
    assert truncated.tolist() == [False, False, True, True]
    assert not terminated.any()
    assert info["_restart_reason"].tolist() == [False, False, True, True]
    assert "game process 1 lost its Ray actor on Ray node" in info["restart_reason"][2]
    assert env.restart_counts == [0, 1]
    assert any("starting it again" in r.message for r in caplog.records)
    np.testing.assert_array_equal(obs[:2, 0], 6)  # game 0 simply went on
    if mode is AutoresetMode.NEXT_STEP:
        np.testing.assert_array_equal(obs[2:, 0], 5)  # the last observation the env saw
        obs, *_ = env.step(ZEROS)
        np.testing.assert_array_equal(obs[2:, 0], 2)  # new game, after one zero action
    else:
        np.testing.assert_array_equal(obs[2:, 0], 1)  # the new game's first observation
        assert info["_final_obs"].tolist() == [False, False, True, True]
        np.testing.assert_array_equal(np.stack(list(info["final_obs"][2:]))[:, 0], 5)
        obs, *_ = env.step(ZEROS)
        np.testing.assert_array_equal(obs[2:, 0], 2)
    np.testing.assert_array_equal(obs[:2, 0], 7)
    assert all(where.startswith("Ray node ") for where in env.game_locations)


def test_a_lost_actor_during_reset_gives_the_new_games_first_observations(
    ray_instance: Any, make_vector_env: Callable[..., UnityVectorEnv]
) -> None:
    env = make_vector_env(num_envs=4, num_processes=2, backend="ray")
    env.reset()
    env.step(ZEROS)
    _kill_actor(env, ray_instance, 0)
    obs, info = env.reset()
    np.testing.assert_array_equal(obs[:, 0], 1)
    assert info["_restart_reason"].tolist() == [True, True, False, False]
    obs, *_ = env.step(ZEROS)
    np.testing.assert_array_equal(obs[:, 0], 2)


def test_lost_actors_count_against_the_restart_limits(
    ray_instance: Any, make_vector_env: Callable[..., UnityVectorEnv]
) -> None:
    env = make_vector_env(num_envs=4, num_processes=2, backend="ray", max_lifetime_restarts=0)
    env.reset()
    _kill_actor(env, ray_instance, 1)
    with pytest.raises(RestartLimitError, match="max_lifetime_restarts=0"):
        env.step(ZEROS)


def test_an_actor_no_node_can_host_is_a_clear_error(
    ray_instance: Any, make_vector_env: Callable[..., UnityVectorEnv]
) -> None:
    with pytest.raises(RayPlacementError, match=r"asks for \{'num_cpus': 64\}.*--ray-game-cpus"):
        make_vector_env(
            num_envs=2,
            num_processes=1,
            backend="ray",
            timeout_wait=3,
            ray_actor_options={"num_cpus": 64},
        )
