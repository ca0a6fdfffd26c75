"""Workers as Ray actors (``backend="ray"``; install the ``unity-gym[ray]`` extra).

Each game runs inside one actor, which may live on any node of the Ray cluster (the actors are
spread over the nodes, ``scheduling_strategy="SPREAD"``, unless ``actor_options`` say
otherwise). Replies travel through Ray's object store: observation rows are numpy arrays, which
Ray hands to the vector env without unpickling them (zero-copy reads of the object store).
Completed requests are collected with ``ray.wait``, so replies are processed in completion order.

Lost actors: when an actor dies (its node was removed or crashed, or its process was killed),
a new actor is created for the same game, wherever the cluster has room, within the game's
restart limits (:class:`~unity_gym.vector.faults.RestartPolicy`, counted per game apart from
restarts of the game process itself). The new actor launches its own game and answers the
request the lost one never finished as a game restart would
(:meth:`~unity_gym.vector.game_worker.GameWorker.take_over`): the game's slots report
``truncated=True`` with ``info["restart_reason"]``. An actor that no node can host within the
game's ``timeout_wait`` is an error that names the resources it asked for.

If Ray is not initialized yet, the backend starts a local instance with ``ray.init()``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from unity_gym.exceptions import UnityEnvironmentException
from unity_gym.vector.backends.base import WorkerBackend
from unity_gym.vector.faults import RestartLimitError, RestartTracker
from unity_gym.vector.game_worker import GameWorker, WorkerConfig
from unity_gym.vector.messages import (
    RequestKind,
    TakeOver,
    WorkerReply,
    WorkerRequest,
)

__all__ = [
    "RayBackend",
    "RayPlacementError",
    "first_line",
    "game_actor_options",
    "placement_error",
    "ray_available",
    "source_tree_runtime_env",
    "this_node",
]

logger = logging.getLogger(__name__)


def ray_available() -> bool:
    """Whether the ``ray`` package can be imported."""
    return importlib.util.find_spec("ray") is not None


class RayPlacementError(UnityEnvironmentException):
    """No node of the Ray cluster could host a game's actor in time."""


def this_node() -> str:
    """Inside a Ray actor: the node it runs on, ``"Ray node <first 8 of id> (<ip>)"``."""
    import ray

    node_id = ray.get_runtime_context().get_node_id()
    return f"Ray node {node_id[:8]} ({ray.util.get_node_ip_address()})"


class _ActorBody:
    """What runs inside each Ray actor: a :class:`GameWorker` behind a few remote methods."""

    def __init__(self, config: WorkerConfig) -> None:
        self._worker = GameWorker(config)

    def where(self) -> str:
        """The node this actor runs on (:func:`this_node`)."""
        return this_node()

    def handle(self, request: WorkerRequest) -> WorkerReply:
        return self._worker.handle(request)

    def take_over(self, request: WorkerRequest, lost: TakeOver) -> WorkerReply:
        return self._worker.take_over(request, lost)

    def close(self) -> None:
        self._worker.close()


def source_tree_runtime_env() -> dict[str, Any]:
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


def game_actor_options(overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """Ray actor options of a game: ``num_cpus=0``, spread over the nodes, the source tree on
    ``PYTHONPATH`` when ``unity_gym`` is not installed, then ``overrides``."""
    options: dict[str, Any] = {"num_cpus": 0, "scheduling_strategy": "SPREAD"}
    runtime_env = source_tree_runtime_env()
    if runtime_env:
        options["runtime_env"] = runtime_env
    options.update(overrides or {})
    return options


@dataclass
class _Pending:
    """A call in flight: whose, which request, and (placement probes) until when."""

    worker: int
    request: WorkerRequest | None  # None: a placement probe (``where``)
    deadline: float | None = None


class RayBackend(WorkerBackend):
    """One Ray actor per game worker; lost actors are replaced (module documentation).

    Args:
        actor_options: options for ``ActorClass.options(...)`` (default ``{"num_cpus": 0,
            "scheduling_strategy": "SPREAD"}``: an actor mostly waits for its game, which is
            a separate process; give ``num_cpus``/``resources`` to reserve room per game).
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
        options = game_actor_options(actor_options)
        self._options = options
        self._actor_class = ray.remote(_ActorBody).options(**options)
        self._configs: list[WorkerConfig] = []
        self._actors: list[Any] = []
        self._locations: list[str] = []
        self._attach: list[WorkerRequest | None] = []
        self._last_rows: list[dict[str, Any] | None] = []
        self._trackers: list[RestartTracker] = []
        self._pending: dict[Any, _Pending] = {}
        self._relocating: set[int] = set()

    # -- WorkerBackend ------------------------------------------------------------------------

    def start(self, configs: Sequence[WorkerConfig]) -> None:
        """Create one actor per config (placement is checked against ``timeout_wait``)."""
        for config in configs:
            self._configs.append(config)
            self._actors.append(None)
            self._locations.append(NOT_PLACED)
            self._attach.append(None)
            self._last_rows.append(None)
            self._trackers.append(RestartTracker(config.restart_policy))
            self._create_actor(config.index)

    def submit(self, worker: int, request: WorkerRequest) -> None:
        """Call the actor's ``handle`` remotely."""
        if request.kind is RequestKind.ATTACH:
            self._attach[worker] = request
        ref = self._actors[worker].handle.remote(request)
        self._pending[ref] = _Pending(worker, request)

    def wait(self, timeout: float | None) -> list[WorkerReply]:
        """Replies of finished calls; lost actors are replaced (module documentation)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._pending:
            return []
        while True:
            replies = self._collect(deadline)
            if replies or not any(p.request is not None for p in self._pending.values()):
                return replies
            if deadline is not None and time.monotonic() >= deadline:
                return []

    def close(self, timeout: float) -> None:
        """Close every actor's game, then kill the actors."""
        ray = self._ray
        closing = []
        for actor in self._actors:
            with contextlib.suppress(Exception):
                closing.append(actor.close.remote())
        if closing:
            with contextlib.suppress(Exception):
                ray.wait(closing, num_returns=len(closing), timeout=timeout)
        for actor in self._actors:
            with contextlib.suppress(Exception):
                ray.kill(actor)
        self._actors.clear()
        self._pending.clear()

    def worker_location(self, worker: int) -> str:
        """Where ``worker``'s actor (and so its game) runs."""
        return self._locations[worker]

    # -- internals ----------------------------------------------------------------------------

    def _create_actor(self, worker: int) -> None:
        """A new actor for ``worker``, and a placement probe bounded by its ``timeout_wait``."""
        config = self._configs[worker]
        self._actors[worker] = self._actor_class.remote(config)
        self._locations[worker] = NOT_PLACED
        probe = self._actors[worker].where.remote()
        limit = float(config.settings.timeout_wait)
        self._pending[probe] = _Pending(worker, None, time.monotonic() + limit)

    def _collect(self, deadline: float | None) -> list[WorkerReply]:
        """One ``ray.wait`` round (up to the nearest deadline) and what came of it."""
        ray = self._ray
        now = time.monotonic()
        limits = [p.deadline for p in self._pending.values() if p.deadline is not None]
        if deadline is not None:
            limits.append(deadline)
        wait_s = None if not limits else max(0.0, min(limits) - now)
        refs = list(self._pending)
        ready, rest = ray.wait(refs, num_returns=1, timeout=wait_s)
        if ready and rest:
            more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
            ready = ready + more
        replies: list[WorkerReply] = []
        for ref in ready:
            pending = self._pending.pop(ref)
            try:
                result = ray.get(ref)
            except ray.exceptions.RayError as error:
                if pending.request is not None:
                    replies.extend(self._replace(pending.worker, pending.request, error))
                continue  # a failed probe: the call queued behind it reports the loss
            if pending.request is None:
                self._placed(pending.worker, str(result))
            else:
                if result.rows is not None:
                    self._last_rows[pending.worker] = result.rows
                replies.append(result)
        replies.extend(self._overdue_placements())
        return replies

    def _placed(self, worker: int, location: str) -> None:
        self._locations[worker] = location
        if worker in self._relocating:
            self._relocating.discard(worker)
            logger.warning("Game worker %d runs on %s now.", worker, location)
        else:
            logger.info("Game worker %d runs on %s.", worker, location)

    def _overdue_placements(self) -> list[WorkerReply]:
        """Error replies for workers whose actor no node took within ``timeout_wait``."""
        now = time.monotonic()
        replies: list[WorkerReply] = []
        for ref, pending in list(self._pending.items()):
            if pending.deadline is None or pending.deadline > now:
                continue
            worker = pending.worker
            del self._pending[ref]
            with contextlib.suppress(Exception):
                self._ray.kill(self._actors[worker])
            error = placement_error(
                f"game worker {worker}",
                self._configs[worker].settings.timeout_wait,
                self._options,
                "the per-game resources (unity-train: --ray-game-cpus, 0 allowed)",
            )
            for other, call in list(self._pending.items()):
                if call.worker == worker and call.request is not None:
                    del self._pending[other]
                    replies.append(
                        WorkerReply(worker, call.request.seq, call.request.kind, error=error)
                    )
        return replies

    def _replace(
        self, worker: int, request: WorkerRequest, error: BaseException
    ) -> list[WorkerReply]:
        """Replace ``worker``'s lost actor and resubmit ``request`` as a take-over.

        Returns:
            An error reply when the request cannot be continued (restart limits, CLOSE), else
            nothing (the take-over's reply comes later).
        """
        if request.kind is RequestKind.CLOSE:
            return [WorkerReply(worker, request.seq, request.kind)]
        try:
            what = admit_lost_actor(
                self._trackers[worker],
                f"Game process {worker}",
                f"game process {worker}",
                self._locations[worker],
                error,
            )
        except RestartLimitError as refused:
            return [WorkerReply(worker, request.seq, request.kind, error=refused)]
        logger.warning(
            "%s%s; starting it again wherever the cluster has room (restart %d).",
            what[0].upper(),
            what[1:],
            self._trackers[worker].restarts,
        )
        with contextlib.suppress(Exception):
            self._ray.kill(self._actors[worker])
        self._create_actor(worker)
        self._relocating.add(worker)
        if request.kind is RequestKind.START:
            ref = self._actors[worker].handle.remote(request)
        else:
            takeover = TakeOver(
                reason=f"{what}; restarted",
                attach=self._attach[worker],
                previous_rows=self._last_rows[worker],
            )
            ref = self._actors[worker].take_over.remote(request, takeover)
        self._pending[ref] = _Pending(worker, request)
        return []


NOT_PLACED = "not placed yet"
"""Where an actor runs before a node took it."""


def admit_lost_actor(
    tracker: RestartTracker, title: str, label: str, location: str, error: BaseException
) -> str:
    """Count the loss of the Ray actor that hosted a game as one restart of that game.

    One rule for both Ray fronts (the vector env's backend and ``RayParallelEnv``): a lost actor
    is replaced within the game's :class:`~unity_gym.game.faults.RestartPolicy`, with its own
    :class:`~unity_gym.game.faults.RestartTracker` (apart from the game's restarts inside the
    actor, which its :class:`~unity_gym.game.supervisor.GameSupervisor` counts).

    Args:
        tracker: the actor losses of this game so far.
        title: the game at the start of a message (``"Game process 3"``).
        label: the game in restart reasons (``"game process 3"``).
        location: where the actor ran (:data:`NOT_PLACED` before a node took it).
        error: Ray's error.

    Returns:
        What happened, ``"<label> lost its Ray actor on <location> (<Ray's error>)"``.

    Raises:
        RestartLimitError: the limits refuse a new actor.
    """
    where = "before it was placed" if location == NOT_PLACED else f"on {location}"
    what = f"lost its Ray actor {where} ({first_line(error)})"
    tracker.admit(title, what, error)
    return f"{label} {what}"


def first_line(error: BaseException) -> str:
    """The first line of ``error``'s message (its type's name when it has none), for reasons."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def placement_error(
    subject: str, timeout_wait: float, options: Mapping[str, Any], lower: str
) -> RayPlacementError:
    """The error for an actor of ``subject`` that no node took within ``timeout_wait``.

    Args:
        subject: what the actor runs (``"game worker 3"``).
        timeout_wait: the seconds it was given.
        options: its actor options (the resources it asked for are named).
        lower: what the user can lower (``"the per-game resources (...)"``).
    """
    import ray

    wanted = {
        key: value
        for key, value in options.items()
        if key in ("num_cpus", "num_gpus", "memory", "resources")
    }
    return RayPlacementError(
        f"No Ray node took {subject} within timeout_wait={timeout_wait:g} s: it asks for "
        f"{wanted}; the cluster has {_resources(ray.cluster_resources())} in all and "
        f"{_resources(ray.available_resources())} free. Add nodes, or lower {lower}."
    )


def _resources(amounts: dict[str, float]) -> str:
    """Ray resources for messages: CPUs, GPUs and custom ones, without memory and node tags."""
    shown = {
        name: amount
        for name, amount in amounts.items()
        if not name.startswith("node:") and "memory" not in name
    }
    return ", ".join(f"{amount:g} {name}" for name, amount in sorted(shown.items())) or "no CPU"
