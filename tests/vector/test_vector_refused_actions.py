"""A step with unusable actions is refused before any game gets it (issue 37, item 3).

Official facts followed: ``mlagents_envs``' ``ActionSpec._validate_action`` refuses actions of
the wrong shape, and the bridge (``unity_gym.base_env.ActionSpec.validate_action``, as the games
of every vector worker apply it) refuses NaN/infinite continuous values and discrete values
outside a branch; Gymnasium's ``VectorEnv.step`` is ``step_async`` + ``step_wait``, and a call
that raised must not leave a step pending (``AlreadyPendingCallError``/``NoAsyncCallError``
are for the caller's own misuse only). These tests drive real players over gRPC.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from unity_gym.exceptions import UnityActionException
from unity_gym.vector import UnityVectorEnv

pytestmark = pytest.mark.timeout(180)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_nan_in_the_last_slot_is_refused_and_the_next_step_works(
    backend: str, mode: AutoresetMode, make_vector_env: Callable[..., UnityVectorEnv]
) -> None:
    env = make_vector_env(num_envs=24, scene="3DBall", backend=backend, autoreset_mode=mode)
    assert (env.num_processes, env.agents_per_process) == (2, 12)
    env.reset(seed=5)
    actions = np.zeros(env.action_space.shape, dtype=np.float32)
    bad = actions.copy()
    bad[23, 1] = np.nan
    for _ in range(3):  # refused every time, never AlreadyPendingCallError
        with pytest.raises(UnityActionException) as caught:
            env.step(bad)
        message = str(caught.value)
        assert "slot 23 (game process 1, its agent row 11, Unity agent_id 11)" in message
        assert "nothing was sent to any game" in message
        assert "slot 11" not in message and "rows [11]" not in message
        obs, rewards, terminated, truncated, infos = env.step(actions)
        assert obs.shape == (24, 8) and obs.dtype == np.float32
        assert rewards.shape == terminated.shape == truncated.shape == (24,)
        assert infos["agent_id"].shape == (24,)
        np.testing.assert_array_equal(infos["agent_id"], np.tile(np.arange(12), 2))


def test_a_refused_step_reaches_no_game(make_vector_env: Callable[..., UnityVectorEnv]) -> None:
    # Stress: observation 0 counts the agent's decisions since its episode began, so a game
    # that got the refused step would be one ahead.
    env = make_vector_env(num_envs=4, num_processes=2, backend="subprocess")
    pids = env.game_pids
    obs, _ = env.reset()
    np.testing.assert_array_equal(obs[:, 0], 1)
    zeros = np.zeros((4, 2), dtype=np.float32)
    for slot in (3, 0):
        bad = zeros.copy()
        bad[slot, 0] = np.inf
        with pytest.raises(UnityActionException, match=f"slot {slot} \\(game process {slot // 2}"):
            env.step(bad)
    obs, *_ = env.step(zeros)
    np.testing.assert_array_equal(obs[:, 0], 2)  # one step, not two
    assert env.game_pids == pids and env.restart_counts == [0, 0]


def test_send_recv_refuse_bad_slots_and_accept_them_again(
    make_vector_env: Callable[..., UnityVectorEnv],
) -> None:
    env = make_vector_env(num_envs=4, num_processes=2, backend="inprocess")
    env.reset()
    bad = np.array([[0.0, 0.0], [np.nan, 0.0]], dtype=np.float32)
    with pytest.raises(UnityActionException, match=r"slot 3 \(game process 1, its agent row 1"):
        env.send(bad, env_ids=[2, 3])
    env.send(np.zeros((2, 2), dtype=np.float32), env_ids=[2, 3])
    obs, _, _, _, infos = env.recv()
    assert infos["env_id"].tolist() == [2, 3]
    np.testing.assert_array_equal(obs[:, 0], 2)
    env.send(np.zeros((2, 2), dtype=np.float32), env_ids=[0, 1])
    _, _, _, _, infos = env.recv()
    assert infos["env_id"].tolist() == [0, 1]


def test_out_of_range_discrete_actions_name_their_slot(
    make_vector_env: Callable[..., UnityVectorEnv],
) -> None:
    env = make_vector_env(num_envs=3, scene="Basic", backend="inprocess")
    assert (env.num_processes, env.agents_per_process) == (3, 1)
    obs, _ = env.reset()
    size = int(env.single_action_space.n)
    with pytest.raises(UnityActionException, match=f"{size} of batch row 1, branch 0 is out of"):
        env.step(np.array([0, size, -1]))
    next_obs, rewards, *_ = env.step(np.zeros(3, dtype=np.int64))
    assert rewards.shape == (3,) and next_obs.shape == obs.shape
