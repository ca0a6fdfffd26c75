"""MA-POCA's centralized critic: a group value and a counterfactual baseline per agent.

ML-Agents' facts it follows (``poca/optimizer_torch.py`` ``POCAValueNetwork``,
``torch_entities/networks.py`` ``MultiAgentNetworkBody``): one observation encoder shared by
every group member (the policy's kind of encoder, its own weights); the *value* attends over the
encoded observations of all present members (self included); the *baseline* of an agent attends
over its own encoded observation and its teammates' encoded observations each concatenated
with that teammate's action (continuous actions, then one-hot discrete branches). Observation
entities and observation-action entities have their own entity embedding (``hidden_units``
wide); one residual self-attention block (:mod:`trainers.common.networks.attention`) pools them; a
``num_layers`` x ``hidden_units`` body follows (its weights scaled by
``sqrt(0.125 / hidden_units)``); the heads read the body's output plus the number of present
members scaled to ``[-1, 1]`` by the largest number seen so far (``2 * count / max - 1``). One
value head per reward signal, shared by value and baseline.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional

from trainers.common.networks.attention import EntityEmbedding, ResidualSelfAttention, clear_absent
from trainers.common.networks.models import Body, ObservationEncoder, _value_head
from trainers.common.networks.normalizer import ObservationNormalizer
from trainers.common.networks.precision import heads_in_float32
from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.settings import NetworkSettings

__all__ = ["GroupCritic"]


class GroupCritic(nn.Module):
    """Group value ``V(group)`` and baselines ``Q(self, teammates' actions)``.

    Values and baselines are ``(B,)`` with one head, ``(B, heads)`` with several.
    """

    def __init__(
        self,
        layout: ObservationLayout,
        action_layout: ActionLayout,
        settings: NetworkSettings,
        normalizer: ObservationNormalizer,
        heads: int = 1,
    ) -> None:
        super().__init__()
        hidden = settings.hidden_units
        self.encoder = ObservationEncoder(layout, settings, normalizer)
        self.continuous_size = action_layout.continuous_size
        self.branches = tuple(action_layout.discrete_branches)
        action_size = self.continuous_size + sum(self.branches)
        size = self.encoder.output_size
        self.observation_embedding = EntityEmbedding(size, hidden)
        self.observation_action_embedding = EntityEmbedding(size + action_size, hidden)
        self.attention = ResidualSelfAttention(hidden)
        self.body = Body(hidden, settings, 0)
        with torch.no_grad():
            for layer in self.body.modules():
                if isinstance(layer, nn.Linear):
                    layer.weight.mul_(math.sqrt(0.125 / hidden))
        self.heads = nn.ModuleList([_value_head(hidden + 1, 1) for _ in range(heads)])
        self.max_members: torch.Tensor
        self.register_buffer("max_members", torch.ones(()))

    def encode(self, observations: list[torch.Tensor]) -> torch.Tensor:
        """Encoded observations ``(B, features)`` (network-format tensors)."""
        return self.encoder(observations)[0]

    def flat_actions(
        self, continuous: torch.Tensor | None, discrete: torch.Tensor | None
    ) -> torch.Tensor:
        """Actions as the baseline reads them: continuous values, then one-hot branches."""
        parts = [] if continuous is None else [continuous.to(torch.float32)]
        if discrete is not None:
            for branch, size in enumerate(self.branches):
                parts.append(functional.one_hot(discrete[:, branch].long(), size).float())
        if not parts:
            raise ValueError("the critic needs actions")
        return torch.cat(parts, dim=1)

    def values(self, own: torch.Tensor, mates: torch.Tensor, absent: torch.Tensor) -> torch.Tensor:
        """The group's values from each agent's encoded observation ``own`` ``(B, f)`` and its
        teammates' ``mates`` ``(B, k, f)`` (``absent`` ``(B, k)``, ``True`` = padding)."""
        entities = torch.cat([own.unsqueeze(1), mates], dim=1)
        missing = torch.cat([_present(absent), absent], dim=1).to(own.dtype)
        embedded = self.observation_embedding(clear_absent(entities, missing))
        return self._heads(embedded, missing)

    def baselines(
        self,
        own: torch.Tensor,
        mates: torch.Tensor,
        mate_actions: torch.Tensor,
        absent: torch.Tensor,
    ) -> torch.Tensor:
        """Each agent's baseline from its encoded observation ``own`` ``(B, f)``, its
        teammates' ``mates`` ``(B, k, f)`` and their :meth:`flat_actions` ``(B, k, a)``."""
        missing = torch.cat([absent, _present(absent)], dim=1).to(own.dtype)
        pairs = clear_absent(torch.cat([mates, mate_actions], dim=2), missing[:, :-1])
        embedded = torch.cat(
            [
                self.observation_action_embedding(pairs),
                self.observation_embedding(own.unsqueeze(1)),
            ],
            dim=1,
        )
        return self._heads(embedded, missing)

    def _heads(self, embedded: torch.Tensor, missing: torch.Tensor) -> torch.Tensor:
        hidden = self.body(self.attention(embedded, missing), None)
        count = (1.0 - missing).sum(dim=1, keepdim=True)
        with torch.no_grad():
            self.max_members.copy_(torch.maximum(self.max_members, count.max()))
        return self._value_heads(hidden, count * 2.0 / self.max_members - 1.0)

    @heads_in_float32
    def _value_heads(self, hidden: torch.Tensor, members: torch.Tensor) -> torch.Tensor:
        features = torch.cat([hidden, members.float()], dim=1)
        if len(self.heads) == 1:
            return self.heads[0](features).squeeze(-1)
        return torch.cat([head(features) for head in self.heads], dim=1)


def _present(absent: torch.Tensor) -> torch.Tensor:
    """One present entity per row ``(B, 1)``, for the agent itself beside its teammates'
    ``absent`` ``(B, k)`` (``k`` may be 0: a group of one, such as StrikersVsGoalie's goalie)."""
    return absent.new_zeros((absent.shape[0], 1))
