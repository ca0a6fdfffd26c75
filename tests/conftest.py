"""Shared test set-up: the repository root on ``sys.path`` (for ``benchmarks.*`` helpers), and
the session fixtures of the tests that run the reference peer against built player executables."""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


import pytest  # noqa: E402

from benchmarks.peer_venv import PeerUnavailableError, ensure_peer_venv  # noqa: E402
from unity_gym.player.build import build_executable  # noqa: E402
from unity_gym.player.scenes import scene_names  # noqa: E402


@pytest.fixture(scope="session")
def peer_python() -> Path:
    """The official mlagents-envs 1.1.0 interpreter, or a skip if it cannot be built."""
    try:
        return ensure_peer_venv()
    except PeerUnavailableError as exc:
        pytest.skip(f"reference peer venv unavailable: {exc}")


@pytest.fixture(scope="session")
def scene_builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every registered scene built as an executable: ``name -> DIR/name`` (no suffix, as
    passed to ``UnityEnvironment``)."""
    directory = tmp_path_factory.mktemp("scene_builds")
    return {scene: build_executable(scene, directory).with_suffix("") for scene in scene_names()}
