"""``mlagents_envs.envs.unity_pettingzoo_base_env``: what the official PettingZoo wrappers share.

:class:`UnityPettingzooBaseEnv` follows ML-Agents 1.1.0's ``UnityPettingzooBaseEnv``
(``mlagents_envs/envs/unity_pettingzoo_base_env.py``, ``docs/Python-PettingZoo-API.md``):

* It wraps an open ``BaseEnv`` with any number of behaviors and agents (stepping it once if it
  reports no behavior yet). Agents are named ``<behavior>?agent_id=<id>``, e.g.
  ``Tennis?team=1?agent_id=3`` (:mod:`~unity_gym.compat.envs.env_helpers`); ``agents`` and
  ``possible_agents`` are sorted lists; ``possible_agents`` collects every agent seen since the
  last ``reset()``.
* Spaces are per behavior, one cached object each: the observation space is
  ``Box(-inf, inf, float32)`` of the observation's shape, a ``Tuple`` of those with several
  observations; the action space is ``Discrete`` (one branch), ``MultiDiscrete`` (several),
  ``Box(-1, 1)`` (continuous) or ``Tuple((Box, MultiDiscrete))`` (hybrid), seeded with ``seed``.
  ``observation_spaces``/``action_spaces`` map every possible agent to its space.
* Observations: an agent's array (a list with several observations); a deciding agent of a
  discrete behavior gets ``{"observation": [arrays], "action_mask": [one bool array per
  branch]}`` with Unity's masks (True = disabled action). ``infos`` hold ``behavior_name``,
  ``group_id`` and ``group_reward``, plus ``interrupted`` at an episode end.
* Actions are elements of the agent's space (Tuple actions as ``(continuous, discrete)``); an
  action outside it raises ``gymnasium.error.Error``. Agents given no action act with zeros.
* ``side_channel`` maps the (official) class name of each side channel of the wrapped
  environment (when it has a ``_side_channel_manager``, as ``UnityEnvironment`` has) to the
  channel. ``render()`` and
  ``state()`` return None; ``seed(s)`` stores ``s`` for later spaces; ``close()`` closes the
  wrapped environment (also when the wrapper is garbage-collected).

Differences from the official wrapper, all deliberate (the official one targets PettingZoo
1.15, whose API today's PettingZoo no longer accepts):

* Episodes follow today's PettingZoo rules. ``terminations``/``truncations`` replace ``dones``
  (still there: their ``or``): an agent's episode end is a truncation when Unity reports it
  ``interrupted`` (max step reached), else a termination. An agent whose episode ended leaves
  the wrapper's episode: when Unity starts its next episode (same agent id), that agent is kept
  out and acts with zeros until ``reset()``, since PettingZoo forbids reviving an agent. The
  official wrapper instead brings the agent back, and loses the episode end altogether when the
  next episode starts in the same Unity step (it reports the agent not done).
* ``reset(seed=None, options=None)`` takes today's arguments; a seed reseeds the action spaces
  (the Unity game takes its seed at launch only). ``rewards`` hold the reward of the last Unity
  step, as officially; ``_cumulative_rewards`` also resets when an agent acts (AEC rule).
* Continuous action spaces are ``float32`` (officially declared ``int32``, which made every
  fractional action fail the space check or be truncated to an integer). Rewards and info
  values are Python scalars.
* A live agent that does not request a decision in a Unity step (decision period > 1) stays
  live with its last observation, a zero reward and its action dropped, instead of vanishing
  from ``agents`` for that step.
* The wrapper registers no ``atexit`` hook (``UnityEnvironment`` already ends its game at exit).
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
from gymnasium import error, spaces

from unity_gym.base_env import ActionTuple, BaseEnv, DecisionSteps, TerminalSteps
from unity_gym.compat.envs.env_helpers import (
    _agent_id_to_behavior,
    _behavior_to_agent_id,
    deciding_agent_observation,
)
from unity_gym.side_channels.training_analytics_side_channel import (
    DefaultTrainingAnalyticsSideChannel,
)

__all__ = ["UnityPettingzooBaseEnv"]


def _official_class_name(channel: object) -> str:
    """The class name the official package gives ``channel``'s class (the key of
    ``side_channel``): unity_gym's ``TrainingAnalyticsSideChannel`` is officially
    ``DefaultTrainingAnalyticsSideChannel``; other channels keep their names."""
    if isinstance(channel, DefaultTrainingAnalyticsSideChannel):
        return "DefaultTrainingAnalyticsSideChannel"
    return type(channel).__name__


def _single_or_list(values: list[np.ndarray]) -> Any:
    return values[0] if len(values) == 1 else values


class UnityPettingzooBaseEnv:
    """The state and spaces of the official PettingZoo wrappers (module docs).

    Args:
        env: the open environment to wrap; the wrapper closes it in :meth:`close`.
        seed: the seed of the action spaces.
        metadata: PettingZoo's ``metadata`` (default ``{"render_modes": []}``).

    Raises:
        gymnasium.error.Error: if a behavior has no action.
    """

    def __init__(
        self, env: BaseEnv, seed: int | None = None, metadata: dict[str, Any] | None = None
    ) -> None:
        super().__init__()
        self._env: BaseEnv | None = env
        self.metadata: dict[str, Any] = {"render_modes": []} if metadata is None else metadata
        self._seed = seed
        manager = getattr(env, "_side_channel_manager", None)
        channels = manager.side_channels.values() if manager is not None else ()
        self._side_channel_dict: dict[str, Any] = {_official_class_name(c): c for c in channels}
        self._observation_spaces: dict[str, spaces.Space[Any]] = {}
        self._action_spaces: dict[str, spaces.Space[Any]] = {}
        self._possible_agents: set[str] = set()
        self._agents: list[str] = []
        self._finished: set[str] = set()
        self._observations: dict[str, Any] = {}
        self._rewards: dict[str, float] = {}
        self._cumm_rewards: dict[str, float] = {}
        self._terminations: dict[str, bool] = {}
        self._truncations: dict[str, bool] = {}
        self._infos: dict[str, dict[str, Any]] = {}
        self._agent_id_to_index: dict[str, int] = {}
        self._continuous: dict[str, np.ndarray] = {}
        self._discrete: dict[str, np.ndarray] = {}
        if not env.behavior_specs:
            env.step()
        self._update_spaces()

    # -- spaces ----------------------------------------------------------------------------

    @property
    def observation_spaces(self) -> dict[str, spaces.Space[Any]]:
        """The observation space of every possible agent."""
        return {agent: self.observation_space(agent) for agent in self.possible_agents}

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        """The observation space of ``agent`` (the same object for every agent of a behavior)."""
        return self._observation_spaces[_agent_id_to_behavior(agent)]

    @property
    def action_spaces(self) -> dict[str, spaces.Space[Any]]:
        """The action space of every possible agent."""
        return {agent: self.action_space(agent) for agent in self.possible_agents}

    def action_space(self, agent: str) -> spaces.Space[Any]:
        """The action space of ``agent`` (the same object for every agent of a behavior)."""
        return self._action_spaces[_agent_id_to_behavior(agent)]

    def _update_spaces(self) -> None:
        env = self._loaded()
        for behavior, spec in env.behavior_specs.items():
            if behavior in self._action_spaces:
                continue
            boxes = tuple(
                spaces.Box(-np.inf, np.inf, shape=tuple(o.shape), dtype=np.float32)
                for o in spec.observation_specs
            )
            observation_space = boxes[0] if len(boxes) == 1 else spaces.Tuple(boxes)
            self._observation_spaces[behavior] = observation_space
            action_spec = spec.action_spec
            if action_spec.continuous_size == 0 and action_spec.discrete_size == 0:
                raise error.Error(f"No actions found for behavior {behavior!r}.")
            branches = list(action_spec.discrete_branches)
            continuous = spaces.Box(-1, 1, (action_spec.continuous_size,), dtype=np.float32)
            action_space: spaces.Space[Any]
            if action_spec.continuous_size == 0 and len(branches) == 1:
                action_space = spaces.Discrete(branches[0])
            elif action_spec.continuous_size == 0:
                action_space = spaces.MultiDiscrete(branches)
            elif not branches:
                action_space = continuous
            else:
                action_space = spaces.Tuple((continuous, spaces.MultiDiscrete(branches)))
            if self._seed is not None:
                action_space.seed(self._seed)
            self._action_spaces[behavior] = action_space

    # -- state -----------------------------------------------------------------------------

    @property
    def side_channel(self) -> dict[str, Any]:
        """The wrapped environment's side channels by class name, e.g.
        ``env.side_channel["EngineConfigurationChannel"]``."""
        self._loaded()
        return self._side_channel_dict

    @property
    def agents(self) -> list[str]:
        """The agents of the current episode not yet removed, sorted."""
        return list(self._agents)

    @property
    def possible_agents(self) -> list[str]:
        """Every agent seen since the last reset, sorted."""
        return sorted(self._possible_agents)

    @property
    def rewards(self) -> dict[str, float]:
        """Each agent's reward from the last Unity step."""
        return dict(self._rewards)

    @property
    def _cumulative_rewards(self) -> dict[str, float]:
        return self._cumm_rewards

    @property
    def terminations(self) -> dict[str, bool]:
        """Whether each agent's episode ended (other than by interruption)."""
        return dict(self._terminations)

    @property
    def truncations(self) -> dict[str, bool]:
        """Whether each agent's episode was interrupted (max step reached)."""
        return dict(self._truncations)

    @property
    def dones(self) -> dict[str, bool]:
        """The official ``dones``: terminated or truncated."""
        return {a: self._terminations[a] or self._truncations[a] for a in self._agents}

    @property
    def infos(self) -> dict[str, dict[str, Any]]:
        """Each agent's info (module docs)."""
        return dict(self._infos)

    def seed(self, seed: int | None = None) -> None:
        """Store ``seed`` for the action spaces of behaviors that appear later."""
        self._seed = seed

    def render(self, mode: str = "human") -> None:
        """Not supported (as officially)."""
        return None

    def state(self) -> None:
        """Not supported (as officially)."""
        return None

    def close(self) -> None:
        """Close the wrapped environment; later calls do nothing."""
        if self._env is not None:
            env, self._env = self._env, None
            env.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # nothing to report to at collection time
            self.close()

    # -- stepping --------------------------------------------------------------------------

    def _loaded(self) -> BaseEnv:
        if self._env is None:
            raise error.Error("No environment loaded: this wrapper was closed.")
        return self._env

    def _is_done(self, agent: str) -> bool:
        return self._terminations.get(agent, False) or self._truncations.get(agent, False)

    def _reset_game(self, seed: int | None) -> None:
        if seed is not None:
            self._seed = seed
            for space in self._action_spaces.values():
                space.seed(seed)
        self._loaded().reset()
        self._possible_agents = set()
        self._finished = set()
        self._agents = []
        self._collect()
        self._rewards = dict.fromkeys(self._agents, 0.0)
        self._cumm_rewards = dict.fromkeys(self._agents, 0.0)

    def _process_action(self, agent: str, action: Any) -> None:
        """Record ``action`` for live ``agent`` (None = zeros) in its behavior's batch."""
        if action is None:
            return
        space = self.action_space(agent)
        continuous: np.ndarray | None = None
        discrete: np.ndarray | None = None
        try:
            if isinstance(space, spaces.Tuple):
                continuous = np.asarray(action[0], dtype=np.float32)
                discrete = np.asarray(action[1], dtype=np.int64)
                valid = space.contains((continuous, discrete))
            elif isinstance(space, spaces.Box):
                continuous = np.asarray(action, dtype=np.float32)
                valid = space.contains(continuous)
            else:
                discrete = np.asarray(action, dtype=np.int64)
                valid = space.contains(discrete)
        except (TypeError, ValueError, IndexError):
            valid = False
        if not valid:
            raise error.Error(
                f"Invalid action, got {action!r} for agent {agent!r} but was expecting an "
                f"action from {space}."
            )
        row = self._agent_id_to_index.get(agent)
        if row is None:  # live, but no decision requested in the last Unity step
            return
        behavior = _agent_id_to_behavior(agent)
        if continuous is not None:
            self._continuous[behavior][row] = continuous.reshape(-1)
        if discrete is not None:
            self._discrete[behavior][row] = discrete.reshape(-1)

    def _step_game(self) -> None:
        """Send every behavior's actions, step Unity once and collect the results."""
        env = self._loaded()
        for behavior in self._continuous:
            env.set_actions(
                behavior, ActionTuple(self._continuous[behavior], self._discrete[behavior])
            )
        env.step()
        self._collect()

    def _collect(self) -> None:
        """Read every behavior's steps into the per-agent dicts (module docs for the rules)."""
        env = self._loaded()
        self._update_spaces()
        carried = [agent for agent in self._agents if not self._is_done(agent)]
        observations: dict[str, Any] = {}
        rewards: dict[str, float] = {}
        terminations: dict[str, bool] = {}
        truncations: dict[str, bool] = {}
        infos: dict[str, dict[str, Any]] = {}
        index: dict[str, int] = {}
        self._continuous, self._discrete = {}, {}
        for behavior, spec in env.behavior_specs.items():
            decision: DecisionSteps
            terminal: TerminalSteps
            decision, terminal = env.get_steps(behavior)
            rows = len(decision)
            self._continuous[behavior] = np.zeros(
                (rows, spec.action_spec.continuous_size), dtype=np.float32
            )
            self._discrete[behavior] = np.zeros(
                (rows, spec.action_spec.discrete_size), dtype=np.int32
            )
            ended: set[str] = set()
            for row, agent_id in enumerate(terminal.agent_id):
                name = _behavior_to_agent_id(behavior, int(agent_id))
                if name in self._finished:
                    continue
                ended.add(name)
                interrupted = bool(terminal.interrupted[row])
                observations[name] = _single_or_list([batch[row] for batch in terminal.obs])
                rewards[name] = float(terminal.reward[row])
                terminations[name] = not interrupted
                truncations[name] = interrupted
                infos[name] = {
                    "behavior_name": behavior,
                    "group_id": int(terminal.group_id[row]),
                    "group_reward": float(terminal.group_reward[row]),
                    "interrupted": interrupted,
                }
            for row, agent_id in enumerate(decision.agent_id):
                name = _behavior_to_agent_id(behavior, int(agent_id))
                if name in self._finished or name in ended:
                    continue
                observation = deciding_agent_observation(decision, row)
                observations[name] = (
                    observation if isinstance(observation, dict) else _single_or_list(observation)
                )
                rewards[name] = float(decision.reward[row])
                terminations[name] = truncations[name] = False
                infos[name] = {
                    "behavior_name": behavior,
                    "group_id": int(decision.group_id[row]),
                    "group_reward": float(decision.group_reward[row]),
                }
                index[name] = row
        for name in carried:
            if name not in observations:
                observations[name] = self._observations[name]
                rewards[name] = 0.0
                terminations[name] = truncations[name] = False
                infos[name] = self._infos[name]
        self._finished.update(a for a in observations if terminations[a] or truncations[a])
        self._agents = sorted(observations)
        self._possible_agents.update(self._agents)
        self._observations = observations
        self._rewards = rewards
        self._cumm_rewards = dict(rewards)
        self._terminations = terminations
        self._truncations = truncations
        self._infos = infos
        self._agent_id_to_index = index

    def _remove(self, agent: str) -> None:
        """Drop ``agent`` from the episode's agents and every per-agent dict."""
        self._agents.remove(agent)
        for table in (
            self._observations,
            self._rewards,
            self._cumm_rewards,
            self._terminations,
            self._truncations,
            self._infos,
        ):
            table.pop(agent, None)
