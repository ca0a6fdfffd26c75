"""Shared test set-up: the repository root on ``sys.path`` (for ``benchmarks.*`` helpers), and
the session fixtures of the tests that run the reference peer against built player executables."""

from __future__ import annotations

import compileall
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


import pytest  # noqa: E402

from benchmarks.peer_venv import PeerUnavailableError, ensure_peer_venv  # noqa: E402
from unity_gym.player.build import build_executable  # noqa: E402
from unity_gym.player.scenes import scene_names  # noqa: E402

_PEER_ERROR_VAR = "UNITY_GYM_TESTS_PEER_UNAVAILABLE"
"""Set by :func:`pytest_configure` when the peer venv could not be built (the reason)."""


def pytest_configure(config: pytest.Config) -> None:
    """Build the reference peer venv once, before any test runs (the controller process only).

    On a fresh clone the build takes minutes (longer on a loaded machine); inside a test it would
    count against that test's timeout. xdist workers start after this hook and inherit the
    outcome: a venv ready to use, or the reason it is unavailable (then peer tests skip).
    """
    if hasattr(config, "workerinput") or config.option.collectonly:
        return
    _compile_bytecode()
    try:
        ensure_peer_venv()
    except PeerUnavailableError as exc:
        os.environ[_PEER_ERROR_VAR] = str(exc)[-2000:]


def _compile_bytecode() -> None:
    """Write the bytecode of the project's packages once, before any test runs.

    Tests launch game processes (about 1.5 a test), and each imports ``unity_gym`` afresh. Where
    bytecode is never written (a fresh clone run with ``PYTHONDONTWRITEBYTECODE=1``, as our
    development machines' shells set it), each of them compiles every module it imports from
    source: about 130 ms of CPU per game launch. ``compileall`` writes only what is missing or
    stale.
    """
    for package in ("unity_gym", "trainers", "benchmarks"):
        compileall.compile_dir(REPO_ROOT / package, quiet=1)


@pytest.fixture
def terminal_sigint() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt as in a terminal, even when the suite was started with
    SIGINT ignored (a shell ignores it for background jobs; Python then installs no handler)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope="session")
def peer_python() -> Path:
    """The official mlagents-envs 1.1.0 interpreter, or a skip if it cannot be built."""
    reason = os.environ.get(_PEER_ERROR_VAR)
    if reason:
        pytest.skip(f"reference peer venv unavailable: {reason}")
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
