"""Fronts after ``close()`` and with big seeds (issue 37, items 5 and 6), on real players.

Official facts followed: Gymnasium's ``ClosedEnvironmentError`` is its error for using a closed
env; the handshake's seed is int32 (``UnityRLInitializationInputProto.seed``) while Gymnasium
seeds are any non-negative int.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import unity_gym  # noqa: F401  (registers Unity-v0)
from unity_gym.exceptions import UnityEnvironmentException
from unity_gym.pettingzoo import env as aec_env
from unity_gym.pettingzoo import parallel_env


def test_gym_env_refuses_step_and_reset_after_close() -> None:
    env = gymnasium.make("Unity-v0", scene="Basic")
    env.reset()
    env.close()
    with pytest.raises(gymnasium.error.ClosedEnvironmentError, match="closed"):
        env.step(env.action_space.sample())
    with pytest.raises(gymnasium.error.ClosedEnvironmentError, match="closed"):
        env.reset()  # does not silently start a new game
    with pytest.raises(UnityEnvironmentException, match="closed"):
        _ = env.unwrapped.unity_env  # no game runs


def test_pettingzoo_envs_refuse_step_and_reset_after_close() -> None:
    parallel = parallel_env(scene="Basic")
    parallel.reset()
    actions = {agent: parallel.action_space(agent).sample() for agent in parallel.agents}
    parallel.close()
    with pytest.raises(gymnasium.error.ClosedEnvironmentError):
        parallel.step(actions)
    with pytest.raises(gymnasium.error.ClosedEnvironmentError):
        parallel.reset()
    aec = aec_env(scene="Basic")
    aec.reset()
    agent = aec.agent_selection
    action = aec.action_space(agent).sample()
    aec.close()
    with pytest.raises(gymnasium.error.ClosedEnvironmentError):
        aec.step(action)
    with pytest.raises(gymnasium.error.ClosedEnvironmentError):
        aec.reset()


def test_vector_env_refuses_reset_after_close() -> None:
    envs = gymnasium.make_vec("Unity-v0", num_envs=2, scene="Basic")
    envs.reset()
    envs.close()
    with pytest.raises(Exception, match=r"(?i)closed"):
        envs.reset()


@pytest.mark.parametrize("seed", [2**40, 2**32 + 2])
def test_gym_reset_with_a_seed_beyond_int32_works(seed: int) -> None:
    env = gymnasium.make("Unity-v0", scene="Basic")
    try:
        first, _ = env.reset(seed=seed)
        env.step(env.action_space.sample())
        again, _ = env.reset(seed=seed)  # equal seeds, equal episodes
        np.testing.assert_array_equal(first, again)
        env.step(env.action_space.sample())  # the env is open and usable
        assert env.unwrapped.settings.seed == seed % 2**31
    finally:
        env.close()
