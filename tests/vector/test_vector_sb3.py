"""unity_gym.sb3.UnityVecEnv: SB3's VecEnv contract over every agent of every game."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

pytest.importorskip("stable_baselines3", reason="stable-baselines3 is not installed")

from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import VecMonitor

from unity_gym.sb3 import AgentSlot, UnityVecEnv
from unity_gym.vector import UnityVectorEnv

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def vec_env() -> Iterator[UnityVecEnv]:
    env = UnityVecEnv(
        num_envs=4,
        num_processes=2,
        backend="inprocess",
        scene="Stress",
        scene_options={"episode_length": 3},
        timeout_wait=30,
    )
    yield env
    env.close()


def test_reset_and_steps_follow_sb3_conventions(vec_env: UnityVecEnv) -> None:
    obs = vec_env.reset()
    assert isinstance(obs, np.ndarray) and obs.shape == (4, 8)
    assert [info["agent_id"] for info in vec_env.reset_infos] == [0, 1, 0, 1]
    actions = np.full((4, 2), 0.5, dtype=np.float32)
    for step in range(1, 4):
        obs, rewards, dones, infos = vec_env.step(actions)
        assert isinstance(obs, np.ndarray)
        assert rewards.dtype == np.float32 and rewards.tolist() == [0.5] * 4
        assert len(infos) == 4 and all(isinstance(info, dict) for info in infos)
        assert dones.tolist() == [step == 3] * 4
    # The episode ended: the observation is the next episode's first, the final one is in info.
    np.testing.assert_array_equal(obs[:, 0], 1)
    for info in infos:
        assert info["TimeLimit.truncated"] is False
        assert info["terminal_observation"][0] == 3
        assert info["terminal_observation"][4] == 0.5


def test_truncation_sets_time_limit_flag() -> None:
    env = UnityVecEnv(
        num_envs=2,
        num_processes=1,
        backend="inprocess",
        scene="Stress",
        scene_options={"max_step": 2},
        timeout_wait=30,
    )
    try:
        env.reset()
        env.step(np.zeros((2, 2), dtype=np.float32))
        _, _, dones, infos = env.step(np.zeros((2, 2), dtype=np.float32))
        assert dones.all()
        assert all(info["TimeLimit.truncated"] is True for info in infos)
    finally:
        env.close()


def test_attribute_access_and_seeding(vec_env: UnityVecEnv) -> None:
    assert vec_env.get_attr("render_mode") == [None] * 4
    assert vec_env.get_attr("process_index") == [0, 0, 1, 1]
    assert all(isinstance(slot, AgentSlot) for slot in vec_env.slots)
    vec_env.set_attr("tag", "x", indices=[1, 3])
    assert vec_env.get_attr("tag", indices=[1, 3]) == ["x", "x"]
    assert vec_env.env_method("get_wrapper_attr", "env_id") == [0, 1, 2, 3]
    assert vec_env.env_is_wrapped(VecMonitor) == [False] * 4  # type: ignore[arg-type]
    assert vec_env.seed(7) == [7, 7, 8, 8]
    pids = vec_env.venv.game_pids
    vec_env.reset()
    assert vec_env.venv.game_pids != pids  # the new seed relaunched the games


def test_ppo_trains_on_all_agents(
    vec_env: UnityVecEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path))  # SB3 makes its log folder there, not /tmp
    env = VecMonitor(vec_env)
    model = PPO("MlpPolicy", env, n_steps=16, batch_size=32, n_epochs=1, device="cpu")
    model.learn(total_timesteps=128)
    assert model.num_timesteps == 128
    episodes = list(model.ep_info_buffer or [])
    assert len(episodes) > 0  # episodes of every slot were seen
    assert all(info["l"] == 3 for info in episodes)


def test_next_step_vector_envs_are_refused() -> None:
    with pytest.raises(ValueError, match="same-step"):
        UnityVecEnv(autoreset_mode=AutoresetMode.NEXT_STEP, scene="Stress")
    next_step = UnityVectorEnv(4, scene="Stress", backend="inprocess", timeout_wait=30)
    try:
        with pytest.raises(ValueError, match="SAME_STEP"):
            UnityVecEnv(next_step)
        with pytest.raises(ValueError, match="not both"):
            UnityVecEnv(next_step, num_envs=4)
    finally:
        next_step.close()
