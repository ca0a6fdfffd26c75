"""Steps a Gymnasium vector environment and hands each behavior its slots' outcomes.

Every slot of the vector environment is one agent of the behavior. The manager hides the
vector env's autoreset mode: with ``SAME_STEP`` the final observation of a finished episode
comes from ``info["final_obs"]``; with ``NEXT_STEP`` (Gymnasium's default) the step after an
episode end only resets the slot, so that step is reported with ``valid = False`` (its action was
ignored and it must not be learned from). Action masks are read from ``info["action_mask"]``
(Gymnasium convention: one flat bool array per slot, ``True`` = allowed); slots without one get
an all-allowed mask, and as long as the environment has never sent a mask the mask is ``None``
(everything allowed, nothing to compute).

:class:`EnvManager` is the interface the training loop uses; :class:`VectorEnvManager` (one
behavior, one vector env) and :class:`trainers.parallel_env_manager.ParallelEnvManager` (several
behaviors, PettingZoo parallel envs) implement it.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.settings import ConfigError
from unity_gym.timers import hierarchical_timer

__all__ = [
    "GROUP_ID_SPAN",
    "BehaviorSlots",
    "BehaviorStep",
    "EnvManager",
    "LockstepEnvManager",
    "PolicyDecision",
    "VectorEnvManager",
    "apply_env_params",
]

#: Group ids of game *i* are offset by ``i * GROUP_ID_SPAN`` (Unity's ids are 32-bit), so that
#: groups of different game processes never share an id.
GROUP_ID_SPAN = 2**32

logger = logging.getLogger(__name__)


@dataclass
class PolicyDecision:
    """Actions for every slot of a behavior: ``[-1, 1]`` floats and/or branch indices."""

    continuous: np.ndarray | None
    discrete: np.ndarray | None


@dataclass
class BehaviorStep:
    """What one behavior's slots saw after an env step (or after reset).

    Attributes:
        observations: per-entry arrays ``(n, ...)``: the observations to act on next.
        action_mask: ``(n, sum(branches))`` bools (``True`` = allowed); ``None`` = everything
            allowed (no discrete actions, or the environment never sent a mask).
        rewards, terminated, truncated: the step's outcome per slot.
        valid: ``False`` where the slot's action was ignored (next-step autoreset).
        final_observations: successor observations: the final observation where an episode
            ended, else the same rows as ``observations``.
        final_action_mask: the action mask matching ``final_observations``.
        episodes: ``(cumulative reward, length)`` of each episode that ended at this step.
        group: the slot group these rows are (0 when the manager steps all slots together).
            Groups step independently (one game process each in an asynchronous vector env);
            a trainer pairs a group's decision with that group's next step.
        group_ids: each slot's multi-agent group (ML-Agents' ``group_id``) as last reported,
            made unique across the manager's game processes; 0 = in no group. ``None`` when
            the manager does not report groups (then every agent counts as alone).
        group_rewards: each slot's group reward of this step (already included in
            ``rewards``, as ML-Agents' extrinsic signal adds it for PPO and SAC); ``None``
            when the manager does not report groups.
    """

    observations: list[np.ndarray]
    action_mask: np.ndarray | None
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    valid: np.ndarray
    final_observations: list[np.ndarray]
    final_action_mask: np.ndarray | None
    episodes: list[tuple[float, int]] = field(default_factory=list)
    group: int = 0
    group_ids: np.ndarray | None = None
    group_rewards: np.ndarray | None = None

    @property
    def done(self) -> np.ndarray:
        """Slots whose episode ended at this step."""
        return self.terminated | self.truncated

    @classmethod
    def first(cls, observations: list[np.ndarray], action_mask: np.ndarray | None) -> BehaviorStep:
        """The step after a reset: no reward, no done slot, ``valid`` all ``False``."""
        n = len(observations[0])
        return cls(
            observations=observations,
            action_mask=action_mask,
            rewards=np.zeros(n, dtype=np.float32),
            terminated=np.zeros(n, dtype=bool),
            truncated=np.zeros(n, dtype=bool),
            valid=np.zeros(n, dtype=bool),
            final_observations=observations,
            final_action_mask=action_mask,
        )


@dataclass(frozen=True)
class BehaviorSlots:
    """The fixed set of slots one trainer drives.

    Attributes:
        observation_layout: the observation entries of one slot.
        action_layout: the policy's actions for one slot and their environment format.
        num_slots: how many slots the behavior has in all (fixed for the whole run, in a stable
            order); a :class:`BehaviorStep` holds the rows of one slot group of them.
    """

    observation_layout: ObservationLayout
    action_layout: ActionLayout
    num_slots: int


class EnvManager(Protocol):
    """What the training loop needs from an environment manager.

    ``behaviors`` names one trainer per key. The loop is asynchronous: :meth:`start` resets
    everything and returns the first observations of every slot *group*; :meth:`send` gives a
    group its next actions (one :class:`PolicyDecision` per key, one row per slot of the group)
    and :meth:`receive` returns the next group whose step finished, one :class:`BehaviorStep`
    per key, all with that ``group``. Managers that step every slot together have one group
    (:class:`LockstepEnvManager`).
    """

    @property
    def behaviors(self) -> dict[str, BehaviorSlots]:
        """The slots of every trainer, keyed by trainer (behavior) name."""
        ...

    @property
    def behavior_names(self) -> list[str]:
        """The keys of :attr:`behaviors`, in order."""
        ...

    @property
    def in_flight(self) -> int:
        """Groups that were sent actions and whose step was not received yet."""
        ...

    def start(self, seed: int | None) -> list[dict[str, BehaviorStep]]:
        """Reset every slot; per group, steps with no reward, no done slot, ``valid`` False."""
        ...

    def send(self, group: int, decisions: dict[str, PolicyDecision]) -> None:
        """Give ``group`` its next actions (it then steps)."""
        ...

    def receive(self) -> dict[str, BehaviorStep]:
        """Wait for the next group whose step finished and return what its slots saw."""
        ...

    def receive_ready(self) -> list[dict[str, BehaviorStep]]:
        """:meth:`receive`, plus every other group whose step is already in (no more waiting)."""
        ...

    def set_env_params(self, params: Mapping[str, Any]) -> bool:
        """Send environment parameters to the running games (:func:`apply_env_params`);
        False when the environment cannot take them."""
        ...

    def close(self) -> None:
        """Close the environment(s)."""
        ...


def apply_env_params(env: Any, params: Mapping[str, Any]) -> bool:
    """Call ``env.unwrapped.set_env_params(params)`` (the public method of ``UnityVectorEnv``,
    ``UnityParallelEnv`` and ``RayParallelEnv``).

    Returns:
        False, without doing anything, when the environment has no such method (a plain
        Gymnasium env, or Unity games vectorized by Gymnasium's own vector envs).
    """
    setter = getattr(getattr(env, "unwrapped", env), "set_env_params", None)
    if setter is None:
        return False
    setter(dict(params))
    return True


class LockstepEnvManager(ABC):
    """A manager that steps all its slots together: one group, ``0``.

    Subclasses implement :meth:`reset` and :meth:`step`; :meth:`start`, :meth:`send` and
    :meth:`receive` map the asynchronous interface onto them.
    """

    _decisions: dict[str, PolicyDecision] | None = None

    @abstractmethod
    def reset(self, seed: int | None) -> dict[str, BehaviorStep]:
        """Reset every slot; no rewards, no done slot, ``valid`` all ``False`` (no action yet)."""

    @abstractmethod
    def step(self, decisions: dict[str, PolicyDecision]) -> dict[str, BehaviorStep]:
        """Act for every slot and return what each slot saw."""

    @property
    def in_flight(self) -> int:
        """1 between :meth:`send` and :meth:`receive`, else 0."""
        return int(self._decisions is not None)

    def start(self, seed: int | None) -> list[dict[str, BehaviorStep]]:
        """:meth:`reset`, as the only group."""
        self._decisions = None
        return [self.reset(seed)]

    def send(self, group: int, decisions: dict[str, PolicyDecision]) -> None:
        """Keep the actions for the next :meth:`receive`."""
        if group != 0 or self._decisions is not None:
            raise ValueError(f"group {group} was sent twice or does not exist (only group 0).")
        self._decisions = decisions

    def receive(self) -> dict[str, BehaviorStep]:
        """:meth:`step` with the sent actions."""
        if self._decisions is None:
            raise ValueError("receive() without send(): no step is under way.")
        decisions, self._decisions = self._decisions, None
        return self.step(decisions)

    def receive_ready(self) -> list[dict[str, BehaviorStep]]:
        """The one group's :meth:`receive`."""
        return [self.receive()]


class VectorEnvManager(LockstepEnvManager):
    """Drives one Gymnasium ``VectorEnv`` whose slots all belong to ``behavior_name``.

    A vector env with EnvPool's ``send(actions, env_ids)`` / ``recv()`` and several game
    processes (``unity_gym``'s, ``agents_per_process`` slots each) is stepped asynchronously:
    each game is a group, its ``recv`` batch is set to one game, and a game gets its next
    actions as soon as its step is in, while the others keep playing. Any other vector env is
    stepped in lock-step (:meth:`step`, one group).

    The learning reward of a slot is its reward plus ``info["group_reward"]`` where the env
    reports one, as ML-Agents' extrinsic reward signal does.
    """

    def __init__(self, env: VectorEnv, behavior_name: str) -> None:
        self.env = env
        self.behavior_name = behavior_name
        self.num_slots = int(env.num_envs)
        self.observation_layout = ObservationLayout.from_space(
            env.single_observation_space, env.metadata.get("goal_signal_keys", ())
        )
        self.action_layout = ActionLayout.from_space(env.single_action_space)
        mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        self.autoreset_mode = AutoresetMode(mode) if not isinstance(mode, AutoresetMode) else mode
        if self.autoreset_mode == AutoresetMode.DISABLED:
            raise ConfigError(
                "the vector environment has autoreset disabled; create it with "
                "autoreset_mode NEXT_STEP or SAME_STEP so that finished slots restart."
            )
        self._episode_reward = np.zeros(self.num_slots, dtype=np.float64)
        self._episode_length = np.zeros(self.num_slots, dtype=np.int64)
        self._needs_reset = np.zeros(self.num_slots, dtype=bool)
        self._masks_seen = False
        per_game = int(getattr(env, "agents_per_process", 0) or 0)
        self.asynchronous = (
            hasattr(env, "send") and hasattr(env, "recv") and 0 < per_game < self.num_slots
        )
        if self.asynchronous:
            env.batch_size = per_game  # type: ignore[attr-defined]  # recv: one game at a time
        size = per_game if self.asynchronous else self.num_slots
        self._per_game = per_game if 0 < per_game <= self.num_slots else self.num_slots
        self.groups = [np.arange(i, i + size) for i in range(0, self.num_slots, size)]
        self._sent = np.zeros(len(self.groups), dtype=bool)

    @property
    def behaviors(self) -> dict[str, BehaviorSlots]:
        """The one behavior of the vector env and its slots."""
        slots = BehaviorSlots(self.observation_layout, self.action_layout, self.num_slots)
        return {self.behavior_name: slots}

    @property
    def behavior_names(self) -> list[str]:
        """The behaviors this manager serves."""
        return [self.behavior_name]

    def reset(self, seed: int | None) -> dict[str, BehaviorStep]:
        """Reset every slot; no rewards, no done slot, ``valid`` all ``False`` (no action yet)."""
        with hierarchical_timer("env_reset"):
            observations, infos = self.env.reset(seed=seed)
        obs = self.observation_layout.split(observations)
        mask = self._mask(infos, self.num_slots)
        self._episode_reward[:] = 0.0
        self._episode_length[:] = 0
        self._needs_reset[:] = False
        self._sent[:] = False
        first = BehaviorStep.first(obs, mask)
        first.group_ids = self._group_ids(np.arange(self.num_slots), infos)
        if first.group_ids is not None:
            first.group_rewards = np.zeros(self.num_slots, dtype=np.float32)
        return {self.behavior_name: first}

    def step(self, decisions: dict[str, PolicyDecision]) -> dict[str, BehaviorStep]:
        """Send the behaviors' actions to every slot and return what each slot saw."""
        decision = decisions[self.behavior_name]
        actions = self.action_layout.to_env(decision.continuous, decision.discrete)
        with hierarchical_timer("env_step"):
            result = self.env.step(actions)
        return {self.behavior_name: self._outcome(np.arange(self.num_slots), 0, *result)}

    # -- asynchronous stepping -------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        """Groups (games) that were sent actions and whose step was not received yet."""
        if not self.asynchronous:
            return super().in_flight
        return int(self._sent.sum())

    def start(self, seed: int | None) -> list[dict[str, BehaviorStep]]:
        """Reset every slot; one step per group (game), in group order."""
        if not self.asynchronous:
            return super().start(seed)
        whole = self.reset(seed)[self.behavior_name]
        return [{self.behavior_name: _rows(whole, rows, g)} for g, rows in enumerate(self.groups)]

    def send(self, group: int, decisions: dict[str, PolicyDecision]) -> None:
        """Give one game its slots' actions; it steps at once."""
        if not self.asynchronous:
            super().send(group, decisions)
            return
        decision = decisions[self.behavior_name]
        actions = self.action_layout.to_env(decision.continuous, decision.discrete)
        with hierarchical_timer("env_send"):
            self.env.send(actions, self.groups[group])  # type: ignore[attr-defined]
        self._sent[group] = True

    def receive(self) -> dict[str, BehaviorStep]:
        """Wait for the next game whose step finished."""
        if not self.asynchronous:
            return super().receive()
        return self._receive_game(timeout=None)

    def receive_ready(self) -> list[dict[str, BehaviorStep]]:
        """The next game to finish, plus the games whose steps are already in."""
        if not self.asynchronous:
            return super().receive_ready()
        received = [self._receive_game(timeout=None)]
        while self.in_flight:
            try:
                received.append(self._receive_game(timeout=0.0))
            except TimeoutError:  # nothing else is in yet
                break
        return received

    def _receive_game(self, timeout: float | None) -> dict[str, BehaviorStep]:
        with hierarchical_timer("env_receive"):
            observations, rewards, terminated, truncated, infos = self.env.recv(timeout=timeout)  # type: ignore[attr-defined]
        ids = np.asarray(infos["env_id"], dtype=np.int64)
        group = int(ids[0]) // len(self.groups[0])
        if not np.array_equal(ids, self.groups[group]):
            raise RuntimeError(f"recv() returned slots {ids.tolist()}, not one whole game.")
        self._sent[group] = False
        step = self._outcome(ids, group, observations, rewards, terminated, truncated, infos)
        return {self.behavior_name: step}

    def set_env_params(self, params: Mapping[str, Any]) -> bool:
        """Send environment parameters to the vector env's games (see :func:`apply_env_params`)."""
        return apply_env_params(self.env, params)

    def close(self) -> None:
        """Close the environment."""
        self.env.close()

    # -- helpers --------------------------------------------------------------------------

    def _outcome(
        self,
        rows: np.ndarray,
        group: int,
        observations: Any,
        rewards: Any,
        terminated: Any,
        truncated: Any,
        infos: dict[str, Any],
    ) -> BehaviorStep:
        """The step of slots ``rows`` (in the env's batch order) from the env's answer."""
        n = len(rows)
        obs = self.observation_layout.split(observations)
        mask = self._mask(infos, n)
        rewards = np.asarray(rewards, dtype=np.float32).reshape(n)
        group_rewards = infos.get("group_reward") if isinstance(infos, dict) else None
        if group_rewards is not None:
            rewards = rewards + np.asarray(group_rewards, dtype=np.float32).reshape(n)
        terminated = np.array(terminated, dtype=bool).reshape(n)
        truncated = np.array(truncated, dtype=bool).reshape(n)
        valid = ~self._needs_reset[rows]
        terminated &= valid
        truncated &= valid
        done = terminated | truncated
        final_obs, final_mask = obs, mask
        if done.any():
            final_obs, final_mask = self._final_observations(obs, mask, infos, done)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            self._needs_reset[rows] = done
        episodes = self._track_episodes(rows, rewards, valid, done)
        return BehaviorStep(
            observations=obs,
            action_mask=mask,
            rewards=np.where(valid, rewards, 0.0).astype(np.float32),
            terminated=terminated,
            truncated=truncated,
            valid=valid,
            final_observations=final_obs,
            final_action_mask=final_mask,
            episodes=episodes,
            group=group,
            group_ids=self._group_ids(rows, infos),
            group_rewards=(
                None
                if group_rewards is None
                else np.where(valid, np.asarray(group_rewards, np.float32).reshape(n), 0.0)
            ),
        )

    def _group_ids(self, rows: np.ndarray, infos: Any) -> np.ndarray | None:
        """``infos["group_id"]`` of slots ``rows``, unique across games (game *i*'s group *g*
        is ``i * GROUP_ID_SPAN + g``, 0 = none); ``None`` when the env reports no groups."""
        reported = infos.get("group_id") if isinstance(infos, dict) else None
        if reported is None:
            return None
        ids = np.asarray(reported, dtype=np.int64).reshape(len(rows))
        return np.where(ids != 0, rows // self._per_game * GROUP_ID_SPAN + ids, 0)

    def _track_episodes(
        self, rows: np.ndarray, rewards: np.ndarray, valid: np.ndarray, done: np.ndarray
    ) -> list[tuple[float, int]]:
        self._episode_reward[rows] += np.where(valid, rewards, 0.0)
        self._episode_length[rows] += valid
        finished = rows[done]
        episodes = [
            (float(self._episode_reward[slot]), int(self._episode_length[slot]))
            for slot in finished
        ]
        self._episode_reward[finished] = 0.0
        self._episode_length[finished] = 0
        return episodes

    def _mask(self, infos: dict[str, Any], n: int) -> np.ndarray | None:
        """The ``(n, choices)`` mask of the ``n`` rows of ``infos`` (``None``: no masks yet)."""
        layout = self.action_layout
        if not layout.has_discrete:
            return None
        raw = infos.get("action_mask") if isinstance(infos, dict) else None
        if raw is None and not self._masks_seen:
            return None
        self._masks_seen = True
        mask = layout.full_mask(n)
        if raw is None:
            return mask
        present = np.asarray(infos.get("_action_mask", np.ones(n, dtype=bool)))
        rows = np.flatnonzero(present)
        if rows.size:
            values = np.stack([np.asarray(raw[i], dtype=bool).reshape(-1) for i in rows])
            if values.shape[1] != layout.discrete_size:
                raise ValueError(
                    f"info['action_mask'] has {values.shape[1]} entries per slot but the action "
                    f"space has {layout.discrete_size} choices (branches "
                    f"{list(layout.discrete_branches)}); give one flat bool per choice."
                )
            mask[rows] = values
        return mask

    def _final_observations(
        self,
        obs: list[np.ndarray],
        mask: np.ndarray | None,
        infos: dict[str, Any],
        done: np.ndarray,
    ) -> tuple[list[np.ndarray], np.ndarray | None]:
        """Successor observations: ``info["final_obs"]`` rows replace the done slots."""
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            return obs, mask  # the returned observations are the final ones
        final_raw = infos.get("final_obs")
        if final_raw is None:
            raise ValueError(
                "the vector environment uses SAME_STEP autoreset but gave no info['final_obs'] "
                "for finished slots; it cannot be trained on."
            )
        rows = np.flatnonzero(done)
        stacked = self.observation_layout.stack_single([final_raw[i] for i in rows])
        final_obs = [array.copy() for array in obs]
        for entry, values in zip(final_obs, stacked, strict=True):
            entry[rows] = values.reshape(entry[rows].shape)
        final_mask = mask
        if mask is not None:  # without masks so far, final observations need none either
            final_mask = mask.copy()
            final_mask[rows] = True
            final_info = infos.get("final_info")
            if isinstance(final_info, dict) and "action_mask" in final_info:
                present = final_info.get("_action_mask", np.ones(len(done), dtype=bool))
                for i in rows:
                    if present[i]:
                        final_mask[i] = np.asarray(final_info["action_mask"][i], dtype=bool)
        return final_obs, final_mask


def _rows(step: BehaviorStep, rows: np.ndarray, group: int) -> BehaviorStep:
    """The rows ``rows`` of ``step`` as the step of ``group``."""

    def pick(array: np.ndarray | None) -> np.ndarray | None:
        return None if array is None else array[rows]

    return BehaviorStep(
        observations=[entry[rows] for entry in step.observations],
        action_mask=pick(step.action_mask),
        rewards=step.rewards[rows],
        terminated=step.terminated[rows],
        truncated=step.truncated[rows],
        valid=step.valid[rows],
        final_observations=[entry[rows] for entry in step.final_observations],
        final_action_mask=pick(step.final_action_mask),
        group=group,
        group_ids=pick(step.group_ids),
        group_rewards=pick(step.group_rewards),
    )
