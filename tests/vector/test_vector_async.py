"""send/recv (first ready batch, ``env_id``), step_async/step_wait, timeouts, sequence numbers."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from gymnasium.error import AlreadyPendingCallError, NoAsyncCallError

from unity_gym.vector import UnityVectorEnv, VectorWaitTimeoutError

pytestmark = pytest.mark.timeout(120)


def test_recv_returns_whole_games_and_each_slot_advances_once_per_send(
    backend: str, make_vector_env: Callable[..., UnityVectorEnv]
) -> None:
    env = make_vector_env(
        num_envs=6,
        num_processes=3,
        backend=backend,
        batch_size=2,
        scene_options={"step_time": 0.002, "jitter": 1.0},
    )
    obs, _ = env.reset()
    steps = np.zeros(6, dtype=int)  # actions sent to each slot so far
    first = np.zeros((6, 2), dtype=np.float32)
    first[:, 0] = np.arange(6) / 1000
    env.send(first)
    steps += 1
    received = 0
    while received < 30:
        obs, rewards, terminated, truncated, info = env.recv()
        ids = info["env_id"]
        assert len(ids) == 2 and ids[0] % 2 == 0 and ids[1] == ids[0] + 1  # one whole game
        # The agent step counter is one more than the number of actions the slot received,
        # and the last executed action is the one sent for exactly this slot.
        np.testing.assert_array_equal(obs[:, 0], steps[ids] + 1)
        np.testing.assert_allclose(obs[:, 4], (steps[ids] - 1) / 100 + ids / 1000, atol=1e-6)
        np.testing.assert_allclose(rewards, obs[:, 4], atol=1e-6)
        assert not terminated.any() and not truncated.any()
        np.testing.assert_array_equal(info["agent_id"], ids % 2)
        actions = np.zeros((2, 2), dtype=np.float32)
        actions[:, 0] = steps[ids] / 100 + ids / 1000
        env.send(actions, ids)
        steps[ids] += 1
        received += 1
    with pytest.raises(ValueError, match="still running"):
        env.send(np.zeros((6, 2), dtype=np.float32))
    # Drain: whatever is pending is returned, then nothing is left to receive.
    pending = 6
    while pending:
        *_, info = env.recv()
        pending -= len(info["env_id"])
    with pytest.raises(NoAsyncCallError):
        env.recv()


def test_a_timed_out_wait_loses_nothing(make_vector_env: Callable[..., UnityVectorEnv]) -> None:
    env = make_vector_env(
        num_envs=4, num_processes=2, backend="subprocess", scene_options={"step_time": 0.4}
    )
    env.reset()
    env.step_async(np.zeros((4, 2), dtype=np.float32))
    with pytest.raises(VectorWaitTimeoutError, match="Nothing is lost"):
        env.step_wait(timeout=0.05)
    with pytest.raises(AlreadyPendingCallError):
        env.step_async(np.zeros((4, 2), dtype=np.float32))
    obs, *_ = env.step_wait()
    np.testing.assert_array_equal(obs[:, 0], 2)  # exactly one step, not zero and not two
    obs, *_ = env.step(np.zeros((4, 2), dtype=np.float32))
    np.testing.assert_array_equal(obs[:, 0], 3)
    # A reset abandons a pending step; its late reply is dropped, never taken for a result.
    env.step_async(np.zeros((4, 2), dtype=np.float32))
    with pytest.raises(VectorWaitTimeoutError):
        env.step_wait(timeout=0.01)
    obs, _ = env.reset()
    np.testing.assert_array_equal(obs[:, 0], 1)
    np.testing.assert_array_equal(obs[:, 2], 1)
    obs, *_ = env.step(np.zeros((4, 2), dtype=np.float32))
    np.testing.assert_array_equal(obs[:, 0], 2)
    with pytest.raises(NoAsyncCallError):
        env.step_wait()


def test_batch_size_can_be_set_to_one_game_after_construction(
    make_vector_env: Callable[..., UnityVectorEnv],
) -> None:
    env = make_vector_env(num_envs=6, num_processes=3, backend="inprocess")
    assert env.batch_size == 6  # default: every slot, i.e. lock-step
    with pytest.raises(ValueError, match="batch_size=3 must be a multiple of the 2 agents"):
        env.batch_size = 3
    assert env.batch_size == 6
    env.batch_size = env.agents_per_process
    env.reset()
    env.send(np.zeros((6, 2), dtype=np.float32))
    games = set()
    for _ in range(3):
        *_, info = env.recv()
        assert len(info["env_id"]) == 2
        games.add(int(info["env_id"][0]) // 2)
    assert games == {0, 1, 2}
