"""``UnityEnvironment(file_name=...)`` launching a fake player executable: lifetime and errors."""

from __future__ import annotations

import gc
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from process_utils import eventually, group_members, pid_alive

from unity_gym.base_env import ActionTuple
from unity_gym.environment import UnityEnvironment
from unity_gym.exceptions import (
    UnityCommunicatorStoppedException,
    UnityEnvironmentException,
    UnityTimeOutException,
)

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not Path("/proc").is_dir(), reason="process checks read /proc"),
]
NAME = "Fake?team=0"


def test_launch_reset_step_close(fake_game: Path, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    env = UnityEnvironment(
        str(fake_game), worker_id=3, no_graphics=True, timeout_wait=60, log_folder=logs
    )
    process = env.process
    assert process is not None
    assert process.args[:4] == ["-nographics", "-batchmode", "--mlagents-port", str(env.port)]
    assert process.args[4:] == ["-logFile", str(logs / "Player-3.log")]
    env.reset()
    env.set_actions(NAME, ActionTuple(continuous=np.array([[0.25], [0.75]])))
    env.step()
    decision, _ = env.get_steps(NAME)
    np.testing.assert_array_equal(decision.obs[0], [[1, 0, 0.25], [1, 1, 0.75]])
    env.close()
    assert process.returncode == 0  # the game quit by itself on the close message
    assert "fake game closing after status 400" in (logs / "Player-3.log").read_text()
    assert (logs / "Player-3-stdout.log").exists()


def test_explicit_base_port_plus_worker_id(fake_game: Path) -> None:
    from bridge_standin import free_port

    base = free_port()
    with UnityEnvironment(str(fake_game), worker_id=0, base_port=base, timeout_wait=60) as env:
        assert env.port == base
        env.reset()


def test_game_exit_is_reported_with_exit_code_and_log_tail(fake_game: Path) -> None:
    env = UnityEnvironment(
        str(fake_game), timeout_wait=60, additional_args=["--fake-mode", "crash"]
    )
    assert env.process is not None
    pid = env.process.pid
    with pytest.raises(UnityEnvironmentException) as caught:
        env.reset()
    text = str(caught.value)
    assert "Environment shut down with return code 3" in text
    assert "Fatal error: simulated crash" in text and "crash log line 24" in text
    assert "crash log line 5\n" not in text  # only the last lines are quoted
    assert not pid_alive(pid)
    with pytest.raises(UnityEnvironmentException, match="No Unity environment is loaded"):
        env.step()


def test_nothing_connecting_names_port_and_executable(fake_game: Path) -> None:
    with pytest.raises(UnityTimeOutException) as caught:
        UnityEnvironment(
            str(fake_game), timeout_wait=4, additional_args=["--fake-mode", "noconnect"]
        )
    text = str(caught.value)
    assert "nothing connected to port" in text
    assert str(fake_game.parent / "FakeGame.x86_64") in text
    assert "fake game starting" in text  # the log tail is quoted (4 s: its start-up under load)
    pid = int(text.split("(pid ")[1].split(")")[0])
    assert eventually(lambda: not pid_alive(pid))


def test_hanging_game_times_out_and_is_killed(fake_game: Path) -> None:
    env = UnityEnvironment(str(fake_game), timeout_wait=2, additional_args=["--fake-mode", "hang"])
    assert env.process is not None
    pid = env.process.pid
    env.reset()
    with pytest.raises(UnityTimeOutException, match="no agent requested a decision") as caught:
        env.step()
    assert "is still running" in str(caught.value)
    assert eventually(lambda: not pid_alive(pid))


def test_game_quitting_is_a_stopped_communicator(fake_game: Path) -> None:
    env = UnityEnvironment(str(fake_game), timeout_wait=60, additional_args=["--fake-mode", "quit"])
    env.reset()
    with pytest.raises(UnityCommunicatorStoppedException, match="status 400"):
        env.step()
    assert env.process is not None and env.process.returncode == 0


def test_version_suffix_from_a_launched_game(fake_game: Path) -> None:
    with UnityEnvironment(
        str(fake_game), timeout_wait=60, additional_args=["--fake-version", "1.5.0-exp"]
    ) as env:
        env.reset()
        assert len(env.get_steps(NAME)[0]) == 2


def test_big_messages_from_a_launched_game(fake_game: Path) -> None:
    with UnityEnvironment(
        str(fake_game),
        timeout_wait=60,
        additional_args=["--fake-mode", "big", "--fake-agents", "1"],
    ) as env:
        env.reset()
        decision, _ = env.get_steps(NAME)
        assert decision.obs[0].shape == (1, 1_500_000)


@pytest.mark.parametrize("ending", ["close", "exception", "garbage"])
def test_no_orphans_remain(fake_game: Path, ending: str) -> None:
    mode = "hang" if ending == "exception" else "spawn"
    env = UnityEnvironment(str(fake_game), timeout_wait=3, additional_args=["--fake-mode", mode])
    assert env.process is not None
    group = env.process.pid
    env.reset()
    if mode == "spawn":
        assert eventually(lambda: len(group_members(group)) == 2)  # game + its grandchild
    if ending == "close":
        env.close()
    elif ending == "exception":
        with pytest.raises(UnityTimeOutException):
            env.step()
    else:
        del env
        gc.collect()
    assert eventually(lambda: group_members(group) == [])


def _signal_this_thread() -> None:
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)


@pytest.mark.parametrize(
    "send_interrupt",
    [lambda: os.kill(os.getpid(), signal.SIGINT), _signal_this_thread],
    ids=["to-the-process", "to-another-thread"],  # the kernel may pick any thread
)
def test_ctrl_c_during_a_wait_closes_the_environment(
    fake_game: Path, send_interrupt: Callable[[], None], terminal_sigint: None
) -> None:
    env = UnityEnvironment(str(fake_game), timeout_wait=60, additional_args=["--fake-mode", "hang"])
    assert env.process is not None
    group = env.process.pid
    env.reset()
    interrupt = threading.Timer(0.5, send_interrupt)
    interrupt.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        env.step()
    assert time.monotonic() - started < 30  # not the 60 s timeout
    assert eventually(lambda: group_members(group) == [])
    with pytest.raises(UnityEnvironmentException, match="No Unity environment is loaded"):
        env.step()
