"""A Gymnasium vector env as a game front: every slot is one agent of one behavior.

The front hides the vector env's autoreset mode: with ``SAME_STEP`` the final observation of a
finished episode comes from ``info["final_obs"]``; with ``NEXT_STEP`` (Gymnasium's default) the
step after an episode end only resets the slot, so that step is reported with ``valid = False``
(its action was ignored and it must not be learned from). A slot whose agent left the game
(``info["vacant"]``, e.g. DungeonEscape's sacrificed agent) is reported with ``valid = False``
while it stays vacant and at the step a new agent takes it (whose observation starts a new
episode). Action masks are read from
``info["action_mask"]`` (Gymnasium convention: one flat bool array per slot, ``True`` = allowed);
slots without one get an all-allowed mask, and as long as the environment has never sent a mask
the mask is ``None``. Group rewards and group ids are ``info["group_reward"]`` and
``info["group_id"]`` where the env reports them (``unity_gym``'s vector env does).

A vector env with EnvPool's ``send(actions, env_ids)`` / ``recv()`` and several game processes
(``unity_gym``'s, ``agents_per_process`` slots each) is stepped asynchronously: each game is a
group, its ``recv`` batch is set to one game, and a game gets its next actions as soon as its
step is in while the others keep playing. Any other vector env is stepped in lock-step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.game_fronts.base import FrontActions, FrontAgent, FrontRows, FrontStep, GameFront
from trainers.settings import ConfigError
from unity_gym.side_channels import EnvironmentStats
from unity_gym.timers import hierarchical_timer

__all__ = ["VectorFront", "apply_env_params", "take_game_stats"]


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


def take_game_stats(env: Any) -> EnvironmentStats:
    """``env.unwrapped.get_and_reset_stats()`` (the game statistics of ``UnityVectorEnv``,
    ``UnityParallelEnv`` and ``RayParallelEnv``); empty for an environment without it."""
    getter = getattr(getattr(env, "unwrapped", env), "get_and_reset_stats", None)
    return {} if getter is None else dict(getter())


class VectorFront(GameFront):
    """Drives one Gymnasium ``VectorEnv`` whose slots are all agents of ``behavior_id``.

    Args:
        env: the vector env; the front owns it from now on (:meth:`close` closes it).
        behavior_id: the behavior every slot belongs to.

    Raises:
        ConfigError: the env has autoreset disabled.
    """

    def __init__(self, env: VectorEnv, behavior_id: str) -> None:
        self.env = env
        self.behavior_id = behavior_id
        self.num_slots = int(env.num_envs)
        layout = ObservationLayout.from_space(
            env.single_observation_space,
            env.metadata.get("goal_signal_keys", ()),
            env.metadata.get("variable_length_keys", ()),
        )
        self.observation_layouts = {behavior_id: layout}
        self.action_layouts = {behavior_id: ActionLayout.from_space(env.single_action_space)}
        mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        self.autoreset_mode = AutoresetMode(mode) if not isinstance(mode, AutoresetMode) else mode
        if self.autoreset_mode == AutoresetMode.DISABLED:
            raise ConfigError(
                "the vector environment has autoreset disabled; create it with "
                "autoreset_mode NEXT_STEP or SAME_STEP so that finished slots restart."
            )
        per_game = int(getattr(env, "agents_per_process", 0) or 0)
        self.per_game = per_game if 0 < per_game <= self.num_slots else self.num_slots
        self.asynchronous = (
            hasattr(env, "send") and hasattr(env, "recv") and 0 < per_game < self.num_slots
        )
        if self.asynchronous:
            env.batch_size = per_game  # type: ignore[attr-defined]  # recv: one game at a time
        size = per_game if self.asynchronous else self.num_slots
        self._groups = [np.arange(i, i + size) for i in range(0, self.num_slots, size)]
        self.agents = [
            FrontAgent(slot // self.per_game, behavior_id, f"slot {slot}")
            for slot in range(self.num_slots)
        ]
        self._needs_reset = np.zeros(self.num_slots, dtype=bool)
        self._masks_seen = False
        self._sent = np.zeros(len(self._groups), dtype=bool)
        self._pending: np.ndarray | None = None  # lock-step: actions of the whole env

    @property
    def groups(self) -> list[np.ndarray]:
        """One group per game when stepping asynchronously, else one of every slot."""
        return self._groups

    @property
    def in_flight(self) -> int:
        """Groups that were sent actions and whose step was not received yet."""
        return int(self._sent.sum())

    def reset(self, seed: int | None) -> list[FrontStep]:
        """Reset the vector env; one step per group, in group order."""
        with hierarchical_timer("env_reset"):
            observations, infos = self.env.reset(seed=seed)
        self._needs_reset[:] = False
        self._sent[:] = False
        self._pending = None
        layout = self.observation_layouts[self.behavior_id]
        obs = layout.split(observations)
        mask = self._mask(infos, self.num_slots)
        reported = isinstance(infos, dict) and infos.get("group_reward") is not None
        whole = FrontRows.first(
            np.arange(self.num_slots, dtype=np.int64),
            obs,
            mask,
            _group_ids(infos, self.num_slots),
            reports_group_rewards=reported,
        )
        if len(self._groups) == 1:
            return [(0, {self.behavior_id: whole})]
        return [(g, {self.behavior_id: whole.take(rows)}) for g, rows in enumerate(self._groups)]

    def send(self, group: int, actions: FrontActions) -> None:
        """Give one game its slots' actions; it steps at once (lock-step: kept until
        :meth:`receive`)."""
        batch = actions[self.behavior_id]
        if self.asynchronous:  # the env refuses a game whose step is still running
            with hierarchical_timer("env_send"):
                self.env.send(batch, self._groups[group])  # type: ignore[attr-defined]
        else:
            if group != 0 or self._sent[0]:
                raise ValueError(f"group {group} was sent twice or does not exist (only group 0).")
            self._pending = batch
        self._sent[group] = True

    def receive(self, timeout: float | None) -> FrontStep:
        """The next game whose step is in (lock-step: the whole env's step)."""
        if not self._sent.any():
            raise ValueError("receive() without send(): no step is under way.")
        if not self.asynchronous:
            actions, self._pending = self._pending, None
            with hierarchical_timer("env_step"):
                result = self.env.step(actions)
            self._sent[0] = False
            return 0, {self.behavior_id: self._rows(self._groups[0], *result)}
        with hierarchical_timer("env_receive"):
            observations, rewards, terminated, truncated, infos = self.env.recv(timeout=timeout)  # type: ignore[attr-defined]
        ids = np.asarray(infos["env_id"], dtype=np.int64)
        group = int(ids[0]) // len(self._groups[0])
        if not np.array_equal(ids, self._groups[group]):
            raise RuntimeError(f"recv() returned slots {ids.tolist()}, not one whole game.")
        self._sent[group] = False
        rows = self._rows(ids, observations, rewards, terminated, truncated, infos)
        return group, {self.behavior_id: rows}

    def take_stats(self) -> EnvironmentStats:
        """The vector env's game statistics since the previous call (see
        :func:`take_game_stats`)."""
        return take_game_stats(self.env)

    def set_env_params(self, params: Mapping[str, Any]) -> bool:
        """Send environment parameters to the vector env's games (see :func:`apply_env_params`)."""
        return apply_env_params(self.env, params)

    def close(self) -> None:
        """Close the environment."""
        self.env.close()

    # -- helpers --------------------------------------------------------------------------

    def _rows(
        self,
        rows: np.ndarray,
        observations: Any,
        rewards: Any,
        terminated: Any,
        truncated: Any,
        infos: dict[str, Any],
    ) -> FrontRows:
        """The rows of slots ``rows`` (in the env's batch order) from the env's answer."""
        n = len(rows)
        obs = self.observation_layouts[self.behavior_id].split(observations)
        mask = self._mask(infos, n)
        valid = ~self._needs_reset[rows]
        rewards = np.where(valid, np.asarray(rewards, dtype=np.float32).reshape(n), 0.0)
        raw_group_rewards = infos.get("group_reward") if isinstance(infos, dict) else None
        group_rewards = None
        if raw_group_rewards is not None:
            group_rewards = np.asarray(raw_group_rewards, dtype=np.float32).reshape(n)
            group_rewards = np.where(valid, group_rewards, 0.0).astype(np.float32)
        terminated = np.array(terminated, dtype=bool).reshape(n) & valid
        truncated = np.array(truncated, dtype=bool).reshape(n) & valid
        done = terminated | truncated
        final_obs, final_mask = obs, mask
        if done.any():
            final_obs, final_mask = self._final_observations(obs, mask, infos, done)
        vacant = infos.get("vacant") if isinstance(infos, dict) else None
        left = np.zeros(n, dtype=bool) if vacant is None else np.asarray(vacant, bool).reshape(n)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            self._needs_reset[rows] = done | left
        else:
            self._needs_reset[rows] = left
        return FrontRows(
            agents=np.asarray(rows, dtype=np.int64),
            observations=obs,
            action_mask=mask,
            rewards=rewards.astype(np.float32),
            group_rewards=group_rewards,
            terminated=terminated,
            truncated=truncated,
            valid=valid,
            final_observations=final_obs,
            final_action_mask=final_mask,
            group_ids=_group_ids(infos, n),
        )

    def _mask(self, infos: dict[str, Any], n: int) -> np.ndarray | None:
        """The ``(n, choices)`` mask of the ``n`` rows of ``infos`` (``None``: no masks yet)."""
        layout = self.action_layouts[self.behavior_id]
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
        layout = self.observation_layouts[self.behavior_id]
        stacked = layout.stack_single([final_raw[i] for i in rows])
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


def _group_ids(infos: Any, n: int) -> np.ndarray | None:
    """``infos["group_id"]`` as ``int64`` (``None`` when the env reports no groups)."""
    reported = infos.get("group_id") if isinstance(infos, dict) else None
    if reported is None:
        return None
    return np.asarray(reported, dtype=np.int64).reshape(n)
