"""The environment's own reward as a reward signal."""

from __future__ import annotations

import numpy as np

from trainers.reward_signals.base import RewardSignal, SignalBatch

__all__ = ["ExtrinsicSignal"]


class ExtrinsicSignal(RewardSignal):
    """The rewards the environment gave (group rewards included); nothing to learn."""

    key = "extrinsic"
    name = "Extrinsic"

    def evaluate(self, batch: SignalBatch) -> np.ndarray:
        return batch.rewards.detach().cpu().numpy().astype(np.float32, copy=False)
