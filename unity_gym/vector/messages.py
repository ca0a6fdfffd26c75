"""Requests to a game worker and its replies (picklable; the same for every backend).

Every request carries a sequence number that its reply repeats, so the vector env can tell a
reply to the current request from a late reply to an abandoned one.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from unity_gym.base_env import BehaviorSpec
from unity_gym.vector.buffers import BufferLayout

__all__ = ["GameDescription", "RequestKind", "TakeOver", "WorkerReply", "WorkerRequest"]


class RequestKind(enum.Enum):
    """What a worker is asked to do."""

    START = "start"
    """Launch the game, reset it and describe its behavior (:class:`GameDescription`)."""
    ATTACH = "attach"
    """Use the vector env's buffers (or keep private rows and ship them) and report the reset."""
    RESET = "reset"
    """Reset the game (relaunch it when a new seed is given) and report first observations."""
    STEP = "step"
    """Act with the given actions until every slot has a result."""
    CLOSE = "close"
    """Close the game and release the buffers; the worker then exits."""


@dataclass
class WorkerRequest:
    """One command for a worker.

    Attributes:
        kind: the command.
        seq: sequence number, echoed by the reply.
        seed: RESET: the game seed to use (None: keep the current game, send Unity's RESET).
        continuous: STEP: float32 ``(slots, continuous_size)`` actions of the worker's slots;
            None when they are in the shared buffers.
        discrete: STEP: int32 ``(slots, branches)`` actions (None: in the shared buffers).
        layout: ATTACH: the buffer layout of the vector env.
        shared_name: ATTACH: shared-memory block to write into; None keeps private rows that
            every reply ships back.
        row_offset: ATTACH: first row of the worker's slots in the buffers.
        env_params: STEP/RESET: environment parameters that override the launch ones (every
            override so far, as given to ``UnityVectorEnv.set_env_params``); the worker sends
            the changed ones to its game before the request's first exchange and launches any
            restarted game with them. None: no override.
    """

    kind: RequestKind
    seq: int
    seed: int | None = None
    continuous: np.ndarray | None = None
    discrete: np.ndarray | None = None
    layout: BufferLayout | None = None
    shared_name: str | None = None
    row_offset: int = 0
    env_params: dict[str, Any] | None = None

    def __reduce__(self) -> tuple[type[WorkerRequest], tuple[Any, ...]]:
        return WorkerRequest, _field_values(self)


@dataclass
class TakeOver:
    """What a new worker needs to continue the slots of a lost one (a Ray actor whose node died).

    Attributes:
        reason: why the old worker is gone (becomes the slots' ``restart_reason``).
        attach: the ATTACH request the old worker had received (None: it had not).
        previous_rows: the rows of the old worker's last reply (observations and flags of the
            slots as the vector env last saw them; None before its first reply with rows).
    """

    reason: str
    attach: WorkerRequest | None = None
    previous_rows: dict[str, np.ndarray] | None = None


@dataclass(frozen=True)
class GameDescription:
    """What the first reset of a game revealed.

    Attributes:
        behavior_name: the behavior whose agents are the slots.
        behavior_spec: its spec.
        num_agents: agents of that behavior that requested the first decision (= slots).
        behavior_names: every behavior of the game.
        pid: process id of the game (None when not known).
    """

    behavior_name: str
    behavior_spec: BehaviorSpec
    num_agents: int
    behavior_names: tuple[str, ...]
    pid: int | None


@dataclass
class WorkerReply:
    """A worker's answer to one :class:`WorkerRequest`.

    Observations, rewards, flags and info columns are in the buffers (or in :attr:`rows` for
    workers that cannot share memory); everything here is small.

    Attributes:
        worker: index of the worker.
        seq: the request's sequence number.
        kind: the request's kind.
        description: START: the game's description.
        restart_reason: set when the game had to be restarted during this request.
        game_pid: process id of the worker's game after the request (None if not running).
        events: ``(logging level, message)`` lines for the vector env's log.
        timer_tree: the worker's timer tree since its previous report (periodically).
        rows: the worker's buffer rows, for workers without shared memory.
        stats: what the game sent on its stats side channel since the worker's previous reply,
            as ``{key: [(value, aggregation method value), ...]}`` in arrival order (plain types;
            also from a game that crashed during the request; None when nothing came).
        error: the exception that failed the request (the worker is unusable afterwards for
            START/ATTACH failures and restart-limit errors).
    """

    worker: int
    seq: int
    kind: RequestKind
    description: GameDescription | None = None
    restart_reason: str | None = None
    game_pid: int | None = None
    events: list[tuple[int, str]] = field(default_factory=list)
    timer_tree: dict[str, Any] | None = None
    rows: dict[str, np.ndarray] | None = None
    stats: dict[str, list[tuple[float, int]]] | None = None
    error: BaseException | None = None

    def log_events(self, target: logging.Logger) -> None:
        """Emit :attr:`events` on ``target``."""
        for level, message in self.events:
            target.log(level, message)

    def __reduce__(self) -> tuple[type[WorkerReply], tuple[Any, ...]]:
        return WorkerReply, _field_values(self)


def _field_values(message: WorkerRequest | WorkerReply) -> tuple[Any, ...]:
    """The field values of ``message`` in declaration order: what requests and replies pickle
    as (with their class), since one of each crosses a worker's pipe per game step and this is
    about half the bytes and the time of pickling the instance's ``__dict__``."""
    return tuple(getattr(message, name) for name in _FIELD_NAMES[type(message)])


_FIELD_NAMES = {
    kind: tuple(spec.name for spec in fields(kind)) for kind in (WorkerRequest, WorkerReply)
}
