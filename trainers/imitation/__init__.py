"""Imitation from Unity ``.demo`` recordings: demonstrations in a trainer's format and
behavioral cloning (GAIL, the other user of demonstrations, is a reward signal:
:mod:`trainers.reward_signals.gail`).

:func:`build_behavioral_cloning` builds a trainer's :class:`BehavioralCloning` from its
``behavioral_cloning`` settings.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import torch

from trainers.common.networks.models import PolicyNetwork
from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.imitation.behavioral_cloning import (
    DEFAULT_NUM_EPOCH,
    MIN_LEARNING_RATE,
    PRETRAINING_LOSS,
    BehavioralCloning,
)
from trainers.imitation.demonstrations import Demonstrations, demo_files, load_demonstrations
from trainers.settings import TrainerSettings, UnsupportedFeatureError

__all__ = [
    "DEFAULT_NUM_EPOCH",
    "MIN_LEARNING_RATE",
    "PRETRAINING_LOSS",
    "BehavioralCloning",
    "Demonstrations",
    "build_behavioral_cloning",
    "demo_files",
    "load_demonstrations",
]


def build_behavioral_cloning(
    settings: TrainerSettings,
    policy: PolicyNetwork,
    layout: ObservationLayout,
    action_layout: ActionLayout,
    *,
    behavior_name: str,
    learning_rate: float,
    batch_size: int,
    device: torch.device,
    rng: np.random.Generator,
    lock: contextlib.AbstractContextManager[Any] | None = None,
) -> BehavioralCloning | None:
    """The behavioral cloning of a trainer, ``None`` without ``behavioral_cloning`` settings.

    Args:
        settings: the trainer's settings.
        policy: the trainer's policy.
        layout: the trainer's observation entries.
        action_layout: the trainer's actions.
        behavior_name: named in errors.
        learning_rate: the trainer's initial learning rate.
        batch_size: the trainer's batch size.
        device: the policy's device.
        rng: shuffles the demonstrations.
        lock: the trainer's model lock, taken around each gradient step.

    Raises:
        ConfigError: the demonstrations cannot be read or do not fit the behavior.
        UnsupportedFeatureError: ``network_settings.memory`` is set too.
    """
    cloning = settings.behavioral_cloning
    if cloning is None:
        return None
    path = f"behaviors.{behavior_name}.behavioral_cloning"
    if settings.network_settings.memory is not None:
        raise UnsupportedFeatureError(
            f"{path}: behavioral cloning of a recurrent policy (network_settings.memory) is not "
            "supported by unity-train yet; remove one of the two."
        )
    assert cloning.demo_path is not None  # required by BehavioralCloningSettings
    demonstrations = load_demonstrations(
        cloning.demo_path,
        layout,
        action_layout,
        behavior_name=behavior_name,
        key=f"{path}.demo_path",
    )
    return BehavioralCloning(
        policy,
        cloning,
        demonstrations,
        layout,
        learning_rate=learning_rate,
        batch_size=batch_size,
        num_epoch=DEFAULT_NUM_EPOCH,
        deterministic=settings.network_settings.deterministic,
        device=device,
        rng=rng,
        lock=lock,
    )
