"""Experience handed to the learners that read it besides the trainer's own update.

:class:`SignalBatch` is what reward signals (:mod:`trainers.reward_signals`) learn from and
score, and what demonstrations (:mod:`trainers.imitation`) provide for GAIL's expert side. It
sits below both packages, so neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["SignalBatch"]


@dataclass
class SignalBatch:
    """Agent steps as the signals read them (``n`` rows, all on the trainer's device).

    Attributes:
        observations: network-format observations the policy acted on, one tensor per entry.
        next_observations: their successors (the final observation where an episode ended);
            ``None`` unless a signal of the trainer needs them.
        continuous: the continuous actions as sampled (before clipping), ``(n, size)``.
        discrete: the discrete choices, ``(n, branches)`` integers.
        rewards: the environment's rewards ``(n,)`` (group rewards included).
        dones: ``(n,)`` float, 1 where the step's action ended its episode (terminated or
            truncated: ML-Agents' done flag, which GAIL's discriminator reads with
            ``use_actions``); ``None`` when the trainer does not provide it.
    """

    observations: list[torch.Tensor]
    next_observations: list[torch.Tensor] | None
    continuous: torch.Tensor | None
    discrete: torch.Tensor | None
    rewards: torch.Tensor
    dones: torch.Tensor | None = None
