"""Build the *reference peer*: a venv with the official ``mlagents-envs``/``mlagents`` 1.1.0.

The official wheels pin Python <= 3.10.12, protobuf < 3.21 and numpy < 1.24; they install here with
``--no-deps --ignore-requires-python`` plus the old pins listed below. Tests and benchmarks run the
peer's Python in a subprocess, so its packages never mix with ours.

Usage::

    python benchmarks/peer_venv.py            # envs only (mlagents_envs.UnityEnvironment)
    python benchmarks/peer_venv.py --learn    # also what ``mlagents-learn`` needs (torch, ...)
"""

from __future__ import annotations

import argparse
import fcntl
import os
import subprocess
import sys
import venv
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = [
    "DEFAULT_PEER_DIR",
    "PeerUnavailable",
    "PeerUnavailableError",
    "ensure_peer_venv",
    "peer_python",
]

DEFAULT_PEER_DIR = Path(
    os.environ.get("UNITY_GYM_PEER_VENV", Path(__file__).resolve().parents[1] / ".peer-venv")
)
OFFICIAL = ["mlagents-envs==1.1.0", "mlagents==1.1.0"]
ENVS_DEPS = [
    "protobuf==3.20.3",
    "numpy==1.23.5",
    "grpcio",
    "cloudpickle",
    "pyyaml",
    "pillow",
    "filelock",
    "setuptools<81",
]
# setuptools is repeated: torch depends on it and would otherwise upgrade it past the pin
# (mlagents' torch_utils imports pkg_resources, removed in setuptools 81).
LEARN_DEPS = [
    "torch==2.13.0",
    "attrs",
    "cattrs==1.5.0",
    "h5py",
    "tensorboard==2.14.1",
    "setuptools<81",
]
_MARKER_ENVS = ".unity-gym-peer-envs"
_MARKER_LEARN = ".unity-gym-peer-learn"
_MARKER_BUILDING = ".unity-gym-peer-building"
"""Written as soon as the venv is created: a folder holding it (a build that was interrupted)
may be cleared and built again; any other non-empty folder is never deleted."""


class PeerUnavailableError(RuntimeError):
    """The reference peer venv could not be built (e.g. the package registry is unreachable)."""


PeerUnavailable = PeerUnavailableError
"""Short alias used by the tests."""


def peer_python(peer_dir: Path = DEFAULT_PEER_DIR) -> Path:
    """Path of the peer venv's Python interpreter (which may not exist yet)."""
    return peer_dir / "bin" / "python"


def _pip(python: Path, *args: str) -> None:
    cmd = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise PeerUnavailableError(
            f"pip failed ({' '.join(cmd)}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        )


def _check_import(python: Path, code: str) -> str:
    proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    if proc.returncode != 0:
        raise PeerUnavailableError(f"`{code}` fails in the peer venv:\n{proc.stderr[-2000:]}")
    return proc.stdout.strip()


def ensure_peer_venv(peer_dir: Path = DEFAULT_PEER_DIR, *, learn: bool = False) -> Path:
    """Create (once) the peer venv and return its Python interpreter.

    Args:
        peer_dir: where the venv lives (default ``.peer-venv`` at the repository root, or
            ``$UNITY_GYM_PEER_VENV``).
        learn: also install what ``mlagents-learn`` needs (torch 2.13.0 CPU, tensorboard, ...).

    Raises:
        PeerUnavailable: if pip cannot install the pinned packages.
    """
    python = peer_python(peer_dir)
    wanted = [_MARKER_ENVS, *([_MARKER_LEARN] if learn else [])]
    if all((peer_dir / marker).exists() for marker in wanted):
        return python
    peer_dir.parent.mkdir(parents=True, exist_ok=True)
    with _build_lock(peer_dir):
        return _build(peer_dir, python, learn=learn)


@contextmanager
def _build_lock(peer_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``<peer_dir>.lock`` while the venv is built.

    Several processes (pytest-xdist workers, a benchmark beside the tests) may ask for the venv at
    once on a fresh clone: one builds, the others wait and then find it ready.
    """
    with open(peer_dir.with_name(peer_dir.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build(peer_dir: Path, python: Path, *, learn: bool) -> Path:
    """The body of :func:`ensure_peer_venv`, run under its lock."""
    if not (peer_dir / _MARKER_ENVS).exists():
        _refuse_foreign_folder(peer_dir)
        venv.EnvBuilder(with_pip=True, clear=True).create(peer_dir)
        (peer_dir / _MARKER_BUILDING).write_text("building\n")
        _pip(python, *ENVS_DEPS)
        _pip(python, "--no-deps", "--ignore-requires-python", *OFFICIAL)
        check = subprocess.run(
            [
                str(python),
                "-c",
                "import mlagents_envs.environment, mlagents_envs; print(mlagents_envs.__version__)",
            ],
            capture_output=True,
            text=True,
        )
        if check.returncode != 0 or check.stdout.strip() != "1.1.0":
            raise PeerUnavailableError(
                f"mlagents_envs does not import in the peer venv:\n{check.stderr}"
            )
        (peer_dir / _MARKER_ENVS).write_text("ok\n")
        (peer_dir / _MARKER_BUILDING).unlink(missing_ok=True)
    if learn and not (peer_dir / _MARKER_LEARN).exists():
        _pip(python, *LEARN_DEPS)
        _check_import(python, "import mlagents.trainers.learn")
        (peer_dir / _MARKER_LEARN).write_text("ok\n")
    return python


def _refuse_foreign_folder(peer_dir: Path) -> None:
    """Refuse to build over a non-empty folder that no interrupted peer build left.

    Building clears the folder first; pointed at another folder by mistake (``UNITY_GYM_PEER_VENV``
    set to the project's own ``.venv``, say), that would delete it.

    Raises:
        PeerUnavailableError: ``peer_dir`` holds files and is not a peer venv being built.
    """
    if not peer_dir.is_dir() or (peer_dir / _MARKER_BUILDING).exists():
        return
    if any(peer_dir.iterdir()):
        raise PeerUnavailableError(
            f"{peer_dir} is not empty and is not a reference peer venv (it has no "
            f"{_MARKER_ENVS}), so it is not cleared to build one there. Point "
            "UNITY_GYM_PEER_VENV (or --dir) at a new folder, or delete that one yourself."
        )


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: build the venv and print its interpreter path."""
    parser = argparse.ArgumentParser(description="Build the official mlagents 1.1.0 peer venv.")
    parser.add_argument("--dir", type=Path, default=DEFAULT_PEER_DIR)
    parser.add_argument("--learn", action="store_true", help="also install mlagents-learn deps")
    ns = parser.parse_args(argv)
    print(ensure_peer_venv(ns.dir, learn=ns.learn))
    return 0


if __name__ == "__main__":
    sys.exit(main())
