"""Exceptions raised by the bridge.

Named as in ``mlagents_envs.exception`` (without the ``Error`` suffix) so migrations keep working.
"""

from __future__ import annotations

__all__ = [
    "UnityActionException",
    "UnityCommunicationException",
    "UnityCommunicatorStoppedException",
    "UnityEnvironmentException",
    "UnityException",
    "UnityGameExitedException",
    "UnityMultipleBehaviorsException",
    "UnityObservationException",
    "UnityPolicyException",
    "UnitySideChannelException",
    "UnityTimeOutException",
    "UnityWorkerInUseException",
]


class UnityException(Exception):
    """Base class of every error raised by unity_gym's bridge."""


class UnityEnvironmentException(UnityException):
    """The game could not be launched, exited, or is not compatible."""


class UnityGameExitedException(UnityEnvironmentException):
    """The launched game process exited (crashed, was killed or quit) while the bridge waited.

    A :class:`UnityEnvironmentException`, as in ``mlagents_envs``; the subclass tells a game that
    ran and died apart from one that could not be launched at all.
    """


class UnityMultipleBehaviorsException(UnityEnvironmentException):
    """The game has several behaviors but the front drives one and none was chosen.

    Choose one with ``behavior_name=...``, or drive them all through
    :mod:`unity_gym.pettingzoo`.

    Attributes:
        behavior_names: the game's behavior names (sorted), when the raiser knew them.
    """

    def __init__(self, message: str, behavior_names: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.behavior_names = tuple(behavior_names)


class UnityCommunicationException(UnityException):
    """The game sent a message that violates the protocol."""


class UnityCommunicatorStoppedException(UnityException):
    """The game closed the connection (it sent a header-400 message or disappeared)."""


class UnityObservationException(UnityException):
    """An observation could not be decoded into the shape its spec announces."""


class UnityActionException(UnityException):
    """Actions given by the user do not match the behavior's action spec."""


class UnityPolicyException(UnityException):
    """A policy (trainer side) failed; ``mlagents_envs.exception.UnityPolicyException``."""


class UnityTimeOutException(UnityException):
    """The game did not answer within ``timeout_wait`` seconds."""


class UnitySideChannelException(UnityException):
    """A side channel payload was malformed or sent on a channel that does not accept it."""


class UnityWorkerInUseException(UnityException):
    """The requested port is already used by another process."""

    def __init__(self, worker_id: int | str) -> None:
        super().__init__(
            f"Couldn't start the environment: port for worker_id {worker_id} is in use. "
            "Pass a different worker_id/base_port, or leave base_port unset to get a free port."
        )
