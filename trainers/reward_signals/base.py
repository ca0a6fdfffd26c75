"""The interface every reward signal implements (extrinsic, curiosity, RND, GAIL).

A reward signal turns recorded experience into one reward per agent step. The trainer scales
those rewards by the signal's ``strength``, values them with a value head of their own and
discounts them with the signal's ``gamma`` (as ML-Agents' reward providers do).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np
import torch
from torch import nn

from trainers.common.buffers.batches import SignalBatch
from trainers.settings import RewardSignalSettings

__all__ = ["RewardSignal", "SignalBatch"]


class RewardSignal(ABC):
    """One reward signal of a trainer.

    Attributes:
        key: the configuration key (``extrinsic``, ``curiosity``, ``rnd``, ``gail``).
        name: the name in TensorBoard tags (``Policy/<name> Reward``, as ML-Agents spells it).
        ignore_done: whether the signal's returns bootstrap through episode ends (intrinsic
            signals do: reaching a terminal state must not look like a loss of novelty).
        needs_next_observations: whether :class:`SignalBatch` must carry successors.
    """

    key: str
    name: str
    ignore_done: bool = False
    needs_next_observations: bool = False

    def __init__(self, settings: RewardSignalSettings) -> None:
        self.settings = settings

    @property
    def gamma(self) -> float:
        """The discount of this signal's returns."""
        return self.settings.gamma

    @property
    def strength(self) -> float:
        """The factor the trainer multiplies this signal's rewards by."""
        return self.settings.strength

    def absorb(self, batch: SignalBatch) -> None:
        """Take in a whole rollout's valid steps before they are evaluated (e.g. to update the
        signal's observation normalization); nothing by default."""
        del batch

    @abstractmethod
    def evaluate(self, batch: SignalBatch) -> np.ndarray:
        """The unscaled rewards of ``batch``'s steps, ``(n,)`` float32 (no gradients)."""

    def update(self, batch: SignalBatch) -> dict[str, float]:
        """Train the signal's networks on ``batch`` once; returns TensorBoard losses."""
        del batch
        return {}

    def modules(self) -> dict[str, nn.Module]:
        """The signal's networks, saved in checkpoints (names unique within the signal)."""
        return {}

    def optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """The signal's optimizers, saved in checkpoints."""
        return {}

    def state_dict(self) -> dict[str, Any]:
        """Networks and optimizers: ``{"modules": {...}, "optimizers": {...}}``."""
        return {
            "modules": {name: m.state_dict() for name, m in self.modules().items()},
            "optimizers": {name: o.state_dict() for name, o in self.optimizers().items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned (raises like ``nn.Module.load_state_dict``
        when the parts do not fit)."""
        for name, module in self.modules().items():
            module.load_state_dict(state["modules"][name])
        for name, optimizer in self.optimizers().items():
            optimizer.load_state_dict(state["optimizers"][name])
