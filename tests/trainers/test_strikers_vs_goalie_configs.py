"""``unity-train`` with the shipped StrikersVsGoalie configs on the built-in scene.

Each run loads ``trainers/configs/StrikersVsGoalie_<trainer>.yaml`` as shipped and shortens only
the run (``max_steps``, ``summary_freq``, ``checkpoint_interval``, the self-play schedule), the
sizes that decide when the first update happens (``buffer_size``, ``batch_size``,
``time_horizon``) and the network width, so a few hundred steps train both behaviors (Striker,
two per field in one group; Goalie, one per field) and export a model for each. The game is a
real headless-player process over gRPC on 127.0.0.1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import onnxruntime
import pytest
import yaml
from trainer_test_support import RunTrain

from trainers.common.checkpoints.files import load_checkpoint
from trainers.ghost import SELF_PLAY_STATE_KEY

pytestmark = pytest.mark.timeout(300)

CONFIGS = Path(__file__).resolve().parents[2] / "trainers" / "configs"
#: The observation widths each behavior's model takes (stacked rays).
INPUTS = {"Striker": [231, 63], "Goalie": [738]}


def _shortened(name: str) -> dict[str, Any]:
    config = yaml.safe_load((CONFIGS / f"{name}.yaml").read_text(encoding="utf-8"))
    assert sorted(config["behaviors"]) == ["Goalie", "Striker"]
    for behavior in config["behaviors"].values():
        behavior.update(max_steps=160, summary_freq=80, checkpoint_interval=10**6)
        behavior["time_horizon"] = 32
        behavior["hyperparameters"].update(buffer_size=64, batch_size=32, num_epoch=1)
        behavior["network_settings"]["hidden_units"] = 32
        behavior["self_play"].update(save_steps=20, swap_steps=15, team_change=80, window=3)
    return config


@pytest.mark.parametrize(
    ("name", "trainer"),
    [
        pytest.param("StrikersVsGoalie_poca", "poca"),
        pytest.param("StrikersVsGoalie_ppo", "ppo"),
    ],
)
def test_shipped_config_trains_both_behaviors_with_self_play(
    run_train: RunTrain, name: str, trainer: str
) -> None:
    config = _shortened(name)
    run = run_train(config, "--scene", "StrikersVsGoalie", "--seed", "3", "--no-graphics",
                    "--env-args", "--option", "max_environment_steps=60")  # fmt: skip
    for behavior, widths in INPUTS.items():
        state = load_checkpoint(run / behavior / "checkpoint.pt")
        assert state["trainer_type"] == trainer and state["update_count"] >= 1, behavior
        assert SELF_PLAY_STATE_KEY in state
        session = onnxruntime.InferenceSession(str(run / f"{behavior}.onnx"))
        shapes = {i.name: i.shape for i in session.get_inputs()}
        assert [shapes[f"obs_{i}"][1] for i in range(len(widths))] == widths, behavior
