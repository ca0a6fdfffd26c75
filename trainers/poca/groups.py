"""Group structure of a rollout and MA-POCA's group rewards and returns, on ``(T, n)`` arrays.

A rollout holds ``T`` env steps of ``n`` slots. At step ``t`` the teammates of slot ``i`` are
the other slots with the same non-zero group id that are present (acted) at that step; a slot
with group id 0 is alone. ML-Agents' facts followed (``poca/trainer.py``,
``reward_providers/extrinsic_reward_provider.py``): with POCA an agent's extrinsic reward is its
own reward plus its present teammates' own rewards plus the group reward; returns are lambda
returns of the group value; an agent that finishes before its group is still credited with the
group rewards that come later (ML-Agents waits for the group to end before it processes the
agent's trajectory): here its last step bootstraps from the discounted group rewards that follow
until the group ends (and from the group's value where the rollout ends first, or where the
group is truncated).
"""

from __future__ import annotations

import numpy as np

__all__ = ["GroupLayout", "credit_early_finishers", "group_layout", "poca_rewards"]


class GroupLayout:
    """The teammates of every slot at every step.

    Attributes:
        mates: ``(T, n, k)`` slot indices of each slot's teammates (0 where absent), ``k`` the
            largest number of teammates any slot has (possibly 0).
        absent: ``(T, n, k)`` ``True`` where the teammate entry is padding.
    """

    def __init__(self, mates: np.ndarray, absent: np.ndarray) -> None:
        self.mates = mates
        self.absent = absent

    @property
    def width(self) -> int:
        """``k``: teammate entries per slot."""
        return int(self.mates.shape[-1])


def group_layout(ids: np.ndarray, present: np.ndarray, width: int | None = None) -> GroupLayout:
    """Teammates of each slot: same non-zero id in ``ids`` ``(T, n)``, ``present`` ``(T, n)``.

    ``width``: entries per slot (default: the largest number of teammates); must be at least
    that number.
    """
    n = ids.shape[-1]
    same = (ids[..., :, None] == ids[..., None, :]) & (ids[..., :, None] != 0)
    same &= present[..., None, :]
    same &= ~np.eye(n, dtype=bool)
    counts = same.sum(axis=-1)
    largest = int(counts.max()) if counts.size else 0
    k = largest if width is None else width
    if k < largest:
        raise ValueError(f"a slot has {largest} teammates, more than the width {k}.")
    order = np.argsort(~same, axis=-1, kind="stable")[..., :k]
    absent = np.arange(k) >= counts[..., None]
    mates = np.where(absent, 0, order)
    if mates.shape[-1] < k:  # fewer slots than the width: pad
        pad = k - mates.shape[-1]
        mates = np.concatenate([mates, np.zeros((*mates.shape[:-1], pad), dtype=mates.dtype)], -1)
        absent = np.concatenate([absent, np.ones((*absent.shape[:-1], pad), dtype=bool)], -1)
    return GroupLayout(mates.astype(np.int64), absent)


def poca_rewards(
    rewards: np.ndarray, group_rewards: np.ndarray, layout: GroupLayout, valid: np.ndarray
) -> np.ndarray:
    """Each slot's own reward plus its present teammates' own rewards plus the group reward.

    ``rewards`` ``(T, n)`` already include the group reward (as the env managers report them);
    ``group_rewards`` ``(T, n)`` are the group rewards alone. Invalid steps get 0.
    """
    own = rewards - group_rewards
    gathered = np.take_along_axis(own[:, None, :].repeat(own.shape[1], 1), layout.mates, -1)
    mates = np.where(layout.absent, 0.0, gathered).sum(axis=-1)
    return np.where(valid, rewards + mates, 0.0).astype(np.float32)


def credit_early_finishers(
    ids: np.ndarray,
    valid: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    group_rewards: np.ndarray,
    next_values: np.ndarray,
    gamma: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap targets of slots whose episode terminated while their group went on.

    For such a slot ``i`` ending at ``t0`` in group ``g`` the result's ``terminated[t0, i]`` is
    ``False`` and ``next_values[t0, i]`` is ``sum_{t > t0} gamma^(t - t0 - 1) G(t)`` over the
    group's later steps until its last members finish (``G``: the group reward), plus the
    discounted value the group bootstraps from where it is truncated or where the rollout ends
    first (its members' ``next_values``).

    Args:
        ids, valid, terminated, truncated, group_rewards, next_values: ``(T, n)`` arrays of the
            rollout (``ids``: each decision's group id).
        gamma: the extrinsic signal's discount.

    Returns:
        New ``(next_values, terminated)``.
    """
    next_values = next_values.copy()
    terminated = terminated.copy()
    done = terminated | truncated
    length = len(ids)
    for t0, slot in zip(*np.nonzero(terminated & valid & (ids != 0)), strict=True):
        group = ids[t0, slot]
        members = (ids[t0] == group) & valid[t0] & ~done[t0]
        if not members.any():
            continue  # the whole group ended here
        total, discount = 0.0, 1.0
        for t in range(t0 + 1, length):
            members = (ids[t] == group) & valid[t]
            if not members.any():  # the group's remaining members were not recorded
                break
            total += discount * float(group_rewards[t][members][0])
            discount *= gamma
            ending = done[t] & members
            if ending.all() or t == length - 1:  # the group ends or the rollout does
                going_on = members & ~terminated[t]
                if going_on.any():
                    total += discount * float(next_values[t][going_on][0])
                break
        next_values[t0, slot] = total
        terminated[t0, slot] = False
    return next_values, terminated
