"""Building blocks shared by the learned reward signals: an observation embedding and dense
layers."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional

from trainers.common.networks.models import Body, ObservationEncoder, build_normalizer
from trainers.common.spaces import ObservationLayout
from trainers.reward_signals.base import SignalBatch
from trainers.settings import NetworkSettings

__all__ = ["StateEmbedding", "action_features", "dense"]


def dense(in_size: int, out_size: int) -> nn.Linear:
    """A dense layer with He-normal (linear unit) weights and zero bias."""
    layer = nn.Linear(in_size, out_size)
    nn.init.kaiming_normal_(layer.weight, nonlinearity="linear")
    nn.init.zeros_(layer.bias)
    return layer


def action_features(batch: SignalBatch, branches: list[int]) -> list[torch.Tensor]:
    """``batch``'s actions as network inputs: the continuous actions (as sampled), then one
    one-hot ``(n, size)`` tensor per discrete branch of sizes ``branches``."""
    parts: list[torch.Tensor] = []
    if batch.continuous is not None:
        parts.append(batch.continuous.to(torch.float32))
    if batch.discrete is not None:
        for branch, size in enumerate(branches):
            parts.append(functional.one_hot(batch.discrete[:, branch].long(), size).float())
    return parts


class StateEmbedding(nn.Module):
    """Observations to ``hidden_units`` features: the signal's own encoder (and, with
    ``normalize``, its own running normalization) followed by ``num_layers`` SiLU layers."""

    def __init__(self, layout: ObservationLayout, settings: NetworkSettings) -> None:
        super().__init__()
        self.normalizer = build_normalizer(layout, settings.normalize)
        self.encoder = ObservationEncoder(layout, settings, self.normalizer)
        self.body = Body(self.encoder.output_size, settings, self.encoder.goal_size)
        self.output_size = settings.hidden_units

    def forward(self, observations: list[torch.Tensor]) -> torch.Tensor:
        """``(n, hidden_units)``."""
        return self.body(*self.encoder(observations))

    @torch.no_grad()
    def absorb(self, observations: list[torch.Tensor]) -> None:
        """Add a batch of network-format observations to the running normalization."""
        normalizer = self.normalizer
        if not normalizer.normalizers:
            return
        flat: list[torch.Tensor | None] = [None] * len(observations)
        for index in normalizer.entry_index:
            entry = observations[index]
            flat[index] = entry.reshape(len(entry), -1).to(torch.float32)
        normalizer.update(flat)
