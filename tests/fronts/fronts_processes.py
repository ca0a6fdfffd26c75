"""Helpers of the fronts tests: finding game processes this test process started."""

from __future__ import annotations

import os
import time
from pathlib import Path


def live_child_pids() -> set[int]:
    """Pids of this process's children that are still running (zombies excluded)."""
    me = os.getpid()
    children = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces, so split after the last ')'.
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == me and state != "Z":
            children.add(int(entry.name))
    return children


def wait_until_gone(pids: set[int], timeout: float = 15.0) -> set[int]:
    """Wait until none of ``pids`` is a live child; return those still alive."""
    deadline = time.monotonic() + timeout
    while True:
        alive = pids & live_child_pids()
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)
