"""Behavior ids as Unity writes them, ``<name>?team=<t>``, and the trainer that drives them.

Facts (ML-Agents' ``BehaviorIdentifiers``): a behavior id is the behavior name, with the suffix
``?team=<t>`` when the agent plays for team ``t``; teams of one name are one behavior.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["TrainerNamer", "behavior_base_name", "default_trainer_name", "team_of"]

TrainerNamer = Callable[[list[str]], str]
"""Maps the candidate names of a group of behaviors (the name without team first, then the
behavior ids, sorted) to the name of the trainer that drives them."""


def behavior_base_name(behavior_id: str) -> str:
    """The behavior name without its team suffix: ``"Tennis?team=1"`` -> ``"Tennis"``."""
    return behavior_id.split("?team=", 1)[0]


def team_of(behavior_id: str) -> int:
    """The team id of a behavior id: ``"Tennis?team=1"`` -> 1; 0 without a team suffix.

    Raises:
        ValueError: the suffix is not an integer.
    """
    if "?team=" not in behavior_id:
        return 0
    suffix = behavior_id.split("?team=", 1)[1]
    try:
        return int(suffix)
    except ValueError:
        raise ValueError(
            f"behavior id {behavior_id!r} has a team suffix that is not a number."
        ) from None


def default_trainer_name(candidates: list[str]) -> str:
    """The first candidate: the behavior name without its team suffix."""
    return candidates[0]
