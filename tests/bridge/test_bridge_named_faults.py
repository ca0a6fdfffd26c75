"""Faults of the game that are reported by their cause, at once (issue 37, items 5 and 6).

Official facts followed: the handshake's seed and the discrete actions are int32 fields
(``UnityRLInitializationInputProto.seed``, ``AgentActionProto.discrete_actions``); Unity's
``RpcCommunicator`` answers a ``RESOURCE_EXHAUSTED`` call by disconnecting ("Disconnecting from
trainer"), and ``mlagents_envs`` then only times out. Games here are the fake game process
(``bridge_fake_game.py``) or the in-process Unity stand-in, both over real gRPC on loopback:
a real player cannot send such messages.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest
from bridge_standin import Agent, Behavior, ScriptedUnity, build_output, free_port

from unity_gym.base_env import ActionTuple
from unity_gym.environment import UnityEnvironment
from unity_gym.exceptions import (
    UnityActionException,
    UnityCommunicationException,
    UnityCommunicatorStoppedException,
    UnityTimeOutException,
)
from unity_gym.protocol.communicator_objects.unity_message_pb2 import UnityMessageProto

NAME = "Fake?team=0"
EDITOR_NAME = "B?team=0"


def _first(branches: tuple[int, ...] = ()) -> bytes:
    behavior = Behavior(branches=branches) if branches else Behavior(continuous=1)
    return build_output({EDITOR_NAME: [Agent(id=0, obs=[[0.0, 1.0]])]}, {EDITOR_NAME: behavior})


def _huge() -> bytes:
    return build_output({EDITOR_NAME: [Agent(id=0, obs=[[0.5] * 300_000])]})


def test_oversized_message_from_the_editor_is_named_at_once() -> None:
    port = free_port()
    with ScriptedUnity(port, [_first(), _huge()]):
        env = UnityEnvironment(None, base_port=port, timeout_wait=15, max_message_bytes=10**6)
        env.reset()
        started = time.monotonic()
        with pytest.raises(UnityCommunicationException, match="max_message_bytes") as caught:
            env.step()
        assert time.monotonic() - started < 5
        assert "1000000 bytes" in str(caught.value)
        env.close()


def test_oversized_message_from_a_launched_game_is_named_at_once(fake_game: Path) -> None:
    env = UnityEnvironment(
        str(fake_game),
        timeout_wait=15,
        max_message_bytes=4 * 2**20,
        additional_args=["--fake-mode", "big", "--fake-agents", "1"],
    )
    started = time.monotonic()
    with pytest.raises(UnityCommunicationException, match="max_message_bytes"):
        env.reset()
    assert time.monotonic() - started < 5
    env.close()


def test_connection_dropped_between_exchanges_by_the_editor() -> None:
    port = free_port()
    holder: list[ScriptedUnity] = []

    def drop(last: UnityMessageProto) -> None:
        holder[0].close()  # after Python's answer, before the next call

    unity = ScriptedUnity(port, [_first(), drop])
    holder.append(unity)
    with unity:
        env = UnityEnvironment(None, base_port=port, timeout_wait=15)
        env.reset()
        started = time.monotonic()
        with pytest.raises(UnityCommunicatorStoppedException, match="closed its connection"):
            env.step()
        assert time.monotonic() - started < 6
        env.close()


def test_connection_dropped_between_exchanges_by_a_launched_game(fake_game: Path) -> None:
    env = UnityEnvironment(str(fake_game), timeout_wait=15, additional_args=["--fake-mode", "drop"])
    env.reset()
    started = time.monotonic()
    with pytest.raises(UnityCommunicatorStoppedException, match="closed its connection"):
        env.step()
    assert time.monotonic() - started < 6
    env.close()
    assert not env.process or not env.process.is_running()


def test_stopped_game_is_reported_after_timeout_wait(fake_game: Path) -> None:
    env = UnityEnvironment(str(fake_game), timeout_wait=5)
    env.reset()
    assert env.process is not None
    os.kill(env.process.pid, signal.SIGSTOP)
    started = time.monotonic()
    try:
        with pytest.raises(UnityTimeOutException, match="is stopped"):
            env.step()
        assert time.monotonic() - started < 6.5  # timeout_wait, not timeout_wait + graces
        assert not env.process.is_running()
    finally:
        if env.process.is_running():
            os.kill(env.process.pid, signal.SIGKILL)
        env.close()


@pytest.mark.parametrize("value", [2**40, 2**32 + 2, -(2**31) - 1])
def test_discrete_actions_outside_int32_never_reach_the_game(value: int) -> None:
    port = free_port()
    with ScriptedUnity(port, [_first(branches=(3,)), _first(branches=(3,))]) as unity:
        env = UnityEnvironment(None, base_port=port, timeout_wait=15)
        env.reset()
        with pytest.raises(UnityActionException, match="int32"):
            env.set_actions(EDITOR_NAME, ActionTuple(discrete=np.array([[value]])))
        with pytest.raises(UnityActionException, match="int32"):
            env.set_action_for_agent(EDITOR_NAME, 0, ActionTuple(discrete=[[value]]))
        env.step()  # zero actions: nothing of the refused ones was kept
        env.close()
    step = unity.inputs()[2].rl_input.agent_actions[EDITOR_NAME].value
    assert [list(action.discrete_actions) for action in step] == [[0]]


def test_negative_branch_size_names_the_behavior(fake_game: Path) -> None:
    env = UnityEnvironment(
        str(fake_game), timeout_wait=15, additional_args=["--fake-branches", "3,-2"]
    )
    try:
        with pytest.raises(UnityCommunicationException, match=r"'Fake\?team=0'.*-2") as caught:
            env.reset()  # the game announces its behaviors with the first agents
        assert "branch size >= 1" in str(caught.value)
    finally:
        env.close()


def test_duplicate_agent_ids_in_one_step_are_refused(fake_game: Path) -> None:
    env = UnityEnvironment(
        str(fake_game),
        timeout_wait=15,
        additional_args=["--fake-mode", "dupids", "--fake-agents", "3"],
    )
    try:
        with pytest.raises(UnityCommunicationException, match=r"agent ids \[0\].*more than once"):
            env.reset()
    finally:
        env.close()
