"""``unity-train`` with the shipped Match3 config on the built-in scene.

The run loads ``trainers/configs/Match3_ppo.yaml`` as shipped (its keys and values are those of
ML-Agents' ``config/ppo/Match3.yaml``) and shortens only the run and the sizes that decide when
the first update happens. The game is a real headless player over gRPC on 127.0.0.1 with four
behaviors, one trainer each: ``Match3VisualObs`` reads the board as PNG images through the
``match3`` encoder, the others as one-hot vectors; every move is chosen under the action mask of
the invalid moves, and the ONNX models take the boards and the 127-move mask.
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

CONFIG = Path(__file__).resolve().parents[2] / "trainers" / "configs" / "Match3_ppo.yaml"
LEARNERS = ("Match3VectorObs", "Match3VisualObs")
HEURISTICS = ("Match3SimpleHeuristic", "Match3SmartHeuristic")


def test_shipped_config_matches_ml_agents_reference() -> None:
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    assert set(config["behaviors"]) == {*LEARNERS, *HEURISTICS}
    for name, behavior in config["behaviors"].items():
        learner = name in LEARNERS
        assert behavior["trainer_type"] == "ppo"
        assert behavior["hyperparameters"] == {
            "batch_size": 64,
            "buffer_size": 12000 if learner else 128,
            "learning_rate": 3.0e-4,
            "beta": 1.0e-3,
            "epsilon": 0.2,
            "lambd": 0.99,
            "num_epoch": 3,
            "learning_rate_schedule": "constant",
        }
        assert behavior["network_settings"] == {
            "normalize": True,
            "hidden_units": 128 if learner else 4,
            "num_layers": 2 if learner else 1,
            "vis_encode_type": "match3",
        }
        assert behavior["reward_signals"] == {"extrinsic": {"gamma": 0.99, "strength": 1.0}}
        assert (behavior["max_steps"], behavior["time_horizon"]) == (5000000, 1000)
        assert (behavior["summary_freq"], behavior["keep_checkpoints"]) == (10000, 5)


def test_config_trains_match3_and_exports_onnx(run_train: RunTrain) -> None:
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    for behavior in config["behaviors"].values():
        behavior.update(max_steps=800, summary_freq=400, checkpoint_interval=10**6, time_horizon=32)
        behavior["hyperparameters"].update(buffer_size=128, batch_size=32, num_epoch=1)
    run = run_train(config, "--scene", "Match3", "--seed", "3", "--no-graphics", "--num-envs",
                    "1", "--num-areas", "2", "--env-args", "--option", "max_moves=100")  # fmt: skip
    for name in (*LEARNERS, *HEURISTICS):
        state = load_checkpoint(run / name / "checkpoint.pt")
        assert state["trainer_type"] == "ppo" and state["update_count"] >= 2, name
        if name == "Match3VisualObs":  # the match3 encoder: conv 35 3x3, conv 144 3x3 per board
            policy = state["modules"]["policy"]
            convolutions = sorted(tuple(w.shape) for w in policy.values() if w.ndim == 4)
            assert convolutions == [(35, 3, 3, 3), (35, 6, 3, 3), (144, 35, 3, 3), (144, 35, 3, 3)]
        scalars = tensorboard_scalars(run / name)
        assert all(np.isfinite(scalars["Losses/Policy Loss"])), name
        # 99 moves an episode, each clearing 3 or more points: 0.03 or more per move
        assert min(scalars["Environment/Cumulative Reward"]) > 99 * 0.03, name
        session = onnxruntime.InferenceSession(str(run / f"{name}.onnx"))
        shapes = sorted((i.name, i.shape[1:]) for i in session.get_inputs())
        boards = [[6, 9, 8], [3, 9, 8]] if name == "Match3VisualObs" else [[432], [216]]
        assert shapes == [("action_masks", [127]), ("obs_0", boards[0]), ("obs_1", boards[1])]
        # The exported policy never picks a masked move.
        feeds = {
            "obs_0": np.random.default_rng(0).random((1, *boards[0]), dtype=np.float32),
            "obs_1": np.random.default_rng(1).random((1, *boards[1]), dtype=np.float32),
        }
        mask = np.zeros((1, 127), np.float32)
        mask[0, [5, 70]] = 1.0  # 1 = allowed
        names = ["discrete_actions", "deterministic_discrete_actions"]
        sampled, best = session.run(names, {**feeds, "action_masks": mask})
        assert int(sampled[0, 0]) in (5, 70) and int(best[0, 0]) in (5, 70), name
