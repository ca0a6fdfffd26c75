"""Fixtures of the player tests: the reference peer (official ``mlagents_envs`` 1.1.0 in its own
venv) running snippets against built player executables.

A snippet is Python source executed by the peer interpreter after :data:`PRELUDE`; it reports
its findings with ``emit(obj)`` (one JSON line), which the ``peer`` fixture returns.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks.peer_venv import PeerUnavailable, ensure_peer_venv
from unity_gym.player.build import build_executable

SCENES = ("3DBall", "Basic", "Stress")

PRELUDE = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from mlagents_envs.environment import UnityEnvironment
    from mlagents_envs.base_env import ActionTuple
    from mlagents_envs.exception import (
        UnityCommunicatorStoppedException, UnityEnvironmentException, UnityTimeOutException,
    )
    from mlagents_envs.side_channel.engine_configuration_channel import (
        EngineConfigurationChannel,
    )
    from mlagents_envs.side_channel.environment_parameters_channel import (
        EnvironmentParametersChannel,
    )
    from mlagents_envs.side_channel.stats_side_channel import StatsSideChannel

    ARGS = json.loads(sys.argv[1])

    def open_env(name, extra=(), seed=0, side_channels=(), timeout_wait=30, **kwargs):
        return UnityEnvironment(
            file_name=ARGS["builds"][name],
            base_port=ARGS["port"],
            worker_id=0,
            seed=seed,
            no_graphics=True,
            timeout_wait=timeout_wait,
            side_channels=list(side_channels),
            additional_args=list(extra),
            **kwargs,
        )

    def close_env(env):
        process = env._process
        env.close()
        return None if process is None else process.wait(timeout=30)

    def steps(env, name):
        d, t = env.get_steps(name)
        return {
            "ids": d.agent_id.tolist(),
            "obs": [o.tolist() for o in d.obs],
            "reward": d.reward.tolist(),
            "group_id": [int(g) for g in d.group_id],
            "group_reward": d.group_reward.tolist(),
            "mask": None if d.action_mask is None else [m.tolist() for m in d.action_mask],
            "t_ids": t.agent_id.tolist(),
            "t_obs": [o.tolist() for o in t.obs],
            "t_reward": t.reward.tolist(),
            "t_interrupted": t.interrupted.tolist(),
        }

    def emit(obj):
        print("RESULT:" + json.dumps(obj), flush=True)
    """
)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_in_peer(
    python: Path,
    snippet: str,
    *,
    builds: dict[str, Path],
    cwd: Path,
    timeout: float = 120.0,
) -> Any:
    """Run ``snippet`` with the peer interpreter and return what it ``emit``-ted.

    The peer runs in ``cwd`` with a clean ``PYTHONPATH`` (it must not import this repository)
    and in its own process group, killed if the timeout expires.

    Raises:
        AssertionError: if the snippet fails or emits nothing (with its output).
    """
    args = {"builds": {k: str(v) for k, v in builds.items()}, "port": free_port()}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    source = PRELUDE + "\n" + textwrap.dedent(snippet)
    proc = subprocess.Popen(
        [str(python), "-c", source, json.dumps(args)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"peer snippet timed out\nstdout:\n{out}\nstderr:\n{err}") from None
    results = [line[len("RESULT:") :] for line in out.splitlines() if line.startswith("RESULT:")]
    if proc.returncode != 0 or not results:
        raise AssertionError(
            f"peer snippet failed (exit {proc.returncode})\nstdout:\n{out}\nstderr:\n{err[-5000:]}"
        )
    return json.loads(results[-1])


@pytest.fixture(scope="session")
def peer_python() -> Path:
    """The official mlagents-envs 1.1.0 interpreter, or a skip if it cannot be built."""
    try:
        return ensure_peer_venv()
    except PeerUnavailable as exc:
        pytest.skip(f"reference peer venv unavailable: {exc}")


@pytest.fixture(scope="session")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``name -> DIR/name`` (without suffix, as passed to ``UnityEnvironment``)."""
    directory = tmp_path_factory.mktemp("player_builds")
    result = {}
    for scene in SCENES:
        executable = build_executable(scene, directory)
        result[scene] = executable.with_suffix("")
    return result


@pytest.fixture
def peer(peer_python: Path, builds: dict[str, Path], tmp_path: Path) -> Callable[..., Any]:
    """``peer(snippet, timeout=...)`` runs a snippet in the peer venv, cwd = a fresh temp dir."""

    def run(snippet: str, timeout: float = 120.0) -> Any:
        return run_in_peer(peer_python, snippet, builds=builds, cwd=tmp_path, timeout=timeout)

    return run


@pytest.fixture
def free_tcp_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now."""
    return free_port()
