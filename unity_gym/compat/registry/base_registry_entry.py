"""``mlagents_envs.registry.base_registry_entry``: what every registry entry has.

Follows the official ``BaseRegistryEntry`` (ml-agents 1.1.0): an entry is built from
``identifier``, ``expected_reward`` and ``description`` (read back as properties of those names)
and opens its environment with ``make(**kwargs)``. As officially, the class is not an ABC
(``BaseRegistryEntry(...)`` can be built) and its ``make`` raises :class:`NotImplementedError`.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from unity_gym.base_env import BaseEnv

__all__ = ["BaseEnv", "BaseRegistryEntry"]


class BaseRegistryEntry:
    """One environment of a :class:`~unity_gym.compat.registry.UnityEnvRegistry`.

    Args:
        identifier: the environment's name, its key in the registry.
        expected_reward: the cumulative reward at which the task counts as solved, if known.
        description: human-readable text about the environment (observations, actions,
            agents, ``make`` arguments), if any.
    """

    def __init__(
        self,
        identifier: str,
        expected_reward: float | None,
        description: str | None,
    ) -> None:
        self._identifier = identifier
        self._expected_reward = expected_reward
        self._description = description

    @property
    def identifier(self) -> str:
        """The entry's unique name (its key in a registry)."""
        return self._identifier

    @property
    def expected_reward(self) -> float | None:
        """Cumulative reward an agent must reach for the task to count as solved."""
        return self._expected_reward

    @property
    def description(self) -> str | None:
        """Human-readable description of the environment."""
        return self._description

    @abstractmethod
    def make(self, **kwargs: Any) -> BaseEnv:
        """Open the environment (usually a ``UnityEnvironment``); subclasses implement it.

        Raises:
            NotImplementedError: always, here.
        """
        raise NotImplementedError(
            f"make() is not implemented for registry entry {self.identifier!r}: "
            "BaseRegistryEntry is a base class; subclass it and implement make()."
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(identifier={self.identifier!r})"
