"""``mlagents_envs.envs.pettingzoo_env_factory``: PettingZoo envs made from registry entries.

Follows ``mlagents_envs`` 1.1.0: a :class:`PettingZooEnvFactory` names one identifier of
:data:`unity_gym.compat.registry.default_registry`; ``env(seed=None, **kwargs)`` makes the
environment with ``default_registry[env_id].make(**kwargs)`` and returns it wrapped in
:class:`~unity_gym.compat.envs.unity_aec_env.UnityAECEnv`, adding an engine configuration, an
environment parameters and a stats side channel when ``side_channels`` is not given.

One deliberate difference: without ``base_port`` the official factory tries ports from 6000 up
until one is free; here the launched game listens on a port the operating system picks (as every
game launched by unity_gym without ``base_port``), so no port is ever tried twice.
"""

from __future__ import annotations

from typing import Any

from unity_gym.compat.envs.unity_aec_env import UnityAECEnv
from unity_gym.compat.registry import default_registry
from unity_gym.side_channels.engine_configuration_channel import EngineConfigurationChannel
from unity_gym.side_channels.environment_parameters_channel import EnvironmentParametersChannel
from unity_gym.side_channels.stats_side_channel import StatsSideChannel

__all__ = ["PettingZooEnvFactory"]


class PettingZooEnvFactory:
    """Makes the registry environment ``env_id`` as a PettingZoo AEC env.

    Args:
        env_id: an identifier of ``default_registry`` (e.g. ``"3DBall"``, ``"Tennis"``).
    """

    def __init__(self, env_id: str) -> None:
        self.env_id = env_id

    def env(self, seed: int | None = None, **kwargs: Any) -> UnityAECEnv:
        """The environment, started and wrapped in ``UnityAECEnv``.

        Args:
            seed: seed of the agents' action spaces.
            **kwargs: any ``UnityEnvironment`` keyword except ``file_name`` (the registry
                entry supplies the game).

        Raises:
            KeyError: ``env_id`` is not in the registry (the message lists the built-in ones).
        """
        if "side_channels" not in kwargs:
            kwargs["side_channels"] = [
                EngineConfigurationChannel(),
                EnvironmentParametersChannel(),
                StatsSideChannel(),
            ]
        return UnityAECEnv(default_registry[self.env_id].make(**kwargs), seed)

    def __repr__(self) -> str:
        return f"PettingZooEnvFactory({self.env_id!r})"
