"""Run Python snippets with the reference peer (official ``mlagents_envs`` 1.1.0 in its own venv).

A snippet is Python source executed by the peer interpreter after :data:`PRELUDE`, which imports
the official ``UnityEnvironment``, ``ActionTuple``, the standard side channels and exceptions,
and defines:

* ``ARGS``: the JSON object given to :func:`run_in_peer` (``builds``: scene name -> executable
  path without suffix, ``port``: a free port, plus any ``extra`` entries);
* ``open_env(name, extra=(), seed=0, side_channels=(), timeout_wait=30, **kwargs)``: launch the
  build ``ARGS["builds"][name]`` on ``ARGS["port"]`` (if another program took that port since
  it was chosen, on a new free one, which ``ARGS["port"]`` then holds; up to 5 tries);
* ``close_env(env)``: close and return the player's exit code;
* ``steps(env, name)``: the last DecisionSteps/TerminalSteps of ``name`` as JSON-able lists;
* ``emit(obj)``: report ``obj`` (one JSON line); :func:`run_in_peer` returns the last one.

Tests and benchmarks share this module so that the peer is driven the same way everywhere.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "PRELUDE",
    "RESULT_PREFIX",
    "free_port",
    "peer_process_environment",
    "run_in_peer",
    "run_python_snippet",
]

#: Prefix of the output lines that carry a snippet's ``emit``-ted JSON.
RESULT_PREFIX = "RESULT:"

PRELUDE = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from mlagents_envs.environment import UnityEnvironment
    from mlagents_envs.base_env import ActionTuple
    from mlagents_envs.exception import (
        UnityCommunicatorStoppedException, UnityEnvironmentException, UnityTimeOutException,
        UnityWorkerInUseException,
    )
    from mlagents_envs.side_channel.engine_configuration_channel import (
        EngineConfigurationChannel,
    )
    from mlagents_envs.side_channel.environment_parameters_channel import (
        EnvironmentParametersChannel,
    )
    from mlagents_envs.side_channel.stats_side_channel import StatsSideChannel

    ARGS = json.loads(sys.argv[1])

    def _free_port():
        import socket
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            return sock.getsockname()[1]

    def open_env(name, extra=(), seed=0, side_channels=(), timeout_wait=30, **kwargs):
        # The port was free when it was chosen; another program may have taken it since (the
        # official server binds before it launches anything): then a new one, ARGS following.
        for attempt in range(5):
            try:
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
            except UnityWorkerInUseException:
                if attempt == 4:
                    raise
                ARGS["port"] = _free_port()

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


def peer_process_environment() -> dict[str, str]:
    """This process's environment without ``PYTHONPATH``: the peer must not import this
    repository (its ``unity_gym`` would shadow nothing, but ``benchmarks``/``tests`` could)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def run_python_snippet(
    python: Path | str,
    source: str,
    args: Mapping[str, Any],
    *,
    cwd: Path,
    timeout: float,
    env: Mapping[str, str] | None = None,
) -> Any:
    """Run ``source`` with ``python -c`` (``sys.argv[1]`` = ``args`` as JSON) and return the last
    JSON value it printed on a ``RESULT:`` line.

    The snippet runs in its own process group, which is killed if the timeout expires.

    Raises:
        AssertionError: if the snippet fails, times out or reports nothing (with its output).
    """
    proc = subprocess.Popen(
        [str(python), "-c", source, json.dumps(dict(args))],
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            # A descendant in another session (a player launched by mlagents_envs inherits our
            # pipes) keeps them open: give up on the rest of the output.
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
            proc.wait()
            out, err = "", "(output lost: a descendant process still holds the pipes)"
        raise AssertionError(
            f"snippet timed out after {timeout} s ({python})\nstdout:\n{out}\n"
            f"stderr:\n{err[-5000:]}"
        ) from None
    results = [
        line[len(RESULT_PREFIX) :] for line in out.splitlines() if line.startswith(RESULT_PREFIX)
    ]
    if proc.returncode != 0 or not results:
        raise AssertionError(
            f"snippet failed (exit {proc.returncode}, {python})\nstdout:\n{out[-5000:]}\n"
            f"stderr:\n{err[-5000:]}"
        )
    return json.loads(results[-1])


def run_in_peer(
    python: Path,
    snippet: str,
    *,
    builds: Mapping[str, Path],
    cwd: Path,
    timeout: float = 120.0,
    extra: Mapping[str, Any] | None = None,
) -> Any:
    """Run ``snippet`` with the peer interpreter after :data:`PRELUDE`; return what it
    ``emit``-ted last.

    The peer runs in ``cwd`` with a clean ``PYTHONPATH`` and in its own process group, which is
    killed if the timeout expires.

    Args:
        python: the peer interpreter (``benchmarks.peer_venv.ensure_peer_venv()``).
        snippet: source run after :data:`PRELUDE` (dedented).
        builds: scene name -> executable path without suffix, as ``ARGS["builds"]``.
        cwd: working directory of the peer process.
        timeout: seconds before the peer's process group is killed.
        extra: more JSON-able entries merged into ``ARGS`` (``port`` may be overridden).

    Raises:
        AssertionError: if the snippet fails, times out or emits nothing (with its output).
    """
    args: dict[str, Any] = {
        "builds": {k: str(v) for k, v in builds.items()},
        "port": free_port(),
        **(extra or {}),
    }
    return run_python_snippet(
        python,
        PRELUDE + "\n" + textwrap.dedent(snippet),
        args,
        cwd=cwd,
        timeout=timeout,
        env=peer_process_environment(),
    )
