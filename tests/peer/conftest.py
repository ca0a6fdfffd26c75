"""Fixtures of the conformance tests against the reference peer (official ``mlagents_envs``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from benchmarks.peer_venv import PeerUnavailableError, ensure_peer_venv
from unity_gym.player.build import build_executable
from unity_gym.player.scenes import scene_names

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


@pytest.fixture(scope="session")
def peer_python() -> Path:
    """The official mlagents-envs 1.1.0 interpreter, or a skip if it cannot be built."""
    try:
        return ensure_peer_venv()
    except PeerUnavailableError as exc:
        pytest.skip(f"reference peer venv unavailable: {exc}")


@pytest.fixture(scope="session")
def scene_builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every registered scene built as an executable: ``name -> DIR/name`` (no suffix)."""
    directory = tmp_path_factory.mktemp("peer_builds")
    return {scene: build_executable(scene, directory).with_suffix("") for scene in scene_names()}
