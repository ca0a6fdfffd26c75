"""Curiosity (intrinsic curiosity module): reward for transitions the agent cannot predict.

A state encoder embeds the observation and its successor. An inverse model predicts the action
from both embeddings (this shapes the embedding towards what the agent controls); a forward
model predicts the successor's embedding from the observation's embedding and the action. The
reward is half the squared forward error, summed over the features, capped at ``1 / strength``
(so the scaled reward stays within 1) and 0 until the networks have been trained once. The
training loss is ``10 * (0.2 * forward + 0.8 * inverse)`` (ML-Agents' weights), Adam at
``learning_rate``. As in ML-Agents, the hidden layers start He-normal and the output layers
(predicted actions, predicted successor embedding) Glorot-uniform.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.reward_signals.base import RewardSignal, SignalBatch
from trainers.reward_signals.networks import StateEmbedding, action_features, dense
from trainers.settings import CuriositySettings

__all__ = ["CuriosityNetwork", "CuriositySignal", "output_layer"]

FORWARD_WEIGHT = 0.2  # the inverse loss gets the rest
LOSS_SCALE = 10.0
MODEL_UNITS = 256  # hidden units of the inverse and forward models
_LOG_EPSILON = 1e-10


def output_layer(in_size: int, out_size: int) -> nn.Linear:
    """An output layer of the inverse or forward model: Glorot-uniform weights, zero bias
    (ML-Agents' default for its plain linear layers)."""
    layer = nn.Linear(in_size, out_size)
    nn.init.xavier_uniform_(layer.weight)
    nn.init.zeros_(layer.bias)
    return layer


class CuriosityNetwork(nn.Module):
    """The state encoder with the inverse and forward models."""

    trained: torch.Tensor

    def __init__(
        self,
        layout: ObservationLayout,
        action_layout: ActionLayout,
        settings: CuriositySettings,
    ) -> None:
        super().__init__()
        self.branches = list(action_layout.discrete_branches)
        self.continuous_size = action_layout.continuous_size
        self.state = StateEmbedding(layout, settings.network_settings)
        size = self.state.output_size
        self.inverse = nn.Sequential(dense(2 * size, MODEL_UNITS), nn.SiLU())
        self.continuous_head = (
            output_layer(MODEL_UNITS, self.continuous_size) if self.continuous_size else None
        )
        self.discrete_head = (
            output_layer(MODEL_UNITS, sum(self.branches)) if self.branches else None
        )
        action_size = self.continuous_size + sum(self.branches)
        self.forward_model = nn.Sequential(
            dense(size + action_size, MODEL_UNITS), nn.SiLU(), output_layer(MODEL_UNITS, size)
        )
        #: 1 once the networks have been trained (the reward is 0 before).
        self.register_buffer("trained", torch.zeros(()))

    def flat_actions(self, batch: SignalBatch) -> torch.Tensor:
        """Continuous actions and one-hot discrete choices, concatenated ``(n, size)``."""
        return torch.cat(action_features(batch, self.branches), dim=1)

    def embeddings(self, batch: SignalBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """The embeddings of the observations and of their successors."""
        assert batch.next_observations is not None, "curiosity needs the next observations"
        return self.state(batch.observations), self.state(batch.next_observations)

    def forward_errors(
        self, batch: SignalBatch, state: torch.Tensor, following: torch.Tensor
    ) -> torch.Tensor:
        """``0.5 * sum((predicted - actual successor embedding)^2)`` per step ``(n,)``."""
        predicted = self.forward_model(torch.cat([state, self.flat_actions(batch)], dim=1))
        return 0.5 * (following - predicted).square().sum(dim=1)

    def inverse_loss(
        self, batch: SignalBatch, state: torch.Tensor, following: torch.Tensor
    ) -> torch.Tensor:
        """Squared error of the predicted continuous actions plus the cross-entropy of the
        predicted discrete choices, each summed per step and averaged over the steps."""
        hidden = self.inverse(torch.cat([state, following], dim=1))
        loss = torch.zeros((), device=hidden.device)
        if self.continuous_head is not None and batch.continuous is not None:
            error = (batch.continuous - self.continuous_head(hidden)).square().sum(dim=1)
            loss = loss + error.mean()
        if self.discrete_head is not None and batch.discrete is not None:
            logits = torch.split(self.discrete_head(hidden), self.branches, dim=1)
            cross_entropy = torch.zeros(len(hidden), device=hidden.device)
            for branch, branch_logits in enumerate(logits):
                probabilities = torch.softmax(branch_logits, dim=1)
                chosen = probabilities.gather(1, batch.discrete[:, branch : branch + 1].long())
                cross_entropy = cross_entropy - torch.log(chosen.squeeze(1) + _LOG_EPSILON)
            loss = loss + cross_entropy.mean()
        return loss


class CuriositySignal(RewardSignal):
    """The ``curiosity`` reward signal (see the module docstring)."""

    key = "curiosity"
    name = "Curiosity"
    ignore_done = True
    needs_next_observations = True

    def __init__(
        self,
        settings: CuriositySettings,
        layout: ObservationLayout,
        action_layout: ActionLayout,
        device: torch.device,
    ) -> None:
        super().__init__(settings)
        self.network = CuriosityNetwork(layout, action_layout, settings).to(device)
        self.optimizer = torch.optim.Adam(self.network.parameters(), lr=settings.learning_rate)

    def absorb(self, batch: SignalBatch) -> None:
        """Add the observations of a rollout to the encoder's normalization."""
        self.network.state.absorb(batch.observations)

    def evaluate(self, batch: SignalBatch) -> np.ndarray:
        with torch.no_grad():
            errors = self.network.forward_errors(batch, *self.network.embeddings(batch))
            rewards = errors.cpu().numpy().astype(np.float32)
        if not bool(self.network.trained):
            return np.zeros_like(rewards)
        if self.strength > 0:
            rewards = np.minimum(rewards, np.float32(1.0 / self.strength))
        return rewards

    def losses(self, batch: SignalBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """The forward and inverse losses of ``batch`` (with gradients)."""
        state, following = self.network.embeddings(batch)
        forward = self.network.forward_errors(batch, state, following).mean()
        return forward, self.network.inverse_loss(batch, state, following)

    def update(self, batch: SignalBatch) -> dict[str, float]:
        forward, inverse = self.losses(batch)
        loss = LOSS_SCALE * (FORWARD_WEIGHT * forward + (1.0 - FORWARD_WEIGHT) * inverse)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.network.trained.fill_(1.0)
        return {
            "Losses/Curiosity Forward Loss": float(forward.detach()),
            "Losses/Curiosity Inverse Loss": float(inverse.detach()),
        }

    def modules(self) -> dict[str, nn.Module]:
        return {"network": self.network}

    def optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"optimizer": self.optimizer}
