"""Workers as threads of the calling process (``backend="inprocess"``).

The bridge waits for its game without holding the GIL, so the games of several threads step
concurrently; decoding observations does take the GIL. Buffers are private numpy arrays shared
by the threads, so nothing is copied or pickled.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Sequence

from unity_gym.vector.backends.base import WorkerBackend, WorkerLostError
from unity_gym.vector.game_worker import GameWorker, WorkerConfig
from unity_gym.vector.messages import RequestKind, WorkerReply, WorkerRequest

__all__ = ["InProcessBackend"]


class InProcessBackend(WorkerBackend):
    """One daemon thread per game worker."""

    shares_memory = True

    def __init__(self) -> None:
        self._inboxes: list[queue.SimpleQueue[WorkerRequest | None]] = []
        self._threads: list[threading.Thread] = []
        self._replies: queue.SimpleQueue[WorkerReply] = queue.SimpleQueue()
        self._workers: list[GameWorker] = []

    def start(self, configs: Sequence[WorkerConfig]) -> None:
        """Start one thread per config."""
        for config in configs:
            inbox: queue.SimpleQueue[WorkerRequest | None] = queue.SimpleQueue()
            worker = GameWorker(config)
            thread = threading.Thread(
                target=self._serve,
                args=(worker, inbox),
                name=f"unity-vector-worker-{config.index}",
                daemon=True,
            )
            self._inboxes.append(inbox)
            self._workers.append(worker)
            self._threads.append(thread)
            thread.start()

    def _serve(self, worker: GameWorker, inbox: queue.SimpleQueue[WorkerRequest | None]) -> None:
        while True:
            request = inbox.get()
            if request is None:
                worker.close()
                return
            reply = worker.handle(request)
            self._replies.put(reply)
            if request.kind is RequestKind.CLOSE:
                return

    def submit(self, worker: int, request: WorkerRequest) -> None:
        """Queue ``request`` for the worker's thread."""
        if not self._threads[worker].is_alive():
            self._replies.put(
                WorkerReply(
                    worker=worker,
                    seq=request.seq,
                    kind=request.kind,
                    error=WorkerLostError(f"The thread of game worker {worker} has stopped."),
                )
            )
            return
        self._inboxes[worker].put(request)

    def wait(self, timeout: float | None) -> list[WorkerReply]:
        """Replies that arrived (at least one unless ``timeout`` passes)."""
        try:
            replies = [self._replies.get(timeout=timeout)]
        except queue.Empty:
            return []
        while True:
            try:
                replies.append(self._replies.get_nowait())
            except queue.Empty:
                return replies

    def close(self, timeout: float) -> None:
        """Ask each thread to close its game and wait for it."""
        for inbox, thread in zip(self._inboxes, self._threads, strict=True):
            if thread.is_alive():
                inbox.put(None)
        for thread in self._threads:
            thread.join(timeout)
        for worker, thread in zip(self._workers, self._threads, strict=True):
            if thread.is_alive():  # stuck in a game call: close the game under its feet
                worker.close()
        self._threads.clear()
        self._inboxes.clear()
        self._workers.clear()
