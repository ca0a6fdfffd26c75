"""``unity-train --scene ...``: training on built-in Unity scenes through the vector env.

The games are real headless-player processes reached over gRPC on 127.0.0.1.
"""

from __future__ import annotations

import json

import numpy as np
import onnxruntime
import pytest
from trainer_test_support import RunTrain, ppo_behavior, sac_behavior

import unity_gym.vector  # noqa: F401  (a broken import fails the module, never skips it)

pytestmark = pytest.mark.timeout(180)


def test_ppo_on_3dball_uses_every_agent_of_every_game(run_train: RunTrain) -> None:
    behavior = ppo_behavior(
        max_steps=480, summary_freq=240, checkpoint_interval=10**6, time_horizon=20
    )
    behavior["hyperparameters"]["buffer_size"] = 240
    run = run_train({"behaviors": {"3DBall": behavior}}, "--scene", "3DBall", "--num-envs", "2",
                    "--seed", "5", "--no-graphics")  # fmt: skip
    status = json.loads((run / "run_logs" / "training_status.json").read_text())
    assert status["3DBall"]["final_checkpoint"]["steps"] == 480  # 20 steps x 24 agents
    session = onnxruntime.InferenceSession(str(run / "3DBall.onnx"))
    assert [(i.name, i.shape) for i in session.get_inputs()] == [("obs_0", ["batch", 8])]
    outputs = session.run(
        ["deterministic_continuous_actions"], {"obs_0": np.zeros((3, 8), np.float32)}
    )
    assert outputs[0].shape == (3, 2)
    logs = run / "run_logs"  # the games log into the run's folder (log_folder=...)
    assert (logs / "Player-0.log").is_file() and (logs / "Player-1.log").is_file()


def test_sac_on_basic_discrete(run_train: RunTrain) -> None:
    behavior = sac_behavior(max_steps=300, summary_freq=100, checkpoint_interval=10**6)
    run = run_train({"behaviors": {"Basic": behavior}}, "--scene", "Basic", "--seed", "2",
                    "--no-graphics")  # fmt: skip
    session = onnxruntime.InferenceSession(str(run / "Basic.onnx"))
    names = [o.name for o in session.get_outputs()]
    assert "deterministic_discrete_actions" in names
    assert [i.name for i in session.get_inputs()] == ["obs_0", "action_masks"]
