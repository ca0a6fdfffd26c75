"""``mlagents_envs.envs``: the official Gym and PettingZoo wrappers around an open ``BaseEnv``.

Served under the official names by :mod:`unity_gym.mlagents_compat`:

* :mod:`unity_gym.compat.envs.unity_gym_env` (``mlagents_envs.envs.unity_gym_env``):
  ``UnityToGymWrapper``, ``ActionFlattener``, ``UnityGymException``.
* :mod:`unity_gym.compat.envs.unity_pettingzoo_base_env`, ``unity_parallel_env`` and
  ``unity_aec_env``: ``UnityPettingzooBaseEnv``, ``UnityParallelEnv(env, seed=None)`` and
  ``UnityAECEnv(env, seed=None)``.
* :mod:`unity_gym.compat.envs.env_helpers`: the agent-name helpers.

They wrap any open environment (``unity_gym.UnityEnvironment``, or anything else implementing
``BaseEnv``) with the official semantics, on Gymnasium spaces and today's PettingZoo API; each
module says where and why it departs from the official wrapper.

The package holds, as officially, one :class:`PettingZooEnvFactory` per registry identifier,
under the identifier's name with a leading ``3`` spelled ``Three`` (``ThreeDBall``, ``Tennis``,
``StrikersVsGoalie``): ``Tennis.env()`` is ``UnityAECEnv`` over ``default_registry["Tennis"]``.
The factories of the built-in examples are made at import; the others are made on first access,
which reads the remote manifest then (officially, importing the package reads it), so importing
the wrappers never waits on the network.
"""

from __future__ import annotations

from unity_gym.compat.envs.pettingzoo_env_factory import PettingZooEnvFactory
from unity_gym.compat.registry import default_registry
from unity_gym.compat.registry.builtin_registry_entry import BUILTIN_EXAMPLES


def factory_name(env_id: str) -> str:
    """The attribute name of ``env_id``'s factory: a leading digit's ``3`` becomes ``Three``."""
    return env_id.replace("3", "Three") if env_id[:1].isdigit() else env_id


_FACTORIES: dict[str, PettingZooEnvFactory] = {
    factory_name(env_id): PettingZooEnvFactory(env_id) for env_id in BUILTIN_EXAMPLES
}
globals().update(_FACTORIES)

__all__ = sorted(_FACTORIES)


def __getattr__(name: str) -> PettingZooEnvFactory:
    """The factory of a registry entry that is not built in (reads the remote manifest).

    Raises:
        ImportError: ``name`` is no registry entry's factory; the message says why (for
            instance that the remote manifest could not be read) and lists the built-in ones.
    """
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    for env_id in default_registry:
        if factory_name(env_id) == name:
            _FACTORIES[name] = globals()[name] = PettingZooEnvFactory(env_id)
            return _FACTORIES[name]
    env_id = "3" + name.removeprefix("Three") if name.startswith("Three") else name
    try:
        default_registry[env_id]  # its KeyError says why (e.g. the manifest is unreachable)
    except KeyError as error:
        # ImportError, not AttributeError: ``from ... import Name`` would replace an
        # AttributeError by a bare "cannot import name" and lose the reason.
        raise ImportError(
            f"module {__name__!r} has no PettingZoo factory {name!r}: {error.args[0]}",
            name=__name__,
        ) from None
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
