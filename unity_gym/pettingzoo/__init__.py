"""PettingZoo fronts: every agent of a Unity game as a ``ParallelEnv`` or an ``AECEnv``.

``parallel_env(...)`` returns a :class:`UnityParallelEnv`; ``env(...)`` returns the same game as
an AEC env (PettingZoo's ``parallel_to_aec`` conversion: agents act in turn in
``possible_agents`` order and the game advances once every live agent has acted). Both take the
keywords of :class:`~unity_gym.gym_env.UnityGymEnv` (``file_name``, ``scene``, ``seed``,
``num_agents``, engine settings, ``env_params``, ...) plus ``max_cycles`` and the restart limits
``max_lifetime_restarts``, ``restarts_rate_limit_n`` and ``restarts_rate_limit_period_s``. Agent
names, episode, seeding and restart rules (a crashed or hung game is relaunched and its agents
truncated; :class:`~unity_gym.vector.faults.RestartLimitError`, re-exported here, beyond the
limits) are documented in :mod:`unity_gym.pettingzoo.parallel_env`.

``ray_parallel_env(actor_options=None, **kwargs)`` returns a :class:`RayParallelEnv`: the same
``UnityParallelEnv(**kwargs)`` run inside a Ray actor on any node of a Ray cluster (install the
``unity-gym[ray]`` extra), whose lost actor is replaced within the same restart limits; see
:mod:`unity_gym.pettingzoo.ray_env`.

Example::

    from unity_gym.pettingzoo import parallel_env

    env = parallel_env(scene="Tennis", max_cycles=500)
    observations, infos = env.reset(seed=1)
    while env.agents:
        actions = {agent: env.action_space(agent).sample() for agent in env.agents}
        observations, rewards, terminations, truncations, infos = env.step(actions)
    env.close()
"""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv
from pettingzoo.utils.conversions import parallel_to_aec

from unity_gym.pettingzoo.parallel_env import UnityParallelEnv, agent_name_prefixes
from unity_gym.pettingzoo.ray_env import RayParallelEnv, ray_parallel_env
from unity_gym.vector.faults import RestartLimitError

__all__ = [
    "RayParallelEnv",
    "RestartLimitError",
    "UnityParallelEnv",
    "agent_name_prefixes",
    "env",
    "parallel_env",
    "ray_parallel_env",
]


def parallel_env(**kwargs: Any) -> UnityParallelEnv:
    """A :class:`UnityParallelEnv` built from ``kwargs`` (its constructor's keywords)."""
    return UnityParallelEnv(**kwargs)


def env(**kwargs: Any) -> AECEnv[str, Any, Any]:
    """The game of ``parallel_env(**kwargs)`` as an AEC env (order-enforcing, turn based).

    ``env.unwrapped`` is the :class:`UnityParallelEnv`; its ``unity_env`` is the bridge.

    Raises:
        ValueError: for ``agent_autoreset=True``: agents that join in the middle of an episode
            are a parallel-API feature (use :func:`parallel_env`).
    """
    if kwargs.get("agent_autoreset"):
        raise ValueError(
            "agent_autoreset=True is for the parallel API (agents join in the middle of an "
            "episode, which the AEC API's turn order has no place for); use parallel_env()."
        )
    return parallel_to_aec(UnityParallelEnv(**kwargs))
