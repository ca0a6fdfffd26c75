"""Behavior names as the game reports them, and the one rule that chooses a behavior by name.

Facts followed (ML-Agents' ``BehaviorIdentifiers.from_name_behavior_id`` and
``create_name_behavior_id``): a game reports each behavior under its fully-qualified name
``<name>?team=<t>``, the behavior name followed by a URL-style query whose ``team`` field is the
team id; a name without the query has team 0. ``Tennis?team=0`` and ``Tennis?team=1`` are two
behaviors sharing the name ``Tennis``.

**The selection rule** (:func:`select_behavior`), used by every front, the vector env's planning,
the player's demonstration recorder and its scenes: a requested name selects

1. the behavior whose full name it is (``"Tennis?team=1"``), else
2. the behavior whose plain name (without ``?team=<t>``) it is, when exactly one behavior has
   that plain name (``"3DBall"`` selects ``"3DBall?team=0"``; ``"Tennis"`` is ambiguous);

no request selects the game's only behavior. Anything else is an error that lists the names. It
is the most permissive rule that never guesses: every full name still works, and a plain name
works exactly when it names one behavior.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import parse_qs

from unity_gym.exceptions import UnityEnvironmentException, UnityMultipleBehaviorsException

__all__ = [
    "BehaviorSelectionError",
    "MultipleBehaviorsError",
    "full_behavior_name",
    "plain_behavior_name",
    "select_behavior",
    "split_behavior_name",
    "team_of",
]

_CHOOSE = "pass behavior_name=... to choose one, or drive them all with unity_gym.pettingzoo."


class BehaviorSelectionError(UnityEnvironmentException, ValueError):
    """A requested behavior name matches no behavior or several, or the game has none.

    Attributes:
        behavior_names: the game's behavior names, sorted.
    """

    def __init__(self, message: str, behavior_names: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.behavior_names = tuple(behavior_names)


class MultipleBehaviorsError(UnityMultipleBehaviorsException, ValueError):
    """No behavior was requested and the game has several (``behavior_names`` lists them)."""


def split_behavior_name(behavior_id: str) -> tuple[str, int]:
    """``(name, team id)`` of a behavior id: ``"Tennis?team=1"`` -> ``("Tennis", 1)``.

    A name without a ``?`` query, or whose query has no ``team`` field, has team 0.

    Raises:
        ValueError: the team is not an integer.
    """
    name, _, query = behavior_id.partition("?")
    teams = parse_qs(query).get("team")
    if not teams:
        return name, 0
    try:
        return name, int(teams[0])
    except ValueError:
        raise ValueError(
            f"behavior id {behavior_id!r} has a team suffix that is not a number; a behavior id "
            "is '<name>?team=<integer>'."
        ) from None


def plain_behavior_name(behavior_id: str) -> str:
    """The behavior name without its team query: ``"Tennis?team=1"`` -> ``"Tennis"``."""
    return behavior_id.partition("?")[0]


def team_of(behavior_id: str) -> int:
    """The team id of a behavior id: ``"Tennis?team=1"`` -> 1; 0 without a team suffix.

    Raises:
        ValueError: the team is not an integer.
    """
    return split_behavior_name(behavior_id)[1]


def full_behavior_name(name: str, team_id: int) -> str:
    """The fully-qualified behavior name: ``("Tennis", 1)`` -> ``"Tennis?team=1"``."""
    return f"{name}?team={team_id}"


def select_behavior(
    names: Iterable[str],
    requested: str | None,
    *,
    option: str = "behavior_name=",
    choose: str = _CHOOSE,
) -> str:
    """The full name of the behavior that ``requested`` selects among ``names`` (the module's rule).

    Args:
        names: the game's fully-qualified behavior names.
        requested: a full name, a plain name that only one behavior has, or ``None`` for the
            game's only behavior.
        option: how the caller's user spelled the request, quoted in errors
            (``"behavior_name="``, ``"--record-behavior "``).
        choose: the advice given when no behavior was requested and there are several.

    Raises:
        MultipleBehaviorsError: ``requested`` is None and there are several behaviors (also a
            :class:`~unity_gym.exceptions.UnityMultipleBehaviorsException` and a ``ValueError``).
        BehaviorSelectionError: there is no behavior, or ``requested`` matches none or several
            (also a :class:`~unity_gym.exceptions.UnityEnvironmentException` and a ``ValueError``).
    """
    ordered = tuple(sorted(set(names)))
    listed = ", ".join(ordered)
    if not ordered:
        raise BehaviorSelectionError(
            "The game reported no behavior: no agent requested a decision. Check that its agents "
            "have a Behavior Parameters component with the default (remote) behavior type."
        )
    if requested is None:
        if len(ordered) == 1:
            return ordered[0]
        message = f"The game has several behaviors ({listed}); {choose}"
        raise MultipleBehaviorsError(message, ordered)
    if requested in ordered:
        return requested
    matches = [name for name in ordered if plain_behavior_name(name) == requested]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise BehaviorSelectionError(
            f"{option}{requested!r} is ambiguous: behaviors {', '.join(matches)} all have that "
            "name; pass the full name with its ?team= suffix.",
            ordered,
        )
    raise BehaviorSelectionError(
        f"{option}{requested!r} is not a behavior of this game (not in the game's behaviors); "
        f"use one of: {listed}, or a name without its ?team= suffix that only one of them has.",
        ordered,
    )
