"""``mlagents_envs.registry``: Unity environments by name, ``default_registry[name].make()``.

``default_registry["3DBall"].make(**kwargs)`` returns a ``UnityEnvironment`` on unity_gym's
built-in 3DBall scene (the stock game: 12 agents), with no download; the official examples that
are not built in are downloaded from the official manifest as ``mlagents_envs`` does (see
:mod:`unity_gym.compat.registry.unity_env_registry`). PettingZoo's official factories call
``default_registry[env_id].make(**kwargs)``; that interface is kept.
"""

from __future__ import annotations

from unity_gym.compat.registry.unity_env_registry import UnityEnvRegistry, default_registry

__all__ = ["UnityEnvRegistry", "default_registry"]
