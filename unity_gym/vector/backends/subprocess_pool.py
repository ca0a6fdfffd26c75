"""Workers as child processes (``backend="subprocess"``, the default).

Each worker process runs its game through the bridge, decodes observations and writes them into
the vector env's shared-memory buffers; only small messages (actions, info columns) travel through
its pipe. Children are started with ``spawn`` by default (safe next to gRPC threads) and ignore
Ctrl-C (the parent shuts them down).

A worker exits, and takes its game's whole process group with it, within about
:data:`PARENT_POLL_S` seconds of its parent's death, even a SIGKILL, whatever it is doing: a
worker busy in a request (a game that takes long to start, a step that waits up to
``timeout_wait``) reads nothing from its pipe and so would not see the parent go. A daemon thread
watches instead (:func:`watch_parent`): it waits on the parent's sentinel (the pipe whose end
only the parent holds; on Windows the parent's process handle) and checks that the worker's
parent pid is still the parent's (POSIX reparents an orphan; this also covers the ``fork`` start
method, where sibling workers inherit the sentinel's other end). When the parent is gone it
SIGKILLs the games' process groups (:func:`unity_gym.launcher.kill_launched_games`) and ends the
worker with :func:`os._exit` (:data:`PARENT_GONE_EXIT_CODE`). ``PR_SET_PDEATHSIG`` is not used for
workers: it fires when the parent *thread* that started the worker exits, and a vector env may
be created from a thread that ends before the env does. Shared-memory buffers the dead parent
left are unlinked by ``multiprocessing``'s resource tracker once every worker has exited.

With ``spawn`` and ``forkserver``, a worker is started without running the main script again
whenever its config refers to nothing defined there (:mod:`unity_gym.vector.backends.main_script`):
a script that creates the vector env at module level, without an ``if __name__ == "__main__":``
guard, works, and its other module-level code does not run again in each worker. When the config
does refer to the main script and the script creates a vector env at import time, the worker stops
at once and :class:`WorkerLostError` says to add the guard or to use ``backend="inprocess"``.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import selectors
import signal
import threading
from collections.abc import Sequence
from multiprocessing import resource_tracker
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_for_ready
from multiprocessing.process import BaseProcess
from typing import Any

from unity_gym.exceptions import UnityEnvironmentException
from unity_gym.launcher import kill_launched_games
from unity_gym.vector.backends.base import WorkerBackend, WorkerLostError
from unity_gym.vector.backends.main_script import (
    MAIN_REIMPORT_EXIT_CODE,
    main_references,
    refuse_main_reimport,
    without_main_script,
)
from unity_gym.vector.game_worker import GameWorker, WorkerConfig
from unity_gym.vector.messages import RequestKind, WorkerReply, WorkerRequest

__all__ = [
    "PARENT_GONE_EXIT_CODE",
    "PARENT_POLL_S",
    "SubprocessBackend",
    "serve_connection",
    "watch_parent",
]

PARENT_POLL_S = 0.25
"""Seconds between two checks of a worker's parent (the sentinel wakes the watcher sooner)."""

PARENT_GONE_EXIT_CODE = 75
"""Exit status of a worker that ended because its parent died."""


def _parent_gone(parent_pid: int, sentinel: Any, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds; True once the parent ``parent_pid`` is known dead."""
    if sentinel is not None:
        try:
            if wait_for_ready([sentinel], timeout):
                return True
        except (OSError, ValueError):
            sentinel = None  # closed under us: fall back to the pid check below
    if sentinel is None:
        threading.Event().wait(timeout)
    return os.name == "posix" and os.getppid() != parent_pid


def watch_parent(parent_pid: int | None = None, sentinel: Any = None) -> threading.Thread:
    """Start a daemon thread that ends this process when its parent dies (module docs).

    Args:
        parent_pid: the pid this process's parent pid must keep (default: ``os.getppid()`` now;
            with ``forkserver`` that is the fork server, which exits when the vector env's
            process dies).
        sentinel: something :func:`multiprocessing.connection.wait` reports ready when the
            parent has died (default: ``multiprocessing.parent_process().sentinel``, None
            outside a ``multiprocessing`` child: the pid alone is checked then).

    Returns:
        The started thread (it never returns while the parent lives).
    """
    parent = multiprocessing.parent_process()
    watched_pid = os.getppid() if parent_pid is None else parent_pid
    if sentinel is None and parent is not None:
        with contextlib.suppress(ValueError, AttributeError):
            sentinel = parent.sentinel

    def watch() -> None:
        while not _parent_gone(watched_pid, sentinel, PARENT_POLL_S):
            pass
        kill_launched_games()
        os._exit(PARENT_GONE_EXIT_CODE)

    thread = threading.Thread(target=watch, name="unity-vector-parent-watch", daemon=True)
    thread.start()
    return thread


def serve_connection(connection: Connection, config: WorkerConfig) -> None:
    """Body of a worker process: execute requests from ``connection`` until CLOSE or EOF.

    The process ends on its own, its games killed, when its parent dies (:func:`watch_parent`).
    """
    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch_parent()
    worker = GameWorker(config)
    try:
        while True:
            try:
                request: WorkerRequest = connection.recv()
            except (EOFError, OSError):
                return  # the vector env is gone
            reply = worker.handle(request)
            try:
                connection.send(reply)
            except (pickle.PicklingError, TypeError, AttributeError) as error:
                reply.error = UnityEnvironmentException(
                    f"Game worker {config.index} failed with an error that cannot be sent to "
                    f"the vector env ({error}): {reply.error!r}"
                )
                connection.send(reply)
            if request.kind is RequestKind.CLOSE:
                return
    finally:
        worker.close()
        connection.close()


class SubprocessBackend(WorkerBackend):
    """One child process per game worker.

    Args:
        start_method: ``multiprocessing`` start method (``"spawn"``, ``"forkserver"`` or
            ``"fork"``; ``fork`` is unsafe once gRPC threads run in this process).
    """

    shares_memory = True

    def __init__(self, start_method: str = "spawn") -> None:
        try:
            self._context: Any = multiprocessing.get_context(start_method)
        except ValueError:
            raise ValueError(
                f"start_method={start_method!r} is not available here; use one of "
                f"{multiprocessing.get_all_start_methods()}."
            ) from None
        self._connections: list[Connection] = []
        self._processes: list[BaseProcess] = []
        self._in_flight: dict[int, tuple[int, RequestKind]] = {}
        self._selector = selectors.DefaultSelector()
        self._dead: set[int] = set()
        self._main_references: dict[int, list[str]] = {}

    def start(self, configs: Sequence[WorkerConfig]) -> None:
        """Start one process per config.

        With ``spawn``/``forkserver``, a worker whose config refers to nothing of ``__main__``
        starts without running the main script again (see the module documentation).
        """
        method = self._context.get_start_method()
        refuse_main_reimport(method)
        if method == "fork":
            # Forked workers then share this process's tracker (spawned ones are given it): a
            # tracker of their own would unlink the shared buffers when they exit.
            resource_tracker.ensure_running()
        for config in configs:
            parent, child = self._context.Pipe(duplex=True)
            process = self._context.Process(
                target=serve_connection,
                args=(child, config),
                name=f"unity-vector-worker-{config.index}",
                daemon=True,
            )
            references = main_references(config) if method != "fork" else []
            launch = without_main_script() if not references else contextlib.nullcontext()
            with launch:
                process.start()
            child.close()
            worker = len(self._connections)
            self._main_references[worker] = references
            self._connections.append(parent)
            self._processes.append(process)
            self._selector.register(parent, selectors.EVENT_READ, worker)
            self._selector.register(process.sentinel, selectors.EVENT_READ, worker)

    def submit(self, worker: int, request: WorkerRequest) -> None:
        """Send ``request`` down the worker's pipe."""
        self._in_flight[worker] = (request.seq, request.kind)
        # A dead worker is reported by wait() through its process sentinel.
        with contextlib.suppress(BrokenPipeError, OSError):
            self._connections[worker].send(request)

    def wait(self, timeout: float | None) -> list[WorkerReply]:
        """Replies that arrived, plus a lost-worker reply for each dead busy process."""
        if not self._in_flight:
            return []
        lost = [worker for worker in self._dead if worker in self._in_flight]
        if lost:
            return [self._lost(worker) for worker in lost]
        events = self._selector.select(timeout)
        readable = {key.data for key, _ in events if key.fileobj is self._connections[key.data]}
        replies: list[WorkerReply] = []
        for worker in sorted({key.data for key, _ in events}):
            if worker in readable:
                try:
                    reply: WorkerReply = self._connections[worker].recv()
                except (EOFError, OSError):
                    pass
                else:
                    in_flight = self._in_flight.get(worker)
                    if in_flight is not None and reply.seq == in_flight[0]:
                        del self._in_flight[worker]
                    replies.append(reply)
                    continue
            if not self._processes[worker].is_alive():
                self._forget(worker)
                if worker in self._in_flight:
                    replies.append(self._lost(worker))
        return replies

    def _forget(self, worker: int) -> None:
        """Stop watching a dead worker (its handles would be ready forever)."""
        self._dead.add(worker)
        for handle in (self._connections[worker], self._processes[worker].sentinel):
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(handle)

    def _lost(self, worker: int) -> WorkerReply:
        seq, kind = self._in_flight.pop(worker)
        process = self._processes[worker]
        process.join(0.1)
        if process.exitcode == MAIN_REIMPORT_EXIT_CODE:
            message = self._unguarded_main_message(worker)
        else:
            message = (
                f"The process of game worker {worker} (pid {process.pid}) exited with code "
                f"{process.exitcode} before answering; its game is gone too. Look above for "
                "its error output."
            )
        return WorkerReply(worker=worker, seq=seq, kind=kind, error=WorkerLostError(message))

    def _unguarded_main_message(self, worker: int) -> str:
        """Why a worker that re-ran the main script stopped, and what to change."""
        references = self._main_references.get(worker) or []
        because = (
            f"its settings refer to {', '.join(references)}, defined in your main script, "
            "so multiprocessing had to run that script again in the worker"
            if references
            else "multiprocessing ran your main script again in the worker"
        )
        return (
            f"Game worker {worker} could not start: {because}, and the script creates a vector "
            "env at import time (module level). Put the code that creates the env under "
            'if __name__ == "__main__":, or pass backend="inprocess" to keep the workers in '
            "this process."
        )

    def close(self, timeout: float) -> None:
        """Ask every worker to close its game, then terminate stragglers."""
        for connection, process in zip(self._connections, self._processes, strict=True):
            if process.is_alive():
                with contextlib.suppress(BrokenPipeError, OSError):
                    connection.send(WorkerRequest(kind=RequestKind.CLOSE, seq=-1))
        for process in self._processes:
            process.join(timeout)
        for process in self._processes:
            if process.is_alive():
                process.terminate()
                process.join(2.0)
            if process.is_alive() and process.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGKILL)
                process.join(1.0)
        for worker in range(len(self._connections)):
            self._forget(worker)
        for connection in self._connections:
            connection.close()
        self._connections.clear()
        self._processes.clear()
        self._in_flight.clear()
        self._dead.clear()
        self._main_references.clear()
