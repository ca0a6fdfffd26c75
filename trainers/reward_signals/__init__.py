"""Reward signals: the environment's reward, the intrinsic ones (curiosity, RND) and GAIL.

:func:`create_signals` builds a trainer's signals from its ``reward_signals`` settings,
``extrinsic`` first.
"""

from __future__ import annotations

import torch
from torch import nn

from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.reward_signals.base import RewardSignal, SignalBatch
from trainers.reward_signals.curiosity import CuriositySignal
from trainers.reward_signals.extrinsic import ExtrinsicSignal
from trainers.reward_signals.gail import GAILSignal
from trainers.reward_signals.rnd import RNDSignal
from trainers.settings import (
    ConfigError,
    CuriositySettings,
    ExtrinsicRewardSettings,
    GAILSettings,
    RewardSignalSettings,
    RNDSettings,
)

__all__ = [
    "CuriositySignal",
    "ExtrinsicSignal",
    "GAILSignal",
    "RNDSignal",
    "RewardSignal",
    "SignalBatch",
    "create_signals",
    "signal_modules",
    "signal_optimizers",
]


def create_signals(
    settings: dict[str, RewardSignalSettings],
    layout: ObservationLayout,
    action_layout: ActionLayout,
    device: torch.device,
    *,
    behavior_name: str = "",
    path: str = "reward_signals",
) -> list[RewardSignal]:
    """The signals of ``settings``: ``extrinsic`` first, then the others in their order.

    Without an ``extrinsic`` entry (a config ML-Agents accepts, e.g. GAIL alone), the first
    signal is an extrinsic one of strength 0 (:attr:`TrainerSettings.extrinsic`).

    Args:
        behavior_name: the trainer's behavior, named in errors (GAIL's demonstrations).
        path: the configuration path of ``settings``, named in errors.

    Raises:
        ConfigError: a signal name this package does not implement, or GAIL demonstrations
            that cannot be read or do not fit the behavior.
    """
    extrinsic = settings.get("extrinsic") or ExtrinsicRewardSettings(strength=0.0)
    signals: list[RewardSignal] = [ExtrinsicSignal(extrinsic)]  # strength 0 when not listed
    for key, value in settings.items():
        if key == "extrinsic":
            continue
        if isinstance(value, RNDSettings):
            signals.append(RNDSignal(value, layout, device))
        elif isinstance(value, CuriositySettings):
            signals.append(CuriositySignal(value, layout, action_layout, device))
        elif isinstance(value, GAILSettings):
            signals.append(
                GAILSignal(
                    value,
                    layout,
                    action_layout,
                    device,
                    behavior_name=behavior_name,
                    path=f"{path}.{key}",
                )
            )
        else:
            raise ConfigError(f"reward_signals.{key}: no such reward signal is implemented.")
    return signals


def signal_modules(signals: list[RewardSignal]) -> dict[str, nn.Module]:
    """Every signal's networks, named ``reward_signal.<key>.<name>`` for checkpoints."""
    return {
        f"reward_signal.{signal.key}.{name}": module
        for signal in signals
        for name, module in signal.modules().items()
    }


def signal_optimizers(signals: list[RewardSignal]) -> dict[str, torch.optim.Optimizer]:
    """Every signal's optimizers, named ``reward_signal.<key>.<name>`` for checkpoints."""
    return {
        f"reward_signal.{signal.key}.{name}": optimizer
        for signal in signals
        for name, optimizer in signal.optimizers().items()
    }
