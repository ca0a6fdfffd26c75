"""The vector env takes any non-negative int seed, as Gymnasium does (issue 37, big seeds).

Official facts followed: Gymnasium's ``seeding.np_random`` accepts any non-negative Python int
and refuses negative and non-int seeds; the handshake's seed is an int32
(``UnityRLInitializationInputProto.seed``), so game ``i`` gets ``(seed + i) % 2**31``
(``unity_gym.game.settings.game_seed``). Stress agents draw ``stress_value`` (observation 5)
from a sampler seeded with their game's seed, so equal observations mean equal game seeds.
"""

from __future__ import annotations

from collections.abc import Callable

import gymnasium
import numpy as np
import pytest

from unity_gym.vector import UnityVectorEnv

pytestmark = pytest.mark.timeout(180)

SAMPLER = {"sampler_type": "uniform", "min_value": 0.0, "max_value": 1.0}
ZEROS = np.zeros((4, 2), dtype=np.float32)


def _make(make_vector_env: Callable[..., UnityVectorEnv], **kwargs: object) -> UnityVectorEnv:
    return make_vector_env(
        num_envs=4,
        num_processes=2,
        backend="inprocess",
        env_params={"stress_value": SAMPLER},
        **kwargs,
    )


def test_big_seeds_reach_the_games_reduced_modulo_2_31(
    make_vector_env: Callable[..., UnityVectorEnv],
) -> None:
    env = _make(make_vector_env)
    small, _ = env.reset(seed=7)
    env.step(ZEROS)
    big, _ = env.reset(seed=2**40 + 7)  # games 0 and 1 get 7 and 8 again
    np.testing.assert_array_equal(big, small)
    env.step(ZEROS)
    zero, _ = env.reset(seed=0)
    one, _ = env.reset(seed=1)
    assert not np.array_equal(one[:2], zero[:2])  # the seed shows in the observations
    wrapped, _ = env.reset(seed=2**31 - 1)  # game 1 gets (2**31 - 1 + 1) % 2**31 = 0
    np.testing.assert_array_equal(wrapped[2:], zero[:2])
    obs, *_ = env.step(ZEROS)
    assert obs.shape == (4, 8)


def test_a_big_constructor_seed_is_reduced_too(
    make_vector_env: Callable[..., UnityVectorEnv],
) -> None:
    reference, _ = _make(make_vector_env).reset(seed=5)
    first, _ = _make(make_vector_env, seed=2**32 + 5).reset()
    np.testing.assert_array_equal(first, reference)


def test_negative_and_non_int_seeds_are_refused_and_change_nothing(
    make_vector_env: Callable[..., UnityVectorEnv],
) -> None:
    env = _make(make_vector_env)
    env.reset(seed=3)
    pids = env.game_pids
    for seed in (-1, 1.5, "3", True):
        with pytest.raises(ValueError, match="seed must be a non-negative integer"):
            env.reset(seed=seed)  # type: ignore[arg-type]
    with pytest.raises(gymnasium.error.Error):  # also what Gymnasium's own seeding raises
        env.reset(seed=-(2**40))
    assert env.game_pids == pids
    obs, *_ = env.step(ZEROS)  # no reset happened, no step is pending: the env goes on
    np.testing.assert_array_equal(obs[:, 0], 2)
    with pytest.raises(ValueError, match="non-negative"):
        UnityVectorEnv(4, scene="Stress", seed=-3)
    envs = gymnasium.make_vec("Unity-v0", num_envs=2, scene="Basic", seed=2**40)
    try:
        obs, _ = envs.reset(seed=2**33)
        assert obs.shape[0] == 2
    finally:
        envs.close()
