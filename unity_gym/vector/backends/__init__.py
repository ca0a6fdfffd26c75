"""Where game workers run: threads (``inprocess``), child processes (``subprocess``), Ray actors.

Backend modules are imported on demand, so Ray is only imported for ``backend="ray"``.
"""

from __future__ import annotations

from unity_gym.vector.backends.base import WorkerBackend, WorkerLostError

__all__ = ["WorkerBackend", "WorkerLostError"]
