"""The contract between the vector env and the place its game workers run."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from unity_gym.exceptions import UnityEnvironmentException
from unity_gym.vector.game_worker import WorkerConfig
from unity_gym.vector.messages import WorkerReply, WorkerRequest

__all__ = ["WorkerBackend", "WorkerLostError"]


class WorkerLostError(UnityEnvironmentException):
    """A worker (thread, process or Ray actor) vanished before answering."""


class WorkerBackend(ABC):
    """Runs one :class:`~unity_gym.vector.game_worker.GameWorker` per game and carries messages.

    Requests to one worker are executed in the order they were submitted; replies of different
    workers arrive in completion order.
    """

    shares_memory: bool = True
    """Whether workers can write into the vector env's shared-memory buffers (else they ship
    their rows in every reply)."""

    @abstractmethod
    def start(self, configs: Sequence[WorkerConfig]) -> None:
        """Create one worker per config (worker ``i`` gets ``configs[i]``)."""

    @abstractmethod
    def submit(self, worker: int, request: WorkerRequest) -> None:
        """Queue ``request`` for ``worker`` without waiting."""

    @abstractmethod
    def wait(self, timeout: float | None) -> list[WorkerReply]:
        """Replies that arrived, waiting up to ``timeout`` seconds (None: forever) for one.

        Returns an empty list on timeout. A worker that vanished yields a reply whose ``error``
        is a :class:`WorkerLostError`.
        """

    def worker_location(self, worker: int) -> str:
        """Where ``worker`` (and so its game) runs, for logs (default: this machine)."""
        return "this machine"

    @abstractmethod
    def close(self, timeout: float) -> None:
        """Stop every worker (politely for ``timeout`` seconds, then by force); idempotent."""
