"""``mlagents_envs.envs.unity_parallel_env``: the official PettingZoo parallel wrapper.

:class:`UnityParallelEnv` follows ML-Agents 1.1.0's ``UnityParallelEnv``
(``mlagents_envs/envs/unity_parallel_env.py``): every agent acts at once and each ``step`` is one
Unity step. Names, spaces, observations, infos and the other shared rules are those of
:class:`~unity_gym.compat.envs.unity_pettingzoo_base_env.UnityPettingzooBaseEnv`.

Differences from the official wrapper, all deliberate (today's PettingZoo ``ParallelEnv`` API
instead of PettingZoo 1.15's, which today's PettingZoo no longer accepts):

* ``reset(seed=None, options=None)`` returns ``(observations, infos)`` (officially only the
  observations).
* ``step(actions)`` returns ``(observations, rewards, terminations, truncations, infos)``
  (officially ``(observations, rewards, dones, infos)``); the dicts cover the agents that acted
  and those whose episode just ended, and ``agents`` then lists only the agents still live. When
  none is left, the episode is over: call ``reset()``.
* ``step`` with an action for an agent that is not live raises ``gymnasium.error.Error`` naming
  the live agents (officially an unrelated ``KeyError``/``ValueError``), and so does ``step``
  before ``reset()`` or after the episode ended (officially only with a non-empty ``actions``).
"""

from __future__ import annotations

from typing import Any

from gymnasium import error
from pettingzoo import ParallelEnv

from unity_gym.base_env import BaseEnv
from unity_gym.compat.envs.unity_pettingzoo_base_env import UnityPettingzooBaseEnv

__all__ = ["UnityParallelEnv"]


class UnityParallelEnv(UnityPettingzooBaseEnv, ParallelEnv[str, Any, Any]):
    """Every agent of a Unity environment as a PettingZoo ``ParallelEnv`` (module docs).

    Args:
        env: the open environment to wrap (closed by :meth:`close`).
        seed: the seed of the agents' action spaces.
    """

    def __init__(self, env: BaseEnv, seed: int | None = None) -> None:
        super().__init__(env, seed)

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Reset the Unity environment; a new episode with the agents that request a decision.

        Args:
            seed: when given, reseeds the action spaces (not the game).
            options: ignored.

        Returns:
            ``(observations, infos)`` of the live agents.
        """
        self._reset_game(seed)
        return dict(self._observations), self.infos

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[
        dict[str, Any],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        """Act for the live agents (the others act with zeros) and step Unity once.

        Args:
            actions: live agent name -> an element of its action space (None = zeros).

        Returns:
            ``(observations, rewards, terminations, truncations, infos)`` (module docs).

        Raises:
            gymnasium.error.Error: before ``reset()``, after the episode ended, for an agent
                that is not live, or for an action outside the agent's space.
        """
        self._loaded()
        if not self._agents:
            raise error.Error(
                "You must reset the environment before you can perform a step "
                "(no agent is live: call reset())."
            )
        for agent, action in actions.items():
            if agent not in self._agents:
                raise error.Error(
                    f"Agent {agent!r} is not live in this episode; live agents: {self._agents}."
                )
            self._process_action(agent, action)
        self._step_game()
        result = (
            dict(self._observations),
            dict(self._rewards),
            dict(self._terminations),
            dict(self._truncations),
            dict(self._infos),
        )
        for agent in [a for a in self._agents if self._is_done(a)]:
            self._remove(agent)
        return result
