"""The trainer <-> environment contract: what a trainer sees of its slots and what it answers.

These types sit below both sides: the env manager (:mod:`trainers.env_manager`) fills
:class:`BehaviorStep` rows and reads :class:`PolicyDecision` answers; trainers
(:mod:`trainers.common.trainer` and every algorithm) consume and produce them without knowing
how games are run. :class:`BehaviorSlots` is what a trainer is told about its slots when it is
created. Slots, groups, group ids and masks mean what :mod:`trainers.env_manager` documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from trainers.common.spaces import ActionLayout, ObservationLayout

__all__ = ["BehaviorSlots", "BehaviorStep", "PolicyDecision", "join_steps"]


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
        slots: the behavior's slot index of each row (its slot group's slots, in slot order);
            ``None`` = every slot of the behavior, in order.
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
    slots: np.ndarray | None = None

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


def join_steps(steps: Sequence[BehaviorStep]) -> BehaviorStep:
    """The observations and action masks of ``steps`` stacked into one step (for one forward
    pass over several groups; the other fields are those of :meth:`BehaviorStep.first`).

    A step without a mask among steps with one contributes all-allowed rows.
    """
    if len(steps) == 1:
        return steps[0]
    observations = [
        np.concatenate([step.observations[i] for step in steps])
        for i in range(len(steps[0].observations))
    ]
    masks = [step.action_mask for step in steps]
    present = next((m for m in masks if m is not None), None)
    mask = None
    if present is not None:
        mask = np.concatenate(
            [
                m if m is not None else np.ones((len(step.valid), present.shape[1]), bool)
                for m, step in zip(masks, steps, strict=True)
            ]
        )
    return BehaviorStep.first(observations, mask)
