"""A Python process killed outright (SIGKILL) takes every process it started with it.

Issue 37 item 7: after the Python parent was SIGKILLed, its vector env's worker processes (and,
through them, the games and ``multiprocessing``'s resource tracker) stayed alive while a worker
was busy in a request: waiting for a game to connect, or for a step answer, up to
``timeout_wait``. Each test starts a real parent script, waits until it is inside such a wait,
records its whole process tree from ``/proc``, SIGKILLs it and requires every recorded process
to be gone within :data:`DEADLINE_S` seconds (``timeout_wait`` is 120 s, so a worker that only
noticed when its wait ends would fail).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from process_utils import ProcessTree, process_tree, survivors

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads the process tree from /proc"
)

DEADLINE_S = 10.0
"""Seconds every process of the killed parent's tree gets to go."""


def _kill_parent_and_check(
    script: str, tmp_path: Path, ready: Callable[[ProcessTree], bool], settle_s: float
) -> None:
    """Run ``script``; once its tree satisfies ``ready`` (and ``settle_s`` more seconds have
    passed) SIGKILL it and require its whole tree gone within :data:`DEADLINE_S`."""
    env = dict(os.environ, PYTHONPATH=str(REPO), UNITY_GYM_CACHE_DIR=str(tmp_path / "cache"))
    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    snapshot: ProcessTree = {}
    try:
        deadline = time.monotonic() + 90.0
        while True:
            assert parent.poll() is None, f"the parent script exited early ({parent.returncode})"
            snapshot = process_tree(parent.pid)
            if ready(snapshot):
                break
            assert time.monotonic() < deadline, f"never got ready; tree: {snapshot}"
            time.sleep(0.2)
        time.sleep(settle_s)
        snapshot = process_tree(parent.pid)
        assert ready(snapshot), f"the tree changed while settling: {snapshot}"
    finally:
        parent.kill()
        parent.wait()
    del snapshot[parent.pid]
    deadline = time.monotonic() + DEADLINE_S
    alive = survivors(snapshot)
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = survivors(snapshot)
    for pid in alive:  # do not leave them to the next test
        os.kill(pid, signal.SIGKILL)
    assert not alive, (
        f"{len(alive)} of the {len(snapshot)} processes the SIGKILLed parent had started were "
        f"alive {DEADLINE_S:.0f} s later:\n"
        + "\n".join(f"  {pid}: {command[:160]}" for pid, (_, command) in alive.items())
    )


def _count(snapshot: ProcessTree, needle: str) -> int:
    return sum(needle in command for _, command in snapshot.values())


@pytest.mark.timeout(180)
def test_vector_workers_busy_in_a_step_die_with_the_parent(tmp_path: Path) -> None:
    """Both games stop answering at their second step; the parent waits in ``step()``."""
    script = """
        import numpy as np
        from unity_gym.vector import UnityVectorEnv

        env = UnityVectorEnv(
            scene="Stress", num_envs=2, num_processes=2, num_agents=1, timeout_wait=120,
            scene_options={"hang_after": 2},
        )
        env.reset(seed=0)
        while True:
            env.step(np.zeros((2, 2), dtype=np.float32))
    """

    def ready(tree: ProcessTree) -> bool:
        return _count(tree, "unity_gym.player") == 2 and _count(tree, "spawn_main") == 2

    _kill_parent_and_check(script, tmp_path, ready, settle_s=3.0)


@pytest.mark.timeout(180)
def test_vector_workers_starting_their_games_die_with_the_parent(
    tmp_path: Path, fake_game: Path
) -> None:
    """The games never connect; the parent waits in the vector env's constructor."""
    script = f"""
        from unity_gym.vector import UnityVectorEnv

        UnityVectorEnv(
            file_name={str(fake_game)!r}, num_processes=2, timeout_wait=120,
            additional_args=["--fake-mode", "noconnect"],
        )
    """

    def ready(tree: ProcessTree) -> bool:
        return _count(tree, "bridge_fake_game.py") == 2

    _kill_parent_and_check(script, tmp_path, ready, settle_s=1.0)


@pytest.mark.timeout(180)
def test_environment_starting_its_game_dies_with_the_parent(
    tmp_path: Path, fake_game: Path
) -> None:
    """``UnityEnvironment`` itself (no worker process): the game goes with the parent."""
    script = f"""
        from unity_gym import UnityEnvironment

        UnityEnvironment(
            file_name={str(fake_game)!r}, timeout_wait=120,
            additional_args=["--fake-mode", "noconnect"],
        )
    """

    def ready(tree: ProcessTree) -> bool:
        return _count(tree, "bridge_fake_game.py") == 1

    _kill_parent_and_check(script, tmp_path, ready, settle_s=1.0)
