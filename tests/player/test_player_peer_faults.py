"""Ways a session ends, seen from the official ``mlagents_envs`` 1.1.0: the player quitting on
``--max-steps``, a simulated crash and a simulated hang."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytestmark = [pytest.mark.peer, pytest.mark.timeout(180)]

Peer = Callable[..., Any]


def test_player_quitting_sends_a_goodbye(peer: Peer) -> None:
    result = peer(
        """
        env = open_env("Stress", extra=["--max-steps", "6"])
        env.reset()
        error = None
        try:
            for _ in range(20):
                env.step()
        except UnityCommunicatorStoppedException as exc:
            error = str(exc)
        emit({"error": error, "code": close_env(env)})
        """
    )
    assert result["error"] == "Communicator has exited."
    assert result["code"] == 0


def test_simulated_crash_exits_with_code_3(peer: Peer) -> None:
    result = peer(
        """
        env = open_env("Stress", extra=["--option", "crash_after=5"], timeout_wait=10)
        env.reset()
        error = None
        try:
            for _ in range(20):
                env.step()
        except (UnityEnvironmentException, UnityCommunicatorStoppedException) as exc:
            error = str(exc)
        process = env._process
        code = process.poll() if process is not None else None
        close_env(env)
        emit({"error": error, "code": code})
        """
    )
    assert "return code 3" in result["error"]
    assert result["code"] == 3


def test_simulated_hang_times_out_and_is_killed(peer: Peer) -> None:
    result = peer(
        """
        env = open_env("Stress", extra=["--option", "hang_after=3"], timeout_wait=6)
        env.reset()
        error = None
        try:
            for _ in range(10):
                env.step()
        except UnityTimeOutException as exc:
            error = type(exc).__name__
        emit({"error": error, "code": close_env(env)})
        """
    )
    assert result["error"] == "UnityTimeOutException"
    assert result["code"] is not None and result["code"] < 0, "killed by close()"
