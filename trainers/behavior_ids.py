"""Behavior ids as Unity writes them, ``<name>?team=<t>``, and the trainer that drives them.

Parsing ids is :mod:`unity_gym.behavior_names`' job (re-exported here as ``behavior_base_name``
and ``team_of``); this module adds how behaviors are grouped into trainers.

Facts (ML-Agents' ``BehaviorIdentifiers``): a behavior id is the behavior name, with the suffix
``?team=<t>`` when the agent plays for team ``t``; teams of one name are one behavior.
"""

from __future__ import annotations

from collections.abc import Callable

from unity_gym.behavior_names import plain_behavior_name as behavior_base_name
from unity_gym.behavior_names import team_of

__all__ = ["TrainerNamer", "behavior_base_name", "default_trainer_name", "team_of"]

TrainerNamer = Callable[[list[str]], str]
"""Maps the candidate names of a group of behaviors (the name without team first, then the
behavior ids, sorted) to the name of the trainer that drives them."""


def default_trainer_name(candidates: list[str]) -> str:
    """The first candidate: the behavior name without its team suffix."""
    return candidates[0]
