"""A checkpoint that does not fit the trainer is refused with a CheckpointMismatchError that
says which part does not fit and what to do, never a bare torch or optimizer error."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from gymnasium import spaces
from trainer_test_support import ppo_behavior, ppo_trainer

from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.common.trainer import CheckpointMismatchError
from trainers.ppo.trainer import PPOTrainer


def _trainer(tmp_path: Path, observation_size: int = 4) -> PPOTrainer:
    return ppo_trainer(
        "Toy",
        ppo_behavior(),
        ObservationLayout.from_space(spaces.Box(-1, 1, (observation_size,), np.float32)),
        ActionLayout.from_space(spaces.Discrete(3)),
        tmp_path,
    )


def _other_format(state: dict[str, Any], tmp_path: Path) -> None:
    state["format"] = "something-else"


def _other_trainer_type(state: dict[str, Any], tmp_path: Path) -> None:
    state["trainer_type"] = "sac"


def _other_observations(state: dict[str, Any], tmp_path: Path) -> None:
    state["modules"] = _trainer(tmp_path / "wider", observation_size=6).state_dict()["modules"]


def _amsgrad_optimizer(state: dict[str, Any], tmp_path: Path) -> None:
    state["optimizers"]["optimizer"]["param_groups"][0]["amsgrad"] = True


def _missing_optimizer(state: dict[str, Any], tmp_path: Path) -> None:
    del state["optimizers"]["optimizer"]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_other_format, "not a unity-train checkpoint"),
        (_other_trainer_type, "trained with 'sac' but behavior Toy uses 'ppo'"),
        (_other_observations, "network 'policy' of the checkpoint does not fit behavior Toy"),
        (_amsgrad_optimizer, "optimizer 'optimizer' of the checkpoint does not fit.*amsgrad"),
        (_missing_optimizer, "optimizer 'optimizer' of the checkpoint does not fit.*--force"),
    ],
)
def test_a_checkpoint_that_does_not_fit_is_refused_with_the_reason(
    tmp_path: Path, damage: Callable[[dict[str, Any], Path], None], message: str
) -> None:
    state = _trainer(tmp_path / "writer").state_dict()
    damage(state, tmp_path)
    trainer = _trainer(tmp_path / "reader")
    with pytest.raises(CheckpointMismatchError, match=message):
        trainer.load_state_dict(state, restore_progress=True)


def test_a_fitting_checkpoint_loads(tmp_path: Path) -> None:
    writer = _trainer(tmp_path / "writer")
    with torch.no_grad():
        writer.parameters[0].add_(1.0)
    reader = _trainer(tmp_path / "reader")
    reader.load_state_dict(writer.state_dict(), restore_progress=True)
    for mine, theirs in zip(reader.parameters, writer.parameters, strict=True):
        torch.testing.assert_close(mine, theirs, rtol=0, atol=0)
