"""Mixed-precision updates: ``torch_settings.precision`` (an extension of this project).

``float32`` (the default, and ML-Agents' only mode) computes everything in float32.
``bf16-mixed`` runs each update job under ``torch.autocast(dtype=torch.bfloat16)``: the matrix
products of encoders, bodies, attention and memory take bfloat16 inputs (8 significant bits, a
relative rounding error of at most 0.4%) and accumulate in float32, while parameters, gradients,
optimizer state, the heads (:func:`heads_in_float32`: action logits, means, standard deviations,
values), probabilities and losses stay float32. The value estimates taken before the update
(returns, advantages) and acting stay float32: acting's batches are a few rows, where bfloat16
products cost more than they save (a 512-wide body on 2 to 8 rows took 1.6-1.9x as long on an
AMX CPU; on 64 rows 0.6x, on 256 rows 0.4x).

On CPUs with AMX or AVX-512 BF16 units (and on GPUs), the products of wide layers run several
times faster: an update of ML-Agents' SoccerTwos POCA config (512 x 2) took 0.53x as long.
Elsewhere bfloat16 is emulated and may be slower. A run is not bit-identical to a float32 one;
``benchmarks/update_precision.py`` compares both on the same config.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

import torch

from trainers.settings import Precision

__all__ = ["cpu_has_bf16_units", "heads_in_float32", "update_precision"]

_BF16_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})

_Self = TypeVar("_Self")
_Params = ParamSpec("_Params")
_Result = TypeVar("_Result")


def update_precision(
    precision: Precision, device: torch.device
) -> contextlib.AbstractContextManager[object]:
    """The context an update runs in: bfloat16 autocast on ``device`` for ``bf16-mixed``,
    nothing for ``float32``. Autocast is per thread: enter it in the thread that updates.

    The region may span optimizer steps: weights are cast afresh at every forward pass
    (autocast's weight cache is off), so each pass sees the weights as they are now."""
    if precision == "float32":
        return contextlib.nullcontext()
    # Without the cast cache: an update job takes many optimizer steps inside this one
    # region, and autocast's cache would keep feeding every later minibatch the bfloat16
    # copies of the weights as they were at its first forward pass (stale gradients that
    # overshoot: the critic's values ran away to +-50 within a few updates).
    return torch.autocast(device.type, dtype=torch.bfloat16, cache_enabled=False)


def heads_in_float32(
    method: Callable[Concatenate[_Self, torch.Tensor, _Params], _Result],
) -> Callable[Concatenate[_Self, torch.Tensor, _Params], _Result]:
    """Run ``method(self, features, ...)`` with autocast off and ``features`` in float32.

    Decorates the output heads, so that logits, Gaussian parameters and values keep float32
    precision inside a ``bf16-mixed`` update; a no-op outside autocast.
    """

    @functools.wraps(method)
    def in_float32(
        self: _Self, features: torch.Tensor, *args: _Params.args, **kwargs: _Params.kwargs
    ) -> _Result:
        device = features.device.type
        if not torch.is_autocast_enabled(device):
            return method(self, features, *args, **kwargs)
        with torch.autocast(device, enabled=False):
            return method(self, features.float(), *args, **kwargs)

    return in_float32


def cpu_has_bf16_units(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool | None:
    """Whether the CPU lists bfloat16 matrix units (``amx_bf16`` or ``avx512_bf16``) in
    ``cpuinfo``; ``None`` where that file cannot be read (not Linux)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            return not _BF16_FLAGS.isdisjoint(line.split(":", 1)[-1].split())
    return None
