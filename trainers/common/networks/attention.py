"""Attention over a variable number of entities: entity embeddings and residual self-attention.

ML-Agents' facts it follows (``torch_entities/attention.py``): an entity embedding is one dense
layer with a Swish (SiLU) activation whose weights are standard normal times
``sqrt(0.125 / embedding_size)`` (the T-Fixup scheme); the residual self-attention block
normalizes its input (layer norm without learned scale), projects it to queries, keys and values
(same initialization, ``embedding_size`` wide, 4 heads), attends with scaled dot products where
the scores of absent entities are replaced by ``-1e6``, adds the projected attention output to its
normalized input, normalizes again and averages the result over the present entities only.

Absent entities (padding: a group member that is not there) are named by a mask, ``1.0`` =
absent. Their inputs never reach the output: they get no attention and are left out of the
average, so whatever their rows hold (ML-Agents pads them with NaN and zeroes them before
encoding, as :func:`clear_absent` does) does not change the result.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional

__all__ = ["EntityEmbedding", "ResidualSelfAttention", "clear_absent"]

NEG_INF = -1e6
HEADS = 4
EPSILON = 1e-7


def _tfixup_linear(in_size: int, out_size: int) -> nn.Linear:
    """A dense layer with standard normal weights times ``sqrt(0.125 / out_size)``, zero bias."""
    layer = nn.Linear(in_size, out_size)
    nn.init.normal_(layer.weight)
    with torch.no_grad():
        layer.weight.mul_(math.sqrt(0.125 / out_size))
    nn.init.zeros_(layer.bias)
    return layer


def _layer_norm(x: torch.Tensor) -> torch.Tensor:
    """Layer normalization over the last axis, without learned scale and shift."""
    centred = x - x.mean(dim=-1, keepdim=True)
    return centred / torch.sqrt(centred.pow(2).mean(dim=-1, keepdim=True) + 1e-5)


def clear_absent(entities: torch.Tensor, absent: torch.Tensor) -> torch.Tensor:
    """``entities`` ``(b, n, ...)`` with the rows of absent entities (``absent`` ``(b, n)``,
    ``1.0`` = absent) set to 0, so padding (NaN included) cannot leak into gradients."""
    keep = (absent < 0.5).reshape(*absent.shape, *([1] * (entities.dim() - 2)))
    return torch.where(keep, entities, torch.zeros((), dtype=entities.dtype))


class EntityEmbedding(nn.Module):
    """Embeds each entity ``(b, n, entity_size)`` into ``(b, n, embedding_size)``."""

    def __init__(self, entity_size: int, embedding_size: int) -> None:
        super().__init__()
        self.entity_size = entity_size
        self.embedding_size = embedding_size
        self.layer = _tfixup_linear(entity_size, embedding_size)

    def forward(self, entities: torch.Tensor) -> torch.Tensor:
        """Embeddings of every entity (absent ones included; the attention ignores them)."""
        return functional.silu(self.layer(entities))


class ResidualSelfAttention(nn.Module):
    """Multi-head self-attention with a residual connection, pooled over present entities.

    Args:
        embedding_size: width of the entities' embeddings (divisible by ``heads``).
        heads: attention heads (ML-Agents: 4).
    """

    def __init__(self, embedding_size: int, heads: int = HEADS) -> None:
        super().__init__()
        if embedding_size % heads:
            raise ValueError(
                f"the attention width {embedding_size} is not divisible by its {heads} heads; "
                "use a hidden_units that is a multiple of 4."
            )
        self.heads = heads
        self.embedding_size = embedding_size
        self.query = _tfixup_linear(embedding_size, embedding_size)
        self.key = _tfixup_linear(embedding_size, embedding_size)
        self.value = _tfixup_linear(embedding_size, embedding_size)
        self.out = _tfixup_linear(embedding_size, embedding_size)

    def forward(self, entities: torch.Tensor, absent: torch.Tensor) -> torch.Tensor:
        """Pool ``entities`` ``(b, n, embedding_size)`` into ``(b, embedding_size)``.

        ``absent`` ``(b, n)``: ``1.0`` where an entity is padding. A batch row needs at least
        one present entity (otherwise its output is 0).
        """
        b, n, width = entities.shape
        size = width // self.heads
        absent = absent.to(entities.dtype)
        normed = _layer_norm(clear_absent(entities, absent))

        def split(x: torch.Tensor) -> torch.Tensor:
            return x.reshape(b, n, self.heads, size).transpose(1, 2)  # (b, h, n, size)

        query, key, value = (
            split(self.query(normed)),
            split(self.key(normed)),
            split(self.value(normed)),
        )
        scores = query @ key.transpose(2, 3) / math.sqrt(width)  # (b, h, n, n)
        missing = absent.reshape(b, 1, 1, n)
        scores = (1.0 - missing) * scores + missing * NEG_INF
        attended = (torch.softmax(scores, dim=3) @ value).transpose(1, 2).reshape(b, n, width)
        output = _layer_norm(self.out(attended) + normed)
        present = (1.0 - absent).unsqueeze(2)
        return (output * present).sum(dim=1) / (present.sum(dim=1) + EPSILON)
