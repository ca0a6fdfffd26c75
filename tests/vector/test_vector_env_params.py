"""Changing environment parameters of running games: UnityVectorEnv and UnityParallelEnv.

The Stress scene observes ``o[5]`` = its ``stress_value`` parameter, read at each episode begin.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from unity_gym.pettingzoo import UnityParallelEnv
from unity_gym.vector import UnityVectorEnv

ZEROS = np.zeros((4, 2), dtype=np.float32)


@pytest.mark.parametrize("backend", ["inprocess", "subprocess"])
def test_new_parameters_reach_running_games_at_their_next_episode(
    backend: str, make_vector_env: Callable[..., UnityVectorEnv]
) -> None:
    env = make_vector_env(
        num_envs=4,
        num_processes=2,
        backend=backend,
        scene_options={"episode_length": 3},
        env_params={"stress_value": 1.0},
    )
    obs, _ = env.reset()
    np.testing.assert_array_equal(obs[:, 5], 1.0)
    env.set_env_params({"stress_value": 2.5})
    assert env.env_params_overrides == {"stress_value": 2.5}
    seen = []
    for _ in range(4):  # episodes end at step 3; next-step autoreset begins new ones at step 4
        obs, *_ = env.step(ZEROS)
        seen.append(obs[:, 5].copy())
    np.testing.assert_array_equal(seen[0], 1.0)  # the running episode keeps its value
    np.testing.assert_array_equal(seen[2], 1.0)  # last observation of that episode
    np.testing.assert_array_equal(seen[3], 2.5)  # the new episode read the new value


def test_a_restarted_game_starts_with_the_current_parameters(
    make_vector_env: Callable[..., UnityVectorEnv],
) -> None:
    # crash_after=3: each game exits during the 3rd step after its launch, then is restarted.
    env = make_vector_env(
        num_envs=4,
        num_processes=2,
        backend="inprocess",
        scene_options={"crash_after": 3},
        env_params={"stress_value": 1.0},
        restarts_rate_limit_n=-1,
    )
    env.reset()
    env.set_env_params({"stress_value": 7.0})
    env.step(ZEROS)
    env.step(ZEROS)
    _, _, _, truncated, _ = env.step(ZEROS)  # the crash
    assert truncated.all() and env.restart_counts == [1, 1]
    obs, *_ = env.step(ZEROS)  # the relaunched games' episode, begun at their launch
    np.testing.assert_array_equal(obs[:, 5], 7.0)


def test_invalid_parameters_are_refused_and_change_nothing(
    make_vector_env: Callable[..., UnityVectorEnv],
) -> None:
    env = make_vector_env(num_envs=4, backend="inprocess")
    env.set_env_params({"stress_value": 3.0})
    with pytest.raises(ValueError, match="stress_value"):
        env.set_env_params({"stress_value": float("nan")})
    with pytest.raises(ValueError, match="sampler_type"):
        env.set_env_params({"other": {"sampler_type": "zigzag"}})
    assert env.env_params_overrides == {"stress_value": 3.0}


def test_pettingzoo_env_takes_new_parameters_at_its_next_episode() -> None:
    game = UnityParallelEnv(
        scene="Stress",
        scene_options={"teams": 2, "episode_length": 2},
        env_params={"stress_value": 1.0},
    )
    try:
        observations, _ = game.reset()
        assert [float(o[5]) for o in observations.values()] == [1.0, 1.0]
        game.set_env_params({"stress_value": -4.0})
        assert game.settings.env_params == {"stress_value": -4.0}
        zeros = {agent: np.zeros(2, np.float32) for agent in game.agents}
        game.step(zeros)
        _, _, terminations, _, _ = game.step(zeros)  # episode_length 2: every agent is done
        assert all(terminations.values()) and game.agents == []
        observations, _ = game.reset()
        assert [float(o[5]) for o in observations.values()] == [-4.0, -4.0]
        with pytest.raises(ValueError, match="stress_value"):
            game.set_env_params({"stress_value": "high"})
    finally:
        game.close()
