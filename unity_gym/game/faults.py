"""When a crashed or hung game may be restarted: lifetime and rate limits per game process.

The limits mirror ``mlagents-learn``'s environment settings: a game may be restarted at most
``max_lifetime_restarts`` times in total and at most ``restarts_rate_limit_n`` times within any
``restarts_rate_limit_period_s`` seconds; ``-1`` lifts a limit.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from unity_gym.exceptions import UnityEnvironmentException, UnityTimeOutException

if TYPE_CHECKING:
    from unity_gym.game.settings import GameSettings

__all__ = [
    "RestartLimitError",
    "RestartPolicy",
    "RestartTracker",
    "describe_game_failure",
    "editor_wait_message",
]


class RestartLimitError(UnityEnvironmentException):
    """A game failed once more than its :class:`RestartPolicy` allows."""


@dataclass(frozen=True)
class RestartPolicy:
    """How often one game process may be restarted after a crash or a hang.

    Attributes:
        max_lifetime_restarts: restarts allowed over the vector env's life (``-1``: no limit).
        restarts_rate_limit_n: restarts allowed within one period (``-1``: no limit).
        restarts_rate_limit_period_s: length in seconds of the rate-limit window.
    """

    max_lifetime_restarts: int = 10
    restarts_rate_limit_n: int = 1
    restarts_rate_limit_period_s: float = 60.0

    def __post_init__(self) -> None:
        for name in ("max_lifetime_restarts", "restarts_rate_limit_n"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < -1:
                raise ValueError(f"{name} must be an integer >= -1 (-1 = no limit), got {value!r}.")
        if not self.restarts_rate_limit_period_s > 0:
            raise ValueError(
                "restarts_rate_limit_period_s must be a positive number of seconds, got "
                f"{self.restarts_rate_limit_period_s!r}."
            )


class RestartTracker:
    """Counts the restarts of one game and refuses those beyond its :class:`RestartPolicy`.

    Args:
        policy: the limits.
        clock: monotonic time source in seconds (replaceable for tests of the window logic).
    """

    def __init__(self, policy: RestartPolicy, clock: Callable[[], float] = time.monotonic) -> None:
        self.policy = policy
        self._clock = clock
        self._recent: deque[float] = deque()
        self.restarts = 0
        """Restarts granted so far."""

    def refusal(self) -> str | None:
        """Why one more restart is not allowed now, or None if it is."""
        policy = self.policy
        now = self._clock()
        while self._recent and self._recent[0] <= now - policy.restarts_rate_limit_period_s:
            self._recent.popleft()
        if policy.max_lifetime_restarts != -1 and self.restarts >= policy.max_lifetime_restarts:
            return (
                f"it was already restarted {self.restarts} times (max_lifetime_restarts="
                f"{policy.max_lifetime_restarts}); raise max_lifetime_restarts (-1 = no limit) "
                "if the game is expected to fail that often"
            )
        if policy.restarts_rate_limit_n != -1 and len(self._recent) >= policy.restarts_rate_limit_n:
            return (
                f"it was already restarted {len(self._recent)} times in the last "
                f"{policy.restarts_rate_limit_period_s:g} s (restarts_rate_limit_n="
                f"{policy.restarts_rate_limit_n}); raise restarts_rate_limit_n or lower "
                "restarts_rate_limit_period_s (-1 = no limit)"
            )
        return None

    def grant(self) -> None:
        """Record a restart; call only after :meth:`refusal` returned None."""
        self.restarts += 1
        self._recent.append(self._clock())

    def admit(self, game: str, reason: str, error: BaseException) -> None:
        """Grant one more restart, or raise if the limits refuse it.

        Args:
            game: names the game in the message (``"Game process 1"``).
            reason: what happened to it (:func:`describe_game_failure`).
            error: the bridge's exception (chained, and its text appended).

        Raises:
            RestartLimitError: the limits refuse the restart (nothing is recorded).
        """
        refusal = self.refusal()
        if refusal is not None:
            raise RestartLimitError(
                f"{game} {reason} and is not restarted: {refusal}.\n{error}"
            ) from error
        self.grant()


def describe_game_failure(error: BaseException, timeout_wait: float) -> str:
    """What happened to a game whose bridge raised ``error``, for messages and restart reasons.

    Returns:
        ``"stopped answering (no message within timeout_wait=<s> s)"`` for a
        :class:`~unity_gym.exceptions.UnityTimeOutException`, else ``"crashed (<first line of
        the error>)"``.
    """
    if isinstance(error, UnityTimeOutException):
        return f"stopped answering (no message within timeout_wait={timeout_wait:g} s)"
    first_line = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
    return f"crashed ({first_line})"


def editor_wait_message(settings: GameSettings, reason: str) -> str:
    """What to tell the user when the Unity Editor's game (``settings.editor``) is restarted.

    A restart of the Editor's game launches nothing: it waits (up to ``timeout_wait``) on the
    same port for Play to be pressed again, so the user has to be told before the wait starts.

    Args:
        settings: the game's settings (``editor=True``).
        reason: what happened, from :func:`describe_game_failure`.
    """
    from unity_gym.environment import UnityEnvironment

    port = settings.base_port or UnityEnvironment.DEFAULT_EDITOR_PORT
    return (
        f"The Unity Editor's game {reason} (Play stopped, or the Editor closed). Listening on "
        f"port {port} again: press Play in the Unity Editor within {settings.timeout_wait:g} s "
        "to go on training."
    )
