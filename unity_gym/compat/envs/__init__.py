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

The package itself exports nothing yet (officially it holds the registry-based PettingZoo
factories such as ``StrikersVsGoalie``).
"""

__all__: list[str] = []
