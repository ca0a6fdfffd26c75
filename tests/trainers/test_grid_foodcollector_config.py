"""``unity-train`` with the shipped GridFoodCollector configs (PPO and SAC) on the built-in scene.

The PPO file holds the values of ML-Agents' ``config/ppo/FoodCollector.yaml`` (no PPO reference
of the grid version is public), the SAC file those of ``config/sac/GridFoodCollector.yaml``. The
runs shorten only the run and the sizes that decide when the first update happens; the game is a
real headless player over gRPC on 127.0.0.1 whose one observation is the PNG-compressed
5 x 40 x 40 grid, read by the "simple" CNN; the exported ONNX model takes it as
``(batch, 5, 40, 40)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import pytest
import yaml
from trainer_test_support import RunTrain, shipped_config, shortened_run

pytestmark = pytest.mark.timeout(300)

CONFIGS = Path(__file__).resolve().parents[2] / "trainers" / "configs"
RUN_ARGS = ("--scene", "GridFoodCollector", "--seed", "3", "--no-graphics", "--num-envs", "1",
            "--num-areas", "1", "--env-args", "--option", "max_step=100")  # fmt: skip


def _config(trainer: str) -> dict[str, Any]:
    return shipped_config("GridFoodCollector", trainer)


def test_shipped_configs_match_the_ml_agents_references() -> None:
    ppo = _config("ppo")["behaviors"]["GridFoodCollector"]
    food_ppo = yaml.safe_load((CONFIGS / "FoodCollector_ppo.yaml").read_text(encoding="utf-8"))
    assert ppo == food_ppo["behaviors"]["FoodCollector"]
    sac = _config("sac")["behaviors"]["GridFoodCollector"]
    food_sac = yaml.safe_load((CONFIGS / "FoodCollector_sac.yaml").read_text(encoding="utf-8"))
    # config/sac/GridFoodCollector.yaml differs from config/sac/FoodCollector.yaml in threading.
    assert sac == {**food_sac["behaviors"]["FoodCollector"], "threaded": True}


@pytest.mark.parametrize("trainer", ["ppo", "sac"])
def test_config_trains_grid_food_collector_and_exports_onnx(
    run_train: RunTrain, trainer: str
) -> None:
    # SAC: smaller batches and fewer updates a step keep the grid's CNN updates short.
    fewer = {} if trainer == "ppo" else {"batch_size": 32, "steps_per_update": 50.0}
    run = shortened_run(run_train, _config(trainer), "GridFoodCollector", 1000, *RUN_ARGS, **fewer)
    session = onnxruntime.InferenceSession(str(run / "GridFoodCollector.onnx"))
    shapes = sorted((i.name, i.shape[1:]) for i in session.get_inputs())
    assert shapes == [("action_masks", [2]), ("obs_0", [5, 40, 40])]
    feeds = {"obs_0": np.zeros((2, 5, 40, 40), np.float32),
             "action_masks": np.ones((2, 2), np.float32)}  # fmt: skip
    names = [o.name for o in session.get_outputs()]
    outputs = dict(zip(names, session.run(None, feeds), strict=True))
    assert outputs["continuous_actions"].shape == (2, 3)
    assert outputs["discrete_actions"].shape == (2, 1)
