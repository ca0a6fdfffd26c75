"""``unity-train`` with the shipped Sorter curriculum config on the built-in scene.

The run loads ``trainers/configs/Sorter_ppo.yaml`` as shipped (its keys and values are
those of ML-Agents' ``config/ppo/Sorter_curriculum.yaml``) and shortens only the run and the sizes
that decide when the first update happens. The game is a real headless player over gRPC on
127.0.0.1 whose tiles are a variable-length observation: the policy embeds them and attends over
the ones shown, and the ONNX model takes them as ``(batch, 20, 23)``.
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

CONFIG = Path(__file__).resolve().parents[2] / "trainers" / "configs" / "Sorter_ppo.yaml"


def test_shipped_config_matches_ml_agents_reference() -> None:
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    behavior = config["behaviors"]["Sorter"]
    assert behavior["hyperparameters"] == {
        "batch_size": 512,
        "buffer_size": 40960,
        "learning_rate": 3.0e-4,
        "beta": 5.0e-3,
        "epsilon": 0.2,
        "lambd": 0.95,
        "num_epoch": 3,
        "learning_rate_schedule": "linear",
    }
    assert behavior["network_settings"] == {
        "normalize": False,
        "hidden_units": 128,
        "num_layers": 2,
        "vis_encode_type": "simple",
    }
    assert (behavior["max_steps"], behavior["time_horizon"]) == (5000000, 256)
    lessons = config["environment_parameters"]["num_tiles"]["curriculum"]
    assert [lesson["value"] for lesson in lessons] == [2.0 * i for i in range(1, 11)]
    thresholds = [lesson["completion_criteria"]["threshold"] for lesson in lessons[:-1]]
    assert thresholds == [0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]
    assert {lesson["completion_criteria"]["measure"] for lesson in lessons[:-1]} == {"progress"}
    assert "env_settings" not in config  # the reference's num_envs 8: --num-envs 8


def test_curriculum_config_trains_sorter_and_exports_onnx(run_train: RunTrain) -> None:
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    behavior = config["behaviors"]["Sorter"]
    behavior.update(max_steps=400, summary_freq=200, checkpoint_interval=10**6, time_horizon=32)
    behavior["hyperparameters"].update(buffer_size=160, batch_size=32, num_epoch=1)
    run = run_train(config, "--scene", "Sorter", "--seed", "3", "--no-graphics", "--num-envs",
                    "1", "--num-areas", "1", "--env-args", "--option", "max_step=100")  # fmt: skip
    state = load_checkpoint(run / "Sorter" / "checkpoint.pt")
    assert state["trainer_type"] == "ppo" and state["update_count"] >= 1
    scalars = tensorboard_scalars(run / "Sorter")
    assert all(np.isfinite(scalars["Losses/Policy Loss"]))
    assert scalars["Environment/Lesson Number/num_tiles"][-1] == 0  # progress 400 of 5M steps
    session = onnxruntime.InferenceSession(str(run / "Sorter.onnx"))
    shapes = sorted((i.name, i.shape[1:]) for i in session.get_inputs())
    assert shapes == [
        ("action_masks", [9]),
        ("obs_0", [20, 23]),
        ("obs_1", [10]),
        ("obs_2", [8]),
    ]
