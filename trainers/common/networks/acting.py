"""One policy that acts for slot groups and keeps each group's memory.

PPO, SAC and POCA act with their policy network through :class:`ActingPolicy`, and the ghost
trainer acts with each opponent team's snapshot through one of its own. It turns the
observations of one or more :class:`~trainers.contract.BehaviorStep` (or some rows of each) into
actions in one forward pass, and, for a recurrent policy (``network_settings.memory``), keeps
every slot's LSTM memory per slot group (:attr:`BehaviorStep.group`), as ML-Agents' policies
keep a memory per agent id (``Policy.memory_dict``):

* a slot starts with a zero memory (a group seen for the first time, or one whose number of
  slots changed);
* each decision moves the memory of the slots that acted to the LSTM's output;
* :meth:`ActingPolicy.observe` then applies the step's outcome: a slot whose action the
  environment ignored (``valid`` false) keeps the memory it had before that decision (the
  decision did not happen), and a slot whose episode ended starts the next one from zeros
  (ML-Agents' ``Policy.remove_memories`` of the agents that are done);
* :meth:`ActingPolicy.clear` zeroes a group whose episodes were interrupted (a restarted game).

A policy without memory just acts; the memory methods then hold nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import numpy as np
import torch

from trainers.common.networks.models import PolicyNetwork
from trainers.common.spaces import ObservationLayout
from trainers.contract import BehaviorStep

__all__ = ["ActingPolicy", "Actions"]


@dataclass
class Actions:
    """The outcome of :meth:`ActingPolicy.act`: one row per acting slot, parts in order.

    Attributes:
        raw: the policy's continuous actions before clipping/squashing (``None``: no continuous
            actions).
        continuous: the continuous actions in the environment's ``[-1, 1]`` format.
        discrete: the chosen branch indices (``None``: no discrete actions).
        log_probs: the log-probabilities of the chosen actions (``None`` unless asked for).
        memories: each row's memory before the decision (``None`` without memory).
        sizes: how many rows each part (step) has.
    """

    raw: np.ndarray | None
    continuous: np.ndarray | None
    discrete: np.ndarray | None
    log_probs: np.ndarray | None
    memories: np.ndarray | None
    sizes: list[int]

    def part(self, index: int) -> slice:
        """The rows of part ``index`` (the ``index``-th step given to :meth:`ActingPolicy.act`)."""
        start = sum(self.sizes[:index])
        return slice(start, start + self.sizes[index])


class ActingPolicy:
    """A policy network acting for slot groups, with each group's memory (module docs).

    Args:
        network: the policy network (its weights may change between calls; this object only
            reads them).
        layout: the observation layout the network takes (converts raw observations).
        device: where the network lives.
        deterministic: act with the most likely actions instead of sampling.
        lock: held while the network runs (the trainer's model lock when updates run in a
            thread); ``None``: no lock.
    """

    def __init__(
        self,
        network: PolicyNetwork,
        layout: ObservationLayout,
        device: torch.device,
        *,
        deterministic: bool,
        lock: threading.Lock | threading.RLock | None = None,
    ) -> None:
        self.network = network
        self.layout = layout
        self.device = device
        self.deterministic = deterministic
        self._lock: AbstractContextManager[object] = lock if lock is not None else nullcontext()
        #: Per slot group: every slot's memory before its next decision.
        self._memories: dict[int, np.ndarray] = {}
        #: Per slot group: every slot's memory before its last decision.
        self._before: dict[int, np.ndarray] = {}

    @property
    def recurrent(self) -> bool:
        """Whether the policy has memory."""
        return self.network.memory_size > 0

    def memories(self, group: int, num_slots: int) -> np.ndarray:
        """The held memories ``(num_slots, memory_size)`` of ``group`` (zeros for a group not
        seen before or whose number of slots changed; the returned array is the one held)."""
        held = self._memories.get(group)
        if held is None or len(held) != num_slots:
            held = np.zeros((num_slots, self.network.memory_size), dtype=np.float32)
            self._memories[group] = held
        return held

    def act(
        self,
        steps: Sequence[BehaviorStep],
        rows: Sequence[np.ndarray] | None = None,
        *,
        log_probs: bool = False,
    ) -> Actions:
        """Act for every slot of ``steps`` (or the ``rows`` of each) in one forward pass and,
        with memory, move those slots' memories on.

        Args:
            steps: steps of distinct slot groups.
            rows: per step, the row indices that act (``None``: all rows of every step).
            log_probs: also return the chosen actions' log-probabilities.
        """
        if rows is None:
            observations = [
                np.concatenate([step.observations[i] for step in steps])
                if len(steps) > 1
                else steps[0].observations[i]
                for i in range(len(steps[0].observations))
            ]
            masks = [step.action_mask for step in steps]
            sizes = [len(step.valid) for step in steps]
        else:
            observations = [
                np.concatenate(
                    [step.observations[i][r] for step, r in zip(steps, rows, strict=True)]
                )
                for i in range(len(steps[0].observations))
            ]
            masks = [
                None if step.action_mask is None else step.action_mask[r]
                for step, r in zip(steps, rows, strict=True)
            ]
            sizes = [len(r) for r in rows]
        mask = _join_masks(masks, sizes)
        held: list[np.ndarray] = []
        before = None
        if self.recurrent:
            held = [self.memories(step.group, len(step.valid)) for step in steps]
            picked = held if rows is None else [h[r] for h, r in zip(held, rows, strict=True)]
            before = np.concatenate(picked) if len(picked) > 1 else picked[0].copy()
        with self._lock, torch.no_grad():
            tensors = self.layout.to_tensors(observations, self.device)
            mask_tensor = None if mask is None else torch.as_tensor(mask, device=self.device)
            if mask_tensor is not None:
                mask_tensor = mask_tensor.to(torch.float32)
            after = None
            if before is not None:
                dist, new = self.network.act(
                    tensors, mask_tensor, torch.as_tensor(before, device=self.device)
                )
                after = new.cpu().numpy()
            else:
                dist = self.network(tensors, mask_tensor)
            raw, discrete = dist.deterministic() if self.deterministic else dist.sample()
            probs = dist.log_probs(raw, discrete) if log_probs else None
            continuous = dist.env_continuous(raw) if raw is not None else None
        actions = Actions(
            raw=None if raw is None else raw.cpu().numpy(),
            continuous=None if continuous is None else continuous.cpu().numpy(),
            discrete=None if discrete is None else discrete.cpu().numpy(),
            log_probs=None if probs is None else probs.cpu().numpy(),
            memories=before,
            sizes=sizes,
        )
        if after is not None:
            for index, (step, memories) in enumerate(zip(steps, held, strict=True)):
                self._before[step.group] = memories.copy()
                part = after[actions.part(index)]
                if rows is None:
                    memories[:] = part
                else:
                    memories[rows[index]] = part
        return actions

    def observe(self, step: BehaviorStep) -> None:
        """Apply ``step``'s outcome to its group's memories: ignored decisions are undone,
        ended episodes start from zeros (module docs)."""
        held = self._memories.get(step.group)
        before = self._before.pop(step.group, None)
        if held is None or len(held) != len(step.done):
            return
        if before is not None and len(before) == len(held):
            ignored = ~step.valid  # the decision did not happen: nor did its memory
            held[ignored] = before[ignored]
        held[step.done] = 0.0  # the next decision starts a new episode

    def clear(self, group: int) -> None:
        """Zero the memories of ``group`` (its episodes were interrupted)."""
        held = self._memories.get(group)
        if held is not None:
            held[:] = 0.0
        self._before.pop(group, None)


def _join_masks(masks: list[np.ndarray | None], sizes: list[int]) -> np.ndarray | None:
    """The parts' masks stacked; a part without a mask among parts with one is all-allowed."""
    present = next((m for m in masks if m is not None), None)
    if present is None:
        return None
    if len(masks) == 1:
        return present
    return np.concatenate(
        [
            m if m is not None else np.ones((size, present.shape[1]), bool)
            for m, size in zip(masks, sizes, strict=True)
        ]
    )
