"""Fixtures of the player tests: the reference peer (official ``mlagents_envs`` 1.1.0 in its own
venv) running snippets against built player executables of every registered scene.

A snippet is Python source executed by the peer interpreter after
:data:`benchmarks.peer_runner.PRELUDE`; it reports its findings with ``emit(obj)`` (one JSON
line), which the ``peer`` fixture returns.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks.peer_runner import free_port, run_in_peer
from unity_gym.player.scenes import scene_names

#: Every scene registered in the player (new scenes are picked up automatically).
SCENES = tuple(scene_names())


@pytest.fixture(scope="session")
def builds(scene_builds: dict[str, Path]) -> dict[str, Path]:
    """``name -> DIR/name`` of every registered scene (see ``tests/conftest.py``)."""
    return scene_builds


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
