"""Running mean/variance normalization of vector observations (``network_settings.normalize``).

Statistics live in module buffers, so they are saved with the model's ``state_dict`` and baked
into the exported ONNX graph. One :class:`ObservationNormalizer` is shared by all networks of a
trainer (policy, critics), so a single update keeps them consistent.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["ObservationNormalizer", "RunningNormalizer"]

_CLIP = 5.0
_EPSILON = 1e-8


class RunningNormalizer(nn.Module):
    """Normalizes ``(batch, size)`` inputs to zero mean and unit variance, clipped to ±5."""

    mean: torch.Tensor
    variance: torch.Tensor
    count: torch.Tensor

    def __init__(self, size: int) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(size))
        self.register_buffer("variance", torch.ones(size))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        """Normalize ``inputs`` with the current statistics."""
        normalized = (inputs - self.mean) / torch.sqrt(self.variance + _EPSILON)
        return torch.clamp(normalized, -_CLIP, _CLIP)

    @torch.no_grad()
    def update(self, batch: torch.Tensor) -> None:
        """Merge the statistics of ``batch`` (``(n, size)``) into the running ones."""
        if batch.shape[0] == 0:
            return
        data = batch.to(torch.float64)
        batch_count = float(data.shape[0])
        batch_mean = data.mean(dim=0)
        batch_var = data.var(dim=0, unbiased=False)
        old_count = float(self.count.item())
        total = old_count + batch_count
        old_mean = self.mean.to(torch.float64)
        delta = batch_mean - old_mean
        new_mean = old_mean + delta * (batch_count / total)
        if old_count == 0.0:
            new_var = batch_var
        else:
            m2 = (
                self.variance.to(torch.float64) * old_count
                + batch_var * batch_count
                + delta.square() * old_count * batch_count / total
            )
            new_var = m2 / total
        self.mean.copy_(new_mean.to(self.mean.dtype))
        self.variance.copy_(new_var.to(self.variance.dtype))
        self.count.fill_(total)


class ObservationNormalizer(nn.Module):
    """One :class:`RunningNormalizer` per vector observation entry; other entries pass through.

    Args:
        vector_sizes: for each observation entry, its flat size if it is normalized, else ``None``.
    """

    def __init__(self, vector_sizes: list[int | None]) -> None:
        super().__init__()
        self.entry_index = [i for i, size in enumerate(vector_sizes) if size is not None]
        self.normalizers = nn.ModuleList(
            RunningNormalizer(size) for size in vector_sizes if size is not None
        )

    def forward(self, observations: list[torch.Tensor]) -> list[torch.Tensor]:
        """Return ``observations`` with the normalized entries replaced."""
        out = list(observations)
        for index, normalizer in zip(self.entry_index, self.normalizers, strict=True):
            out[index] = normalizer(out[index])
        return out

    @torch.no_grad()
    def update(self, observations: Sequence[torch.Tensor | None]) -> None:
        """Merge a batch of network-format observations into the statistics (entries that are
        not normalized are ignored and may be ``None``)."""
        for index, module in zip(self.entry_index, self.normalizers, strict=True):
            assert isinstance(module, RunningNormalizer)
            entry = observations[index]
            assert entry is not None, f"observation entry {index} is normalized"
            module.update(entry)
