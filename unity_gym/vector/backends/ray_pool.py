"""Workers as Ray actors (``backend="ray"``; install the ``unity-gym[ray]`` extra).

Each game runs inside one actor, which may live on any node of the Ray cluster. Replies travel
through Ray's object store: observation rows are numpy arrays, which Ray hands to the vector env
without unpickling them (zero-copy reads of the object store). Completed requests are collected
with ``ray.wait``, so replies are processed in completion order.

If Ray is not initialized yet, the backend starts a local instance with ``ray.init()``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from unity_gym.vector.backends.base import WorkerBackend, WorkerLostError
from unity_gym.vector.game_worker import GameWorker, WorkerConfig
from unity_gym.vector.messages import RequestKind, WorkerReply, WorkerRequest

__all__ = ["RayBackend", "ray_available"]


def ray_available() -> bool:
    """Whether the ``ray`` package can be imported."""
    return importlib.util.find_spec("ray") is not None


class _ActorBody:
    """What runs inside each Ray actor: a :class:`GameWorker` behind one remote method."""

    def __init__(self, config: WorkerConfig) -> None:
        self._worker = GameWorker(config)

    def handle(self, request: WorkerRequest) -> WorkerReply:
        return self._worker.handle(request)

    def close(self) -> None:
        self._worker.close()


def _source_tree_runtime_env() -> dict[str, Any]:
    """A ``runtime_env`` that lets actors import ``unity_gym`` when it is not installed."""
    root = str(Path(__file__).resolve().parents[3])
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        distribution("unity-gym")
        return {}
    except PackageNotFoundError:
        existing = os.environ.get("PYTHONPATH")
        path = root if not existing else f"{root}{os.pathsep}{existing}"
        return {"env_vars": {"PYTHONPATH": path}}


class RayBackend(WorkerBackend):
    """One Ray actor per game worker.

    Args:
        actor_options: options for ``ActorClass.options(...)`` (default ``{"num_cpus": 0}``:
            an actor mostly waits for its game, which is a separate process).
        init_kwargs: arguments of ``ray.init`` when Ray is not initialized yet.

    Raises:
        ImportError: if Ray is not installed (``pip install unity-gym[ray]``).
    """

    shares_memory = False

    def __init__(
        self,
        actor_options: dict[str, Any] | None = None,
        init_kwargs: dict[str, Any] | None = None,
    ) -> None:
        try:
            import ray
        except ImportError as error:
            raise ImportError(
                'backend="ray" needs Ray: install it with `pip install "unity-gym[ray]"` (or '
                '`pip install ray`), or choose backend="subprocess".'
            ) from error
        self._ray: Any = ray
        if not ray.is_initialized():
            ray.init(**(init_kwargs or {}))
        options = {"num_cpus": 0}
        runtime_env = _source_tree_runtime_env()
        if runtime_env:
            options["runtime_env"] = runtime_env  # type: ignore[assignment]
        options.update(actor_options or {})
        self._actor_class = ray.remote(_ActorBody).options(**options)
        self._actors: list[Any] = []
        self._pending: dict[Any, tuple[int, int, RequestKind]] = {}

    def start(self, configs: Sequence[WorkerConfig]) -> None:
        """Create one actor per config."""
        for config in configs:
            self._actors.append(self._actor_class.remote(config))

    def submit(self, worker: int, request: WorkerRequest) -> None:
        """Call the actor's ``handle`` remotely."""
        ref = self._actors[worker].handle.remote(request)
        self._pending[ref] = (worker, request.seq, request.kind)

    def wait(self, timeout: float | None) -> list[WorkerReply]:
        """Replies of finished calls (``ray.wait``), lost-actor replies for failed ones."""
        if not self._pending:
            return []
        ray = self._ray
        refs = list(self._pending)
        ready, rest = ray.wait(refs, num_returns=1, timeout=timeout)
        if not ready:
            return []
        if rest:
            more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
            ready = ready + more
        replies: list[WorkerReply] = []
        for ref in ready:
            worker, seq, kind = self._pending.pop(ref)
            try:
                replies.append(ray.get(ref))
            except ray.exceptions.RayError as error:
                replies.append(
                    WorkerReply(
                        worker=worker,
                        seq=seq,
                        kind=kind,
                        error=WorkerLostError(
                            f"The Ray actor of game worker {worker} failed: {error}"
                        ),
                    )
                )
        return replies

    def close(self, timeout: float) -> None:
        """Close every actor's game, then kill the actors."""
        ray = self._ray
        closing = [actor.close.remote() for actor in self._actors]
        if closing:
            with contextlib.suppress(Exception):
                ray.wait(closing, num_returns=len(closing), timeout=timeout)
        for actor in self._actors:
            with contextlib.suppress(Exception):
                ray.kill(actor)
        self._actors.clear()
        self._pending.clear()
