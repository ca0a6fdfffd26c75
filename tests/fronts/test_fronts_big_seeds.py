"""PettingZoo envs and the single-agent env take any non-negative int seed (issue 37).

Official facts followed: Gymnasium's ``seeding.np_random`` (which PettingZoo's seed tests
follow) accepts any non-negative Python int and refuses negative and non-int seeds; the
handshake's seed is an int32 (``UnityRLInitializationInputProto.seed``), so every front starts
its game with ``seed % 2**31`` (``unity_gym.game.settings.game_seed``). Stress agents draw
``stress_value`` (observation 5) from a sampler seeded with the game's seed. Real players.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import pytest

import unity_gym  # noqa: F401  (registers Unity-v0)
from unity_gym.game.settings import SeedError, game_seed
from unity_gym.pettingzoo import env as aec_env
from unity_gym.pettingzoo import parallel_env

pytestmark = pytest.mark.timeout(180)

SAMPLER = {"sampler_type": "uniform", "min_value": 0.0, "max_value": 1.0}
BAD_SEEDS = (-1, -(2**40), 2.0, "3", True)


def _zero_actions(game: Any) -> dict[str, Any]:
    return {agent: np.zeros(game.action_space(agent).shape, np.float32) for agent in game.agents}


def test_the_seed_rule() -> None:
    assert game_seed(2**40 + 7) == 7
    assert game_seed(2**31 - 1, 1) == 0
    assert game_seed(np.int64(2**33)) == 0
    for seed in BAD_SEEDS:
        with pytest.raises(SeedError, match="seed must be a non-negative integer"):
            game_seed(seed)


def test_parallel_env_takes_big_seeds_and_refuses_bad_ones() -> None:
    game = parallel_env(scene="Stress", num_agents=2, env_params={"stress_value": SAMPLER})
    try:
        big, _ = game.reset(seed=2**40 + 7)
        assert game.settings.seed == 7
        game.step(_zero_actions(game))
        small, _ = game.reset(seed=7)  # relaunched with the same game seed: same episode
        assert big.keys() == small.keys()
        for agent in big:
            np.testing.assert_array_equal(big[agent], small[agent])
        pid = game.unity_env.process.pid
        for seed in BAD_SEEDS:
            with pytest.raises(ValueError, match="non-negative integer"):
                game.reset(seed=seed)  # type: ignore[arg-type]
        assert game.unity_env.process.pid == pid  # nothing was relaunched
        _, rewards, *_ = game.step(_zero_actions(game))  # the episode goes on
        assert set(rewards) == set(big)
    finally:
        game.close()


def test_aec_env_takes_big_seeds_and_refuses_bad_ones() -> None:
    game = aec_env(scene="Basic")
    try:
        game.reset(seed=2**40)
        assert game.unwrapped.settings.seed == 2**40 % 2**31
        game.step(game.action_space(game.agent_selection).sample())
        with pytest.raises(ValueError, match="non-negative integer"):
            game.reset(seed=-5)
        game.reset(seed=2**32 + 2)
        assert game.unwrapped.settings.seed == 2
    finally:
        game.close()


def test_gym_env_refuses_bad_seeds_with_a_value_error() -> None:
    env = gymnasium.make("Unity-v0", scene="Basic", seed=2**40 + 1)
    try:
        assert env.unwrapped.settings.seed == 1
        env.reset()
        for seed in BAD_SEEDS:
            with pytest.raises(ValueError, match="non-negative integer"):
                env.reset(seed=seed)
        with pytest.raises(gymnasium.error.Error):  # what Gymnasium's own seeding raises
            env.reset(seed=-1)
        env.reset(seed=3)
        env.step(env.action_space.sample())
    finally:
        env.close()
