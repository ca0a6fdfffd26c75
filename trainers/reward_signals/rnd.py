"""Random network distillation (RND): reward for observations the agent has rarely seen.

A fixed, randomly initialized target network and a trained predictor both embed the
observation; the reward is the squared error between the two embeddings, summed over the
features. The predictor learns (Adam at ``learning_rate``) to match the target on visited
observations, so the error, and the reward, falls where the agent has been often.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from trainers.common.spaces import ObservationLayout
from trainers.reward_signals.base import RewardSignal, SignalBatch
from trainers.reward_signals.networks import StateEmbedding
from trainers.settings import RNDSettings

__all__ = ["RNDSignal"]


class RNDSignal(RewardSignal):
    """The ``rnd`` reward signal (see the module docstring)."""

    key = "rnd"
    name = "Rnd"  # ML-Agents' tags capitalize the provider's name: "Policy/Rnd Reward"
    ignore_done = True

    def __init__(
        self, settings: RNDSettings, layout: ObservationLayout, device: torch.device
    ) -> None:
        super().__init__(settings)
        self.target = StateEmbedding(layout, settings.network_settings).to(device)
        self.predictor = StateEmbedding(layout, settings.network_settings).to(device)
        self.target.requires_grad_(False)
        self.optimizer = torch.optim.Adam(self.predictor.parameters(), lr=settings.learning_rate)

    def absorb(self, batch: SignalBatch) -> None:
        """Add the observations of a rollout to both networks' normalization."""
        self.target.absorb(batch.observations)
        self.predictor.absorb(batch.observations)

    def errors(self, batch: SignalBatch) -> torch.Tensor:
        """Squared embedding error per step ``(n,)``, summed over the features."""
        with torch.no_grad():
            target = self.target(batch.observations)
        return (self.predictor(batch.observations) - target).square().sum(dim=1)

    def evaluate(self, batch: SignalBatch) -> np.ndarray:
        with torch.no_grad():
            return self.errors(batch).cpu().numpy().astype(np.float32)

    def update(self, batch: SignalBatch) -> dict[str, float]:
        loss = self.errors(batch).mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return {"Losses/RND Loss": float(loss.detach())}

    def modules(self) -> dict[str, nn.Module]:
        return {"target": self.target, "predictor": self.predictor}

    def optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"optimizer": self.optimizer}
