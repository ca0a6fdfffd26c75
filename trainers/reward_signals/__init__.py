"""Reward signals: the environment's reward and the intrinsic ones (curiosity, RND).

:func:`create_signals` builds a trainer's signals from its ``reward_signals`` settings,
``extrinsic`` first.
"""

from __future__ import annotations

import torch

from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.reward_signals.base import RewardSignal, SignalBatch
from trainers.reward_signals.curiosity import CuriositySignal
from trainers.reward_signals.extrinsic import ExtrinsicSignal
from trainers.reward_signals.rnd import RNDSignal
from trainers.settings import (
    ConfigError,
    CuriositySettings,
    RewardSignalSettings,
    RNDSettings,
)

__all__ = [
    "CuriositySignal",
    "ExtrinsicSignal",
    "RNDSignal",
    "RewardSignal",
    "SignalBatch",
    "create_signals",
]


def create_signals(
    settings: dict[str, RewardSignalSettings],
    layout: ObservationLayout,
    action_layout: ActionLayout,
    device: torch.device,
) -> list[RewardSignal]:
    """The signals of ``settings``: ``extrinsic`` first, then the others in their order.

    Raises:
        ConfigError: a signal name this package does not implement.
    """
    signals: list[RewardSignal] = [ExtrinsicSignal(settings["extrinsic"])]
    for key, value in settings.items():
        if key == "extrinsic":
            continue
        if isinstance(value, RNDSettings):
            signals.append(RNDSignal(value, layout, device))
        elif isinstance(value, CuriositySettings):
            signals.append(CuriositySignal(value, layout, action_layout, device))
        else:
            raise ConfigError(f"reward_signals.{key}: no such reward signal is implemented.")
    return signals
