"""Process helpers shared by the tests (importable by name, unlike ``conftest``)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "QUIT_ON_OFFICIAL_CLOSE",
    "ProcessTree",
    "eventually",
    "group_members",
    "kill_ray_actor",
    "pid_alive",
    "process_tree",
    "python_path_with",
    "survivors",
]

#: The player's log line when the official ``close()`` ends it: that answers with status 400 and
#: stops its server without grace, so the player sees either the 400 or the connection dropping;
#: both must end it normally.
QUIT_ON_OFFICIAL_CLOSE = re.compile(
    r"Quitting: the trainer (closed the connection \(status 400\)|disappeared)"
)

ProcessTree = dict[int, tuple[str, str]]
"""pid -> (start time in clock ticks since boot, command line) of a set of processes."""


def python_path_with(folder: Path) -> str:
    """A ``PYTHONPATH`` value that puts ``folder`` first (so a game process imports its scenes)."""
    existing = os.environ.get("PYTHONPATH")
    return str(folder) if not existing else f"{folder}{os.pathsep}{existing}"


def pid_alive(pid: int) -> bool:
    """True if ``pid`` is a running (not zombie) process."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def group_members(group: int) -> list[int]:
    """Live (non-zombie) processes of process group ``group``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[2] == str(group) and fields[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members


def eventually(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll ``predicate`` until true or ``timeout`` seconds passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def kill_ray_actor(actor: Any) -> None:
    """Kill a Ray actor (no restart by Ray) and wait until Ray reports it dead.

    ``ray.kill`` is asynchronous: a call sent right after it may still run in the actor. The
    actor must have a ``where`` method (both of unity_gym's game actors have one).
    """
    import ray

    ray.kill(actor, no_restart=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            ray.get(actor.where.remote(), timeout=5)
        except ray.exceptions.RayActorError:
            return
        time.sleep(0.05)
    raise AssertionError("a Ray actor outlived ray.kill by 30 s")


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), [] if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def process_tree(root: int) -> ProcessTree:
    """``root`` and all its live (non-zombie) descendants now, read from ``/proc``."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if len(fields) > 19 and fields[0] not in ("Z", "X"):
                parents[int(entry.name)] = int(fields[1])
    members = {root}
    while True:
        found = {pid for pid, ppid in parents.items() if ppid in members} - members
        if not found:
            break
        members |= found
    tree: ProcessTree = {}
    for pid in members:
        fields = _stat(pid)
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if len(fields) > 19 and fields[0] not in ("Z", "X"):
            tree[pid] = (fields[19], command.strip())
    return tree


def survivors(tree: ProcessTree) -> ProcessTree:
    """The processes of ``tree`` still running (same pid and start time, not a zombie)."""
    alive: ProcessTree = {}
    for pid, (started, command) in tree.items():
        fields = _stat(pid)
        if len(fields) > 19 and fields[19] == started and fields[0] not in ("Z", "X"):
            alive[pid] = (started, command)
    return alive
