"""UnityVectorEnv on the deterministic Stress scene: exact per-step values, spaces, seeding.

Stress observation ``o`` of an agent (see ``unity_gym/player/scenes/stress.py``): ``o[0]`` agent
step count in its episode, ``o[1]`` agent id, ``o[2]`` Academy step since reset, ``o[3]``
episodes begun, ``o[4]`` last executed action (first component), ``o[6]`` slot in its game. Every
executed action adds its first component to the reward; ``episode_length=3`` ends an episode
after the agent's third action, ``max_step=3`` interrupts it there.
"""

from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from unity_gym.exceptions import UnityActionException
from unity_gym.vector import UnityVectorEnv

pytestmark = pytest.mark.timeout(120)

NUM_ENVS = 4  # 2 game processes x 2 agents

# (agent step, Academy step, episode, last action is this step's action?) after each step.
NEXT_STEP_TABLE = {
    1: (2, 2, 1, True),
    2: (3, 3, 1, True),
    3: (3, 3, 1, True),  # final observation of the episode
    4: (2, 5, 2, False),  # action ignored: the new episode's agent acted with zeros
    5: (3, 6, 2, True),
    6: (3, 6, 2, True),
    7: (2, 8, 3, False),
}
SAME_STEP_TABLE = {
    1: (2, 2, 1, True),
    2: (3, 3, 1, True),
    3: (1, 4, 2, False),  # first observation of the next episode
    4: (2, 5, 2, True),
    5: (3, 6, 2, True),
    6: (1, 7, 3, False),
    7: (2, 8, 3, True),
}


def actions_for(step: int) -> np.ndarray:
    """Distinct actions per slot and step: ``step / 10 + slot / 100``."""
    first = np.array([step / 10 + slot / 100 for slot in range(NUM_ENVS)], dtype=np.float32)
    return np.stack([first, np.zeros(NUM_ENVS, dtype=np.float32)], axis=1)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_exact_values_per_step(
    backend: str, mode: AutoresetMode, make_vector_env: Callable[..., UnityVectorEnv]
) -> None:
    env = make_vector_env(
        num_envs=NUM_ENVS,
        num_processes=2,
        backend=backend,
        autoreset_mode=mode,
        scene_options={"episode_length": 3},
    )
    assert env.metadata["autoreset_mode"] is mode
    assert env.observation_space == spaces.Box(-np.inf, np.inf, (NUM_ENVS, 8), np.float32)
    assert env.action_space == spaces.Box(-1, 1, (NUM_ENVS, 2), np.float32)
    obs, info = env.reset()
    agents = np.array([0, 1, 0, 1])
    np.testing.assert_array_equal(obs[:, :7], [[1, a, 1, 1, 0, 0, a] for a in agents])
    np.testing.assert_array_equal(info["agent_id"], agents)
    assert info["_agent_id"].all()
    table = NEXT_STEP_TABLE if mode is AutoresetMode.NEXT_STEP else SAME_STEP_TABLE
    for step in range(1, 8):
        acts = actions_for(step)
        obs, rewards, terminated, truncated, info = env.step(acts)
        agent_step, academy, episode, acted = table[step]
        last = acts[:, 0] if acted else np.zeros(NUM_ENVS, dtype=np.float32)
        expected = np.stack(
            [
                np.full(NUM_ENVS, agent_step),
                agents,
                np.full(NUM_ENVS, academy),
                np.full(NUM_ENVS, episode),
                last,
                np.zeros(NUM_ENVS),
                agents,
            ],
            axis=1,
        ).astype(np.float32)
        np.testing.assert_array_equal(obs[:, :7], expected, err_msg=f"step {step}")
        ends = step % 3 == 0
        reset_step = mode is AutoresetMode.NEXT_STEP and step % 3 == 1 and step > 1
        np.testing.assert_allclose(rewards, 0.0 if reset_step else acts[:, 0], rtol=1e-6)
        assert terminated.tolist() == [ends] * NUM_ENVS, f"step {step}"
        assert not truncated.any()
        if mode is AutoresetMode.SAME_STEP and ends:
            assert info["_final_obs"].all()
            finals = np.stack(list(info["final_obs"]))
            np.testing.assert_array_equal(finals[:, 0], 3)
            np.testing.assert_allclose(finals[:, 4], acts[:, 0])
            np.testing.assert_array_equal(info["final_info"]["agent_id"], agents)
        else:
            assert "final_obs" not in info


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_max_step_interruption_is_truncation(
    mode: AutoresetMode, make_vector_env: Callable[..., UnityVectorEnv]
) -> None:
    env = make_vector_env(
        num_envs=2,
        num_processes=1,
        backend="inprocess",
        autoreset_mode=mode,
        scene_options={"max_step": 3},
    )
    env.reset()
    for step in range(1, 5):
        _, _, terminated, truncated, _ = env.step(np.zeros((2, 2), dtype=np.float32))
        assert truncated.tolist() == [step == 3] * 2
        assert not terminated.any()


def test_make_vec_uses_the_vector_entry_point(
    make_vector_env: Callable[..., UnityVectorEnv],
) -> None:
    env = gym.make_vec("Unity-Stress-v0", num_envs=8, backend="inprocess", timeout_wait=30)
    try:
        assert isinstance(env, UnityVectorEnv)
        assert (env.num_envs, env.num_processes, env.agents_per_process) == (8, 2, 4)
        assert env.spec is not None and env.spec.id == "Unity-Stress-v0"
        obs, _ = env.reset()
        assert obs.shape == (8, 8)
        np.testing.assert_array_equal(obs[:, 6], [0, 1, 2, 3, 0, 1, 2, 3])
    finally:
        env.close()
    with pytest.raises(ValueError, match=r"num_envs=8 \(2 processes\) or num_envs=12"):
        gym.make_vec("Unity-Stress-v0", num_envs=10)
    with pytest.raises(ValueError, match="Unknown keyword"):
        gym.make_vec("Unity-Stress-v0", num_envs=4, no_such_option=1)


def test_dict_observations_visual_and_action_masks(
    make_vector_env: Callable[..., UnityVectorEnv],
) -> None:
    env = make_vector_env(
        num_envs=2,
        num_processes=1,
        backend="subprocess",
        autoreset_mode=AutoresetMode.SAME_STEP,
        scene_options={
            "visual": "float",
            "visual_shape": "2x3x4",
            "continuous": 0,
            "discrete": "3",
            "action_mask": True,
            "episode_length": 2,
        },
    )
    assert isinstance(env.single_observation_space, spaces.Dict)
    assert env.single_observation_space["StressCamera"] == spaces.Box(0, 255, (3, 4, 2), np.uint8)
    assert env.action_space == spaces.MultiDiscrete([3, 3])
    obs, info = env.reset()
    for _ in range(3):
        vector, image = obs["VectorSensor_size8"], obs["StressCamera"]
        agent_step = vector[:, 0].astype(int)
        for slot in range(2):
            channel, row, column = 1, 2, 3
            value = (7 * slot + 31 * channel + 3 * row + column + agent_step[slot]) % 256
            assert image[slot, row, column, channel] == value
            mask = info["action_mask"][slot]
            assert mask.tolist() == [i != agent_step[slot] % 3 for i in range(3)]
        obs, _, terminated, _, info = env.step(np.array([2, 1]))
        if terminated.any():
            final = info["final_obs"][0]
            assert set(final) == {"VectorSensor_size8", "StressCamera"}
            assert final["VectorSensor_size8"][0] == 2


def test_seeded_reset_relaunches_games_deterministically(
    make_vector_env: Callable[..., UnityVectorEnv],
) -> None:
    sampler = {"sampler_type": "uniform", "min_value": 0.0, "max_value": 1.0}
    env = make_vector_env(
        num_envs=4, num_processes=2, backend="inprocess", env_params={"stress_value": sampler}
    )
    first, _ = env.reset()
    pids = env.game_pids
    assert len(set(first[:, 5].tolist())) == 4  # each agent draws its own stress_value
    env.reset()
    assert env.game_pids == pids  # an untouched game is not reset again
    seeded, _ = env.reset(seed=11)
    assert env.game_pids != pids
    assert not np.array_equal(seeded[:, 5], first[:, 5])
    env.step(np.zeros((4, 2), dtype=np.float32))
    again, _ = env.reset(seed=11)
    np.testing.assert_array_equal(again, seeded)
    env.step(np.zeros((4, 2), dtype=np.float32))
    unseeded, _ = env.reset()  # Unity's RESET: counters start over in the same games
    np.testing.assert_array_equal(unseeded[:, 0], 1)
    np.testing.assert_array_equal(unseeded[:, 2], 1)


def test_bad_arguments_have_clear_errors(make_vector_env: Callable[..., UnityVectorEnv]) -> None:
    with pytest.raises(ValueError, match="DISABLED is not supported"):
        UnityVectorEnv(4, scene="Stress", autoreset_mode=AutoresetMode.DISABLED)
    with pytest.raises(ValueError, match="max_episode_steps is not supported"):
        UnityVectorEnv(4, scene="Stress", max_episode_steps=10)
    with pytest.raises(ValueError, match="backend='threads' is not one of"):
        UnityVectorEnv(4, scene="Stress", backend="threads")
    with pytest.raises(ValueError, match="batch_size=3 must be a multiple of the 4 agents"):
        make_vector_env(num_envs=8, backend="inprocess", batch_size=3)
    env = make_vector_env(num_envs=4, backend="inprocess")
    env.reset()
    with pytest.raises(UnityActionException, match="shape"):
        env.step(np.zeros((3, 2), dtype=np.float32))
    with pytest.raises(ValueError, match="no options"):
        env.reset(options={"x": 1})
