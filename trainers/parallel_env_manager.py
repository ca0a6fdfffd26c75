"""Steps PettingZoo parallel environments and hands every behavior's trainer its slots' outcomes.

This is how games with several behaviors train (the vector env serves one behavior only). It
uses nothing but the public PettingZoo ``ParallelEnv`` API plus the infos of
``unity_gym.pettingzoo``; one env is one game process.

Trainers. Agents are grouped by behavior name, the behavior id without its ``?team=<t>``
suffix: ``Tennis?team=0`` and ``Tennis?team=1`` are both driven by the trainer of ``Tennis``.
With ``self_play`` configured for that trainer it is a ghost trainer
(:mod:`trainers.ghost`), which reads each slot's team from :attr:`ParallelEnvManager.slot_teams`
and trains one team at a time against snapshots; without it all teams share one policy and a
warning says once that the teams are not trained against each other. Behaviors with different
names get different trainers. An agent's behavior id is ``info["behavior_name"]`` as
``unity_gym.pettingzoo`` reports it at the first reset (without it, the agent's name without its
``_<n>`` suffix, PettingZoo's naming convention). All teams of a name must have the same
observation shapes (entry *i* of one team feeds the same network input as entry *i* of another,
whatever the sensor names) and the same action space.

Slots. A trainer's slots are every agent of its behaviors (``possible_agents``) in every env:
env 0's agents first, each env's in ``possible_agents`` order. The order never changes
(:attr:`ParallelEnvManager.slot_agents` lists it), so slot *i* is always the same agent.

Episodes. PettingZoo episodes end agent by agent: an agent that finishes (terminated or
truncated) leaves ``env.agents`` until the next reset. Its slot reports that step (reward, done
flags, ``final_observations`` = the observation returned with the done flag) and is then
``valid = False`` (its action is ignored and must not be learned from) with its last
observation. When an env has no agent left it is reset at once, within the same :meth:`step`,
so the slots' ``observations`` already are the new episode's first ones while
``final_observations`` still hold the last ones; the next step is valid again. An agent of
``possible_agents`` that is not part of a new episode stays invalid until the next reset.

Faults. A ``unity_gym.pettingzoo`` env whose game crashes or stops answering restarts it (within
its restart limits, which ``unity-train`` sets from ``env_settings``) and reports every live agent
truncated with its latest observation and ``info["restart_reason"]``. That is an ordinary
truncation here: the slots report the step with those observations as ``final_observations``
(they bootstrap from them), the emptied env is reset into the restarted game at once, and the
next step is valid again. Beyond the limits the env raises ``RestartLimitError``, which ends the
run.

Rewards. A slot's reward is the agent's reward plus ``info["group_reward"]`` (missing: 0), as
ML-Agents' extrinsic reward signal adds the group reward for PPO and SAC too; without it
SoccerTwos, whose rewards are group rewards, would teach nothing. Episode returns in
:attr:`BehaviorStep.episodes` (``Environment/Cumulative Reward``) are the sums of these rewards,
so they include group rewards (ML-Agents' own statistic counts the individual reward only).

Groups. Every step also reports each slot's ``info["group_id"]`` (as last reported, new
episodes included; 0 = no group) in :attr:`BehaviorStep.group_ids`, made unique across envs
(env *i*'s group *g* is ``i * GROUP_ID_SPAN + g``), and the step's ``info["group_reward"]`` in
:attr:`BehaviorStep.group_rewards`, for trainers that learn from groups (POCA).

Goal signals. The entries named for a behavior in the env's ``metadata["goal_signal_keys"]``
(behavior id -> Dict keys, as ``unity_gym.pettingzoo`` reports them) are marked
``ObservationEntry.goal`` in its layout, for goal-conditioned networks.

Action masks. ``info["action_mask"]`` in the format of ``action_space(agent).sample(mask=...)``
(an int8 array, a tuple of them per branch, or ``{"continuous": None, "discrete": ...}``, 1 =
allowed) becomes the trainers' format: one flat bool row per slot, branches concatenated,
``True`` = allowed. As long as no agent has sent a mask the mask is ``None``.

Seeding and stepping. ``reset(seed)`` resets env *i* with ``seed + i`` (``None``: unseeded);
the automatic resets of finished envs are unseeded. With several envs, each step and each reset
runs every env in a thread of its own, so the game processes simulate at the same time (an env's
calls wait for its game, which releases the GIL); results are then taken in env order, so the
outcome does not depend on which game answers first. The manager still steps all envs together
(synchronously); a failure in one env is raised after the others finished their call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_all
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from pettingzoo import ParallelEnv

from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.env_manager import (
    GROUP_ID_SPAN,
    BehaviorSlots,
    BehaviorStep,
    LockstepEnvManager,
    PolicyDecision,
    apply_env_params,
)
from trainers.ghost.trainer import team_of
from trainers.settings import ConfigError
from unity_gym.timers import hierarchical_timer

__all__ = [
    "ParallelEnvManager",
    "TrainerNamer",
    "behavior_base_name",
    "close_all",
    "default_trainer_name",
]

logger = logging.getLogger(__name__)


_T = TypeVar("_T")

TrainerNamer = Callable[[list[str]], str]
"""Maps the candidate names of a group of behaviors (the name without team first, then the
behavior ids, sorted) to the name of the trainer that drives them."""


def behavior_base_name(behavior_id: str) -> str:
    """The behavior name without its team suffix: ``"Tennis?team=1"`` -> ``"Tennis"``."""
    return behavior_id.split("?team=", 1)[0]


def default_trainer_name(candidates: list[str]) -> str:
    """The first candidate: the behavior name without its team suffix."""
    return candidates[0]


@dataclass
class _Trainee:
    """The slots of one trainer and their running state."""

    name: str
    behavior_ids: list[str]
    observation_layouts: dict[str, ObservationLayout]  # per behavior id (entry names differ)
    action_layout: ActionLayout
    agents: list[tuple[int, str]]  # slot -> (env index, agent name)
    behavior_of_slot: list[str]
    observations: list[np.ndarray] = field(default_factory=list)
    mask: np.ndarray | None = None
    live: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    episode_reward: np.ndarray = field(default_factory=lambda: np.zeros(0))
    episode_length: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    group_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def num_slots(self) -> int:
        """The trainer's fixed number of slots."""
        return len(self.agents)

    @property
    def layout(self) -> ObservationLayout:
        """The layout the trainer sees (the first team's; the others only differ in names)."""
        return self.observation_layouts[self.behavior_ids[0]]

    def allocate(self) -> None:
        """Create the per-slot arrays (zero observations, no slot live)."""
        n = self.num_slots
        self.observations = [
            np.zeros((n, *entry.raw_shape), dtype=entry.raw_dtype) for entry in self.layout.entries
        ]
        self.live = np.zeros(n, dtype=bool)
        self.episode_reward = np.zeros(n, dtype=np.float64)
        self.episode_length = np.zeros(n, dtype=np.int64)
        self.group_ids = np.zeros(n, dtype=np.int64)

    def write_group(self, slot: int, info: Mapping[str, Any]) -> None:
        """Store the agent's ``info["group_id"]`` (absent: 0), unique across envs."""
        group = int(info.get("group_id", 0))
        self.group_ids[slot] = self.agents[slot][0] * GROUP_ID_SPAN + group if group else 0

    def write_observation(self, slot: int, observation: Any) -> None:
        """Store one agent's observation (entry *i* of its own team's layout) in row ``slot``."""
        layout = self.observation_layouts[self.behavior_of_slot[slot]]
        values = [observation[name] for name in layout.names] if layout.is_dict else [observation]
        for array, value in zip(self.observations, values, strict=True):
            array[slot] = np.asarray(value).reshape(array.shape[1:])

    def write_mask(self, slot: int, info: Mapping[str, Any]) -> None:
        """Store the flat mask of ``info["action_mask"]`` (absent: all allowed) in row ``slot``.

        Raises:
            ValueError: the mask does not have one entry per discrete choice.
        """
        if not self.action_layout.has_discrete:
            return
        raw = info.get("action_mask")
        if raw is None:
            if self.mask is not None:
                self.mask[slot] = True
            return
        if self.mask is None:
            self.mask = self.action_layout.full_mask(self.num_slots)
        flat = _flat_mask(raw)
        if flat.size != self.action_layout.discrete_size:
            raise ValueError(
                f"info['action_mask'] of agent {self.agents[slot][1]!r} has {flat.size} entries "
                f"but its action space has {self.action_layout.discrete_size} choices (branches "
                f"{list(self.action_layout.discrete_branches)})."
            )
        self.mask[slot] = flat

    def copy_observations(self) -> list[np.ndarray]:
        """Copies of the per-entry arrays (trainers keep what a step hands them)."""
        return [array.copy() for array in self.observations]

    def copy_mask(self) -> np.ndarray | None:
        """A copy of the masks, or ``None`` while no agent has sent one."""
        return None if self.mask is None else self.mask.copy()


class ParallelEnvManager(LockstepEnvManager):
    """Drives PettingZoo parallel envs (one per game process) for one trainer per behavior name.

    See the module documentation for trainers, slots, episodes, rewards, masks and seeding.

    Args:
        envs: the envs, all with the same ``possible_agents`` and spaces. The manager resets
            each once without a seed to read its agents' behaviors (``unity_gym.pettingzoo``
            envs that were just created do not restart their game for that). From then on the
            manager owns them and :meth:`close` closes them; if the constructor raises, they
            are left open for the caller to close.
        trainer_name: maps a behavior group's candidate names to its trainer's name (default:
            the behavior name without team, :func:`default_trainer_name`).
        self_play: whether a trainer name is configured for self-play (its teams are then not
            warned about); default: none is.

    Raises:
        ConfigError: teams of one behavior name differ in observation shapes or actions, two
            groups get the same trainer name, or a space is not supported.
        ValueError: no env, envs that differ in ``possible_agents`` or behaviors, or an agent of
            ``possible_agents`` missing from the first episode.
    """

    def __init__(
        self,
        envs: Sequence[ParallelEnv[str, Any, Any]],
        trainer_name: TrainerNamer = default_trainer_name,
        self_play: Callable[[str], bool] | None = None,
    ) -> None:
        if not envs:
            raise ValueError("ParallelEnvManager needs at least one environment.")
        self.envs = list(envs)
        self._pool: ThreadPoolExecutor | None = None  # created last: nothing to stop on errors
        self._group_reward_seen = False
        behavior_of_agent = self._read_behaviors()
        possible = list(self.envs[0].possible_agents)
        ids = sorted(set(behavior_of_agent.values()))
        grouped: dict[str, list[str]] = {}
        for behavior_id in ids:
            grouped.setdefault(behavior_base_name(behavior_id), []).append(behavior_id)
        self._trainees: dict[str, _Trainee] = {}
        # (env index, agent) -> (trainer name, slot)
        self._slot_of: list[dict[str, tuple[str, int]]] = [{} for _ in self.envs]
        for base, members in grouped.items():
            name = trainer_name([base, *members])
            if name in self._trainees:
                raise ConfigError(
                    f"behaviors {self._trainees[name].behavior_ids} and {members} would both be "
                    f"trained by {name!r}; give them distinct configuration keys."
                )
            self._trainees[name] = self._make_trainee(name, members, possible, behavior_of_agent)
        shared = {
            n: t.behavior_ids
            for n, t in self._trainees.items()
            if len(t.behavior_ids) > 1 and not (self_play is not None and self_play(n))
        }
        if shared:
            logger.warning(
                "The environment has several teams of %s, but self-play is not configured: all "
                "teams of a behavior share one policy, trained by %s (add a self_play section "
                "to train one team at a time against snapshots of its policy).",
                ", ".join(f"{name} ({', '.join(ids)})" for name, ids in shared.items()),
                "the trainer of the same name" if len(shared) > 1 else repr(next(iter(shared))),
            )
        if len(self.envs) > 1:
            self._pool = ThreadPoolExecutor(len(self.envs), thread_name_prefix="pettingzoo-env")

    # -- construction -------------------------------------------------------------------------

    def _read_behaviors(self) -> dict[str, str]:
        """Agent name -> behavior id: from the env's ``metadata["agent_behaviors"]`` where it
        has one (``unity_gym``'s envs), else from a first unseeded reset of every env (each
        agent's ``info["behavior_name"]``)."""
        possible = list(self.envs[0].possible_agents)
        behavior_of_agent: dict[str, str] = {}
        for index, env in enumerate(self.envs):
            if list(env.possible_agents) != possible:
                raise ValueError(
                    f"environment {index} has agents {list(env.possible_agents)}, environment 0 "
                    f"has {possible}; all game processes must hold the same agents."
                )
            declared = dict(getattr(env, "metadata", None) or {}).get("agent_behaviors") or {}
            _, infos = env.reset()
            for agent in possible:
                if agent in declared:
                    behavior = str(declared[agent])
                elif agent in infos:
                    behavior = str(infos[agent].get("behavior_name") or agent.rsplit("_", 1)[0])
                else:
                    raise ValueError(
                        f"agent {agent!r} of possible_agents is not in the first episode of "
                        f"environment {index}; its behavior cannot be known."
                    )
                known = behavior_of_agent.setdefault(agent, behavior)
                if known != behavior:
                    raise ValueError(
                        f"agent {agent!r} has behavior {behavior!r} in environment {index} but "
                        f"{known!r} in environment 0; all game processes must be the same game."
                    )
        return behavior_of_agent

    def _make_trainee(
        self,
        name: str,
        behavior_ids: list[str],
        possible: list[str],
        behavior_of_agent: dict[str, str],
    ) -> _Trainee:
        first_env = self.envs[0]
        example = {
            behavior_id: next(a for a in possible if behavior_of_agent[a] == behavior_id)
            for behavior_id in behavior_ids
        }
        goal_keys = first_env.metadata.get("goal_signal_keys", {})
        observation_layouts = {
            behavior_id: ObservationLayout.from_space(
                first_env.observation_space(agent), goal_keys.get(behavior_id, ())
            )
            for behavior_id, agent in example.items()
        }
        action_layouts = {
            behavior_id: ActionLayout.from_space(first_env.action_space(agent))
            for behavior_id, agent in example.items()
        }
        reference = behavior_ids[0]
        for behavior_id in behavior_ids[1:]:
            if _observation_signature(observation_layouts[behavior_id]) != _observation_signature(
                observation_layouts[reference]
            ):
                raise ConfigError(
                    f"{behavior_id!r} and {reference!r} observe differently shaped inputs "
                    f"({_describe(observation_layouts[behavior_id])} vs "
                    f"{_describe(observation_layouts[reference])}); teams of one behavior name "
                    "share one policy and must observe the same shapes."
                )
            if _action_signature(action_layouts[behavior_id]) != _action_signature(
                action_layouts[reference]
            ):
                raise ConfigError(
                    f"{behavior_id!r} and {reference!r} have different action spaces; teams of "
                    "one behavior name share one policy and must act alike."
                )
        agents: list[tuple[int, str]] = []
        behavior_of_slot: list[str] = []
        for index in range(len(self.envs)):
            for agent in possible:
                if behavior_of_agent[agent] in behavior_ids:
                    self._slot_of[index][agent] = (name, len(agents))
                    agents.append((index, agent))
                    behavior_of_slot.append(behavior_of_agent[agent])
        trainee = _Trainee(
            name=name,
            behavior_ids=list(behavior_ids),
            observation_layouts=observation_layouts,
            action_layout=action_layouts[reference],
            agents=agents,
            behavior_of_slot=behavior_of_slot,
        )
        trainee.allocate()
        return trainee

    # -- the manager interface ----------------------------------------------------------------

    @property
    def behaviors(self) -> dict[str, BehaviorSlots]:
        """The slots of every trainer, keyed by trainer name."""
        return {
            name: BehaviorSlots(t.layout, t.action_layout, t.num_slots)
            for name, t in self._trainees.items()
        }

    @property
    def behavior_names(self) -> list[str]:
        """The trainer names, in order."""
        return list(self._trainees)

    @property
    def behavior_ids(self) -> dict[str, list[str]]:
        """The behavior ids (``Tennis?team=0``, ...) each trainer drives."""
        return {name: list(t.behavior_ids) for name, t in self._trainees.items()}

    @property
    def slot_teams(self) -> dict[str, list[int]]:
        """Per trainer, the team id of each slot in slot order (the ``?team=<t>`` suffix of
        its behavior id; 0 without one)."""
        return {
            name: [team_of(behavior_id) for behavior_id in t.behavior_of_slot]
            for name, t in self._trainees.items()
        }

    @property
    def slot_agents(self) -> dict[str, list[tuple[int, str]]]:
        """Per trainer, the ``(env index, agent name)`` of each slot, in slot order."""
        return {name: list(t.agents) for name, t in self._trainees.items()}

    def reset(self, seed: int | None) -> dict[str, BehaviorStep]:
        """Reset every env (env *i* with ``seed + i``).

        The result has no rewards, no done slot and ``valid`` all ``False`` (no action yet).
        """
        for trainee in self._trainees.values():
            trainee.live[:] = False
            trainee.episode_reward[:] = 0.0
            trainee.episode_length[:] = 0
        with hierarchical_timer("env_reset"):
            indices = list(range(len(self.envs)))
            starts = self._each(
                indices,
                lambda index: self.envs[index].reset(seed=None if seed is None else seed + index),
            )
            for index, (observations, infos) in zip(indices, starts, strict=True):
                self._start_episode(index, observations, infos)
        steps = {}
        for name, trainee in self._trainees.items():
            step = BehaviorStep.first(trainee.copy_observations(), trainee.copy_mask())
            step.group_ids = trainee.group_ids.copy()
            step.group_rewards = np.zeros(trainee.num_slots, dtype=np.float32)
            steps[name] = step
        return steps

    def step(self, decisions: dict[str, PolicyDecision]) -> dict[str, BehaviorStep]:
        """Act for every live agent, step every env, reset the envs that have no agent left.

        Args:
            decisions: per trainer, actions for all its slots (those of invalid slots are
                ignored).

        Returns:
            Per trainer, what each slot saw (see the module documentation).
        """
        actions = {
            name: trainee.action_layout.to_env(decisions[name].continuous, decisions[name].discrete)
            for name, trainee in self._trainees.items()
        }
        outcome = {name: _Outcome.empty(t.num_slots) for name, t in self._trainees.items()}
        for name, trainee in self._trainees.items():
            outcome[name].valid[:] = trainee.live
        emptied = []
        env_actions: dict[int, dict[str, Any]] = {}
        for index, env in enumerate(self.envs):
            live = list(env.agents)
            if not live:  # only possible if the env was reset into an empty episode
                emptied.append(index)
                continue
            slots = self._slot_of[index]
            env_actions[index] = {agent: _row(actions[slots[agent][0]], slots[agent][1])
                                  for agent in live}  # fmt: skip
        with hierarchical_timer("env_step"):
            stepping = list(env_actions)
            results = self._each(stepping, lambda index: self.envs[index].step(env_actions[index]))
        for index, (observations, rewards, terminations, truncations, infos) in zip(
            stepping, results, strict=True
        ):
            slots = self._slot_of[index]
            for agent in env_actions[index]:
                name, slot = slots[agent]
                trainee, result = self._trainees[name], outcome[name]
                info = infos.get(agent, {})
                group_reward = float(info.get("group_reward", 0.0))
                if group_reward and not self._group_reward_seen:
                    self._group_reward_seen = True
                    logger.info(
                        "Agents receive group rewards; they are added to each member's own "
                        "reward (POCA also credits them to the whole group)."
                    )
                result.rewards[slot] = float(rewards[agent]) + group_reward
                result.group_rewards[slot] = group_reward
                trainee.write_group(slot, info)
                result.terminated[slot] = bool(terminations[agent])
                result.truncated[slot] = bool(truncations[agent])
                trainee.write_observation(slot, observations[agent])
                trainee.write_mask(slot, info)
                if result.terminated[slot] or result.truncated[slot]:
                    trainee.live[slot] = False
            if not self.envs[index].agents:
                emptied.append(index)
        finals = {
            name: (trainee.copy_observations(), trainee.copy_mask())
            for name, trainee in self._trainees.items()
        }
        if emptied:
            emptied.sort()
            with hierarchical_timer("env_reset"):
                starts = self._each(emptied, lambda index: self.envs[index].reset())
                for index, (observations, infos) in zip(emptied, starts, strict=True):
                    self._start_episode(index, observations, infos)
        steps = {}
        for name, trainee in self._trainees.items():
            result = outcome[name]
            final_observations, final_mask = finals[name]
            steps[name] = BehaviorStep(
                observations=trainee.copy_observations() if emptied else final_observations,
                action_mask=trainee.copy_mask() if emptied else final_mask,
                rewards=result.rewards,
                terminated=result.terminated,
                truncated=result.truncated,
                valid=result.valid,
                final_observations=final_observations,
                final_action_mask=final_mask,
                episodes=self._track_episodes(trainee, result),
                group_ids=trainee.group_ids.copy(),
                group_rewards=result.group_rewards,
            )
        return steps

    def set_env_params(self, params: Mapping[str, Any]) -> bool:
        """Send environment parameters to every env's game (see
        :func:`~trainers.env_manager.apply_env_params`); False if an env cannot take them."""
        return all([apply_env_params(env, params) for env in self.envs])

    def close(self) -> None:
        """Close every env (all of them, even if closing one fails), then the env threads."""
        try:
            close_all(self.envs)  # first: a call still waiting for its game then fails at once
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)

    # -- helpers ------------------------------------------------------------------------------

    def _each(self, indices: Sequence[int], call: Callable[[int], _T]) -> list[_T]:
        """``call(index)`` for each of ``indices``, results in the same order.

        With several envs the calls run in the env threads at the same time. All of them have
        finished when this returns or raises (the first failure in ``indices`` order).
        """
        if self._pool is None or len(indices) < 2:
            return [call(index) for index in indices]
        futures: list[Future[_T]] = [self._pool.submit(call, index) for index in indices]
        wait_all(futures)
        return [future.result() for future in futures]

    def _start_episode(
        self, index: int, observations: Mapping[str, Any], infos: Mapping[str, Any]
    ) -> None:
        """Take the first observations of env ``index``'s new episode into the slots."""
        slots = self._slot_of[index]
        for name, slot in slots.values():
            self._trainees[name].live[slot] = False
        for agent in self.envs[index].agents:
            name, slot = slots[agent]
            trainee = self._trainees[name]
            trainee.live[slot] = True
            trainee.write_observation(slot, observations[agent])
            trainee.write_mask(slot, infos.get(agent, {}))
            trainee.write_group(slot, infos.get(agent, {}))

    @staticmethod
    def _track_episodes(trainee: _Trainee, result: _Outcome) -> list[tuple[float, int]]:
        valid = result.valid
        trainee.episode_reward += np.where(valid, result.rewards, 0.0)
        trainee.episode_length += valid
        done = result.terminated | result.truncated
        episodes = [
            (float(trainee.episode_reward[slot]), int(trainee.episode_length[slot]))
            for slot in np.flatnonzero(done)
        ]
        trainee.episode_reward[done] = 0.0
        trainee.episode_length[done] = 0
        return episodes


@dataclass
class _Outcome:
    """One step's per-slot results of one trainer."""

    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    valid: np.ndarray
    group_rewards: np.ndarray

    @classmethod
    def empty(cls, n: int) -> _Outcome:
        """No reward, nothing done, no slot valid, for ``n`` slots."""
        return cls(
            rewards=np.zeros(n, dtype=np.float32),
            terminated=np.zeros(n, dtype=bool),
            truncated=np.zeros(n, dtype=bool),
            valid=np.zeros(n, dtype=bool),
            group_rewards=np.zeros(n, dtype=np.float32),
        )


def _row(batch: Any, slot: int) -> Any:
    """One slot's action out of a batch in :meth:`ActionLayout.to_env` format."""
    if isinstance(batch, Mapping):
        return {key: value[slot] for key, value in batch.items()}
    return batch[slot]


def _flat_mask(raw: Any) -> np.ndarray:
    """A ``space.sample(mask=...)`` mask as one flat bool array (``True`` = allowed)."""
    if isinstance(raw, Mapping):
        raw = raw.get("discrete")
        if raw is None:
            return np.zeros(0, dtype=bool)
    if isinstance(raw, tuple | list):
        parts = [np.asarray(part).reshape(-1) for part in raw]
        return np.concatenate(parts).astype(bool) if parts else np.zeros(0, dtype=bool)
    return np.asarray(raw).reshape(-1).astype(bool)


def _observation_signature(layout: ObservationLayout) -> tuple[object, ...]:
    """Everything about a layout's entries except their names."""
    return (
        layout.is_dict,
        tuple(
            (
                e.kind,
                e.raw_shape,
                e.network_shape,
                np.dtype(e.raw_dtype).str,
                e.channels_last,
                e.scale,
                e.categories,
                e.offsets,
                e.goal,
            )
            for e in layout.entries
        ),
    )


def _action_signature(layout: ActionLayout) -> tuple[object, ...]:
    """Everything about an action layout, comparable with ``==`` (bounds as tuples)."""

    def values(array: np.ndarray | None) -> tuple[float, ...] | None:
        return None if array is None else tuple(float(v) for v in np.asarray(array).reshape(-1))

    return (
        layout.kind,
        layout.continuous_size,
        layout.discrete_branches,
        values(layout.low),
        values(layout.high),
        layout.box_shape,
        None if layout.box_dtype is None else np.dtype(layout.box_dtype).str,
        layout.discrete_start,
        layout.discrete_is_scalar,
    )


def _describe(layout: ObservationLayout) -> str:
    """``name: shape`` of every entry, for error messages."""
    return ", ".join(f"{e.name}: {e.raw_shape}" for e in layout.entries)


def close_all(envs: Sequence[ParallelEnv[str, Any, Any]]) -> None:
    """Close every env, even if closing one fails (the first error is raised at the end)."""
    errors: list[BaseException] = []
    for env in envs:
        try:
            env.close()
        except Exception as exc:  # close the others, then report
            errors.append(exc)
    if errors:
        raise errors[0]
