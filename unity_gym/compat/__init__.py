"""The official ``mlagents_envs`` modules that have no home elsewhere in unity_gym.

Each module here mirrors the official module of the same path below ``mlagents_envs``
(``unity_gym.compat.envs.unity_gym_env`` is ``mlagents_envs.envs.unity_gym_env``) and exports, in
its ``__all__``, the official public names with the official signatures and semantics, built on
unity_gym's own classes. :mod:`unity_gym.mlagents_compat` serves them under their official names;
they can also be imported from here directly, which installs no import hook.
"""

__all__: list[str] = []
