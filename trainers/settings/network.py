"""``network_settings``: the network shape, visual encoders, goal conditioning and memory."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from trainers.settings.errors import ConfigError
from trainers.settings.structuring import _check_positive

__all__ = ["EncoderType", "MemorySettings", "NetworkSettings"]

EncoderType = Literal["simple", "nature_cnn", "resnet", "match3", "fully_connected"]


@dataclass
class MemorySettings:
    """A recurrent (LSTM) memory after the network body (``network_settings.memory``).

    ML-Agents' keys and defaults: ``memory_size`` floats of memory per agent (the LSTM's hidden
    and cell states, half each, so it must be even); training runs on sequences of
    ``sequence_length`` steps.
    """

    sequence_length: int = 64
    memory_size: int = 128

    def _validate(self, path: str) -> None:
        _check_positive(path, "sequence_length", self.sequence_length)
        _check_positive(path, "memory_size", self.memory_size)
        if self.memory_size % 2:
            raise ConfigError(
                f"{path}.memory_size: {self.memory_size} is odd; the memory holds the LSTM's "
                "hidden and cell states, half each, so use an even size (e.g. 128)."
            )


@dataclass
class NetworkSettings:
    """Network shape: ``hidden_units`` x ``num_layers`` MLP, optional input normalization,
    optional recurrent ``memory`` after the MLP."""

    normalize: bool = False
    hidden_units: int = 128
    num_layers: int = 2
    vis_encode_type: str = "simple"
    memory: MemorySettings | None = None
    goal_conditioning_type: Literal["hyper", "none"] = "hyper"
    deterministic: bool = False

    def _validate(self, path: str) -> None:
        _check_positive(path, "hidden_units", self.hidden_units)
        _check_positive(path, "num_layers", self.num_layers)
        if self.vis_encode_type not in get_args(EncoderType):
            raise ConfigError(
                f"{path}.vis_encode_type: {self.vis_encode_type!r} is not a visual encoder; "
                f"use one of {', '.join(get_args(EncoderType))}."
            )
