"""Steps a Gymnasium vector environment and hands each behavior its slots' outcomes.

Every slot of the vector environment is one agent of the behavior. The manager hides the
vector env's autoreset mode: with ``SAME_STEP`` the final observation of a finished episode
comes from ``info["final_obs"]``; with ``NEXT_STEP`` (Gymnasium's default) the step after an
episode end only resets the slot, so that step is reported with ``valid = False`` (its action was
ignored and it must not be learned from). Action masks are read from ``info["action_mask"]``
(Gymnasium convention: one flat bool array per slot, ``True`` = allowed); slots without one get
an all-allowed mask, and as long as the environment has never sent a mask the mask is ``None``
(everything allowed, nothing to compute).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.settings import ConfigError
from unity_gym.timers import hierarchical_timer

__all__ = ["BehaviorStep", "PolicyDecision", "VectorEnvManager"]

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

    @property
    def done(self) -> np.ndarray:
        """Slots whose episode ended at this step."""
        return self.terminated | self.truncated


class VectorEnvManager:
    """Drives one Gymnasium ``VectorEnv`` whose slots all belong to ``behavior_name``."""

    def __init__(self, env: VectorEnv, behavior_name: str) -> None:
        self.env = env
        self.behavior_name = behavior_name
        self.num_slots = int(env.num_envs)
        self.observation_layout = ObservationLayout.from_space(env.single_observation_space)
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

    @property
    def behavior_names(self) -> list[str]:
        """The behaviors this manager serves."""
        return [self.behavior_name]

    def reset(self, seed: int | None) -> dict[str, BehaviorStep]:
        """Reset every slot; the result has no rewards and only valid, not-done slots."""
        with hierarchical_timer("env_reset"):
            observations, infos = self.env.reset(seed=seed)
        obs = self.observation_layout.split(observations)
        mask = self._mask(infos)
        n = self.num_slots
        self._episode_reward[:] = 0.0
        self._episode_length[:] = 0
        self._needs_reset[:] = False
        step = BehaviorStep(
            observations=obs,
            action_mask=mask,
            rewards=np.zeros(n, dtype=np.float32),
            terminated=np.zeros(n, dtype=bool),
            truncated=np.zeros(n, dtype=bool),
            valid=np.zeros(n, dtype=bool),
            final_observations=obs,
            final_action_mask=mask,
        )
        return {self.behavior_name: step}

    def step(self, decisions: dict[str, PolicyDecision]) -> dict[str, BehaviorStep]:
        """Send the behaviors' actions and return what each slot saw."""
        decision = decisions[self.behavior_name]
        actions = self.action_layout.to_env(decision.continuous, decision.discrete)
        with hierarchical_timer("env_step"):
            observations, rewards, terminated, truncated, infos = self.env.step(actions)
        obs = self.observation_layout.split(observations)
        mask = self._mask(infos)
        rewards = np.asarray(rewards, dtype=np.float32).reshape(self.num_slots)
        terminated = np.array(terminated, dtype=bool).reshape(self.num_slots)
        truncated = np.array(truncated, dtype=bool).reshape(self.num_slots)
        valid = ~self._needs_reset
        terminated &= valid
        truncated &= valid
        done = terminated | truncated
        final_obs, final_mask = obs, mask
        if done.any():
            final_obs, final_mask = self._final_observations(obs, mask, infos, done)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            self._needs_reset = done.copy()
        episodes = self._track_episodes(rewards, valid, done)
        step = BehaviorStep(
            observations=obs,
            action_mask=mask,
            rewards=np.where(valid, rewards, 0.0).astype(np.float32),
            terminated=terminated,
            truncated=truncated,
            valid=valid,
            final_observations=final_obs,
            final_action_mask=final_mask,
            episodes=episodes,
        )
        return {self.behavior_name: step}

    def close(self) -> None:
        """Close the environment."""
        self.env.close()

    # -- helpers --------------------------------------------------------------------------

    def _track_episodes(
        self, rewards: np.ndarray, valid: np.ndarray, done: np.ndarray
    ) -> list[tuple[float, int]]:
        self._episode_reward += np.where(valid, rewards, 0.0)
        self._episode_length += valid
        episodes = []
        for slot in np.flatnonzero(done):
            episodes.append((float(self._episode_reward[slot]), int(self._episode_length[slot])))
        self._episode_reward[done] = 0.0
        self._episode_length[done] = 0
        return episodes

    def _mask(self, infos: dict[str, Any]) -> np.ndarray | None:
        layout = self.action_layout
        if not layout.has_discrete:
            return None
        raw = infos.get("action_mask") if isinstance(infos, dict) else None
        if raw is None and not self._masks_seen:
            return None
        self._masks_seen = True
        mask = layout.full_mask(self.num_slots)
        if raw is None:
            return mask
        present = np.asarray(infos.get("_action_mask", np.ones(self.num_slots, dtype=bool)))
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
                present = final_info.get("_action_mask", np.ones(self.num_slots, dtype=bool))
                for i in rows:
                    if present[i]:
                        final_mask[i] = np.asarray(final_info["action_mask"][i], dtype=bool)
        return final_obs, final_mask
