"""``unity-train`` with the shipped DungeonEscape MA-POCA config on the built-in scene.

The run loads ``trainers/configs/DungeonEscape_poca.yaml`` as shipped (its keys and values are
those of ML-Agents' ``config/poca/DungeonEscape.yaml``) and shortens only the run and the sizes
that decide when the first update happens. The game is a real headless player over gRPC on
127.0.0.1, with random early actions that slay dragons and walk into the portal, so agents leave
their groups mid-episode while the trainer runs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime
import pytest
import yaml
from trainer_test_support import RunTrain, tensorboard_scalars

from trainers.common.checkpoints.files import load_checkpoint

pytestmark = pytest.mark.timeout(300)

CONFIG = Path(__file__).resolve().parents[2] / "trainers" / "configs" / "DungeonEscape_poca.yaml"


def test_shipped_config_matches_ml_agents_reference() -> None:
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    behavior = config["behaviors"]["DungeonEscape"]
    assert behavior["trainer_type"] == "poca"
    assert behavior["hyperparameters"] == {
        "batch_size": 1024,
        "buffer_size": 10240,
        "learning_rate": 3.0e-4,
        "learning_rate_schedule": "constant",
        "beta": 1.0e-2,
        "epsilon": 0.2,
        "lambd": 0.95,
        "num_epoch": 3,
    }
    assert behavior["network_settings"] == {
        "normalize": False,
        "hidden_units": 256,
        "num_layers": 2,
        "vis_encode_type": "simple",
    }
    assert behavior["reward_signals"] == {"extrinsic": {"gamma": 0.99, "strength": 1.0}}
    assert (behavior["max_steps"], behavior["time_horizon"]) == (20000000, 64)
    assert (behavior["summary_freq"], behavior["keep_checkpoints"]) == (60000, 5)


def test_poca_config_trains_dungeon_escape_and_exports_onnx(run_train: RunTrain) -> None:
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    behavior = config["behaviors"]["DungeonEscape"]
    behavior.update(max_steps=1500, summary_freq=750, checkpoint_interval=10**6, time_horizon=20)
    behavior["hyperparameters"].update(buffer_size=120, batch_size=40, num_epoch=1)
    # Group episodes of 30 decisions (8 areas, 24 slots, about 60 steps of the vector env):
    # agents removed in their first decisions leave their slots vacant for many steps while
    # the others play on, and groups end twice.
    run = run_train(config, "--scene", "DungeonEscape", "--seed", "3", "--no-graphics",
                    "--num-areas", "1", "--env-args", "--option",
                    "max_environment_steps=150")  # fmt: skip
    state = load_checkpoint(run / "DungeonEscape" / "checkpoint.pt")
    assert state["trainer_type"] == "poca" and state["update_count"] >= 1
    scalars = tensorboard_scalars(run / "DungeonEscape")
    for tag in (
        "Losses/Baseline Loss",
        "Losses/Policy Loss",
        "Environment/Group Cumulative Reward",
    ):
        assert tag in scalars and all(np.isfinite(scalars[tag]))
    session = onnxruntime.InferenceSession(str(run / "DungeonEscape.onnx"))
    shapes = sorted((i.name, i.shape[1:]) for i in session.get_inputs())
    assert shapes == [("action_masks", [7]), ("obs_0", [243]), ("obs_1", [405]), ("obs_2", [1])]
