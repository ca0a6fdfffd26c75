"""``mlagents_envs.envs.unity_aec_env``: the official PettingZoo AEC (turn-by-turn) wrapper.

:class:`UnityAECEnv` follows ML-Agents 1.1.0's ``UnityAECEnv``
(``mlagents_envs/envs/unity_aec_env.py``): the agents of a Unity step are selected one after
the other, in name order; each ``step(action)`` records the selected agent's action, and once
every agent of the step has had its turn, Unity is stepped once. ``rewards`` are zero between
two Unity steps. Names, spaces, observations, infos and the other shared rules are those of
:class:`~unity_gym.compat.envs.unity_pettingzoo_base_env.UnityPettingzooBaseEnv`.

Differences from the official wrapper, all deliberate (today's PettingZoo ``AECEnv`` API
instead of PettingZoo 1.15's, which today's PettingZoo no longer accepts):

* ``reset(seed=None, options=None)`` takes today's arguments (a seed reseeds the action
  spaces, not the game).
* ``observe(agent)`` returns the observation only (officially ``(observation, reward, done,
  info)``); ``last()`` returns ``(observation, cumulative reward, termination, truncation,
  info)`` (officially ``(observation, reward, done, info)``).
* An agent whose episode ended is selected once more and must be stepped with ``None``, which
  removes it from ``agents``; when no agent is left, ``agent_iter()`` stops and the episode is
  over (call ``reset()``). ``step`` with an action other than None for such an agent raises
  ``gymnasium.error.Error``; ``None`` for a live agent means zero actions.
"""

from __future__ import annotations

from typing import Any

from gymnasium import error
from pettingzoo import AECEnv

from unity_gym.base_env import BaseEnv
from unity_gym.compat.envs.unity_pettingzoo_base_env import UnityPettingzooBaseEnv

__all__ = ["UnityAECEnv"]


class UnityAECEnv(UnityPettingzooBaseEnv, AECEnv[str, Any, Any]):
    """Every agent of a Unity environment as a PettingZoo ``AECEnv`` (module docs).

    Args:
        env: the open environment to wrap (closed by :meth:`close`).
        seed: the seed of the agents' action spaces.
    """

    def __init__(self, env: BaseEnv, seed: int | None = None) -> None:
        self._order: list[str] = []
        self._agent_index = 0
        super().__init__(env, seed)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Reset the Unity environment and select the first agent.

        Args:
            seed: when given, reseeds the action spaces (not the game).
            options: ignored.
        """
        self._reset_game(seed)
        self._start_turns()

    def step(self, action: Any) -> None:
        """Act for :attr:`agent_selection` and select the next agent (module docs).

        Raises:
            gymnasium.error.Error: before ``reset()`` or after the episode ended, for an action
                outside the agent's space, or for an action other than None for an agent whose
                episode ended.
        """
        self._loaded()
        if not self._agents:
            raise error.Error(
                "You must reset the environment before you can perform a step "
                "(no agent is left: call reset())."
            )
        agent = self.agent_selection
        if self._is_done(agent):
            if action is not None:
                raise error.Error(
                    f"Agent {agent!r} has ended its episode: step it with None to remove it."
                )
            self._remove(agent)
        else:
            self._process_action(agent, action)
            self._cumm_rewards[agent] = 0.0
        self._agent_index += 1
        for name in self._rewards:
            self._rewards[name] = 0.0
        if self._agent_index >= len(self._order):
            if any(not self._is_done(name) for name in self._agents):
                self._step_game()
            self._start_turns()

    def observe(self, agent: str) -> Any:
        """The latest observation of ``agent`` (``last()`` reads it for the selected agent)."""
        return self._observations[agent]

    @property
    def agent_selection(self) -> str:
        """The agent whose turn it is (the first agent once the episode is over)."""
        if self._agent_index < len(self._order):
            return self._order[self._agent_index]
        return self._order[0] if self._order else ""

    def _start_turns(self) -> None:
        self._order = list(self._agents)
        self._agent_index = 0
