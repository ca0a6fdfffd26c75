"""``--torch-device cuda``: every trainer path end to end on a GPU, on real players over gRPC.

Skipped where CUDA is not available (CI has no GPU); on a machine with one, run
``pytest tests/trainers/test_cuda_device.py``. The runs are tiny: they check that each path
(PPO, SAC, MA-POCA with self-play and bfloat16 updates, LSTM memory, curiosity and RND, GAIL
and behavioral cloning) trains on the device, writes a checkpoint that loads on a CPU, exports
an ONNX model that runs, and that a run trained on the GPU resumes on the CPU.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import pytest
import torch
import yaml
from imitation_test_support import write_demo
from trainer_test_support import RunTrain, ppo_behavior, sac_behavior

from trainers.common.checkpoints.files import load_checkpoint
from trainers.settings import load_config_file

pytestmark = [
    pytest.mark.skipif(
        not torch.cuda.is_available(),
        reason="CUDA is not available: these tests need an NVIDIA GPU and a CUDA build of torch",
    ),
    pytest.mark.timeout(300),
]

CONFIGS = Path(__file__).parents[2] / "trainers" / "configs"


def _check_cuda_run(run: Path, behavior: str, trainer_type: str) -> dict[str, Any]:
    """The run trained on CUDA, its checkpoint loads on the CPU and its ONNX model acts.

    Returns:
        The checkpoint's state.
    """
    timers = json.loads((run / "run_logs" / "timers.json").read_text(encoding="utf-8"))
    assert timers["metadata"]["torch_device"] == "cuda"
    state = load_checkpoint(run / behavior / "checkpoint.pt")
    assert state["trainer_type"] == trainer_type and state["update_count"] >= 1
    tensors = list(state["modules"]["policy"].values())
    assert tensors and all(t.device.type == "cpu" for t in tensors)
    assert all(bool(torch.isfinite(t).all()) for t in tensors if t.is_floating_point())
    session = onnxruntime.InferenceSession(str(run / f"{behavior}.onnx"))
    feed = {}
    for node in session.get_inputs():
        shape = [1 if isinstance(size, str) else size for size in node.shape]
        feed[node.name] = (np.ones if node.name == "action_masks" else np.zeros)(shape, np.float32)
    outputs = session.run(None, feed)
    assert outputs and all(np.isfinite(np.asarray(out, np.float64)).all() for out in outputs)
    return state


@pytest.mark.parametrize("trainer_type", ["ppo", "sac"])
def test_ppo_and_sac_train_on_cuda(run_train: RunTrain, trainer_type: str) -> None:
    behavior = ppo_behavior() if trainer_type == "ppo" else sac_behavior()
    run = run_train({"behaviors": {"3DBall": behavior}}, "--scene", "3DBall", "--seed", "3",
                    "--torch-device", "cuda")  # fmt: skip
    state = _check_cuda_run(run, "3DBall", trainer_type)
    assert state["step"] >= behavior["max_steps"]


def test_a_run_trained_on_cuda_resumes_on_the_cpu(run_train: RunTrain) -> None:
    config = {"behaviors": {"3DBall": ppo_behavior(max_steps=600)}}
    run = run_train(config, "--scene", "3DBall", "--seed", "3", "--torch-device", "cuda")
    _check_cuda_run(run, "3DBall", "ppo")
    config["behaviors"]["3DBall"]["max_steps"] = 1200
    run_train(config, "--scene", "3DBall", "--seed", "3", "--torch-device", "cpu", "--resume")
    state = load_checkpoint(run / "3DBall" / "checkpoint.pt")
    assert state["step"] == 1200 and state["update_count"] >= 2 * (600 // 128)
    timers = json.loads((run / "run_logs" / "timers.json").read_text(encoding="utf-8"))
    assert timers["metadata"]["torch_device"] == "cpu"


def test_poca_with_self_play_and_bfloat16_updates_trains_on_cuda(run_train: RunTrain) -> None:
    config = load_config_file(CONFIGS / "SoccerTwos_poca.yaml")
    behavior = config["behaviors"]["SoccerTwos"]
    behavior.update(max_steps=160, summary_freq=80, time_horizon=32)
    behavior["hyperparameters"].update(buffer_size=64, batch_size=32, num_epoch=1)
    behavior["network_settings"]["hidden_units"] = 32
    behavior["self_play"].update(save_steps=20, swap_steps=15, team_change=80, window=3)
    run = run_train(config, "--scene", "SoccerTwos", "--seed", "3", "--torch-device", "cuda",
                    "--torch-precision", "bf16-mixed",
                    "--env-args", "--option", "max_environment_steps=60")  # fmt: skip
    state = _check_cuda_run(run, "SoccerTwos", "poca")
    assert state["self_play"]["ghost_step"] > 0


def test_lstm_memory_trains_on_cuda(run_train: RunTrain) -> None:
    config = yaml.safe_load((CONFIGS / "Hallway_ppo.yaml").read_text(encoding="utf-8"))
    config["behaviors"]["Hallway"]["max_steps"] = 2100
    run = run_train(config, "--scene", "Hallway", "--num-areas", "1", "--torch-device", "cuda")
    _check_cuda_run(run, "Hallway", "ppo")
    session = onnxruntime.InferenceSession(str(run / "Hallway.onnx"))
    assert "recurrent_in" in {node.name for node in session.get_inputs()}


def test_curiosity_and_rnd_train_on_cuda(run_train: RunTrain) -> None:
    signals = {"extrinsic": {}, "curiosity": {"strength": 0.02}, "rnd": {"strength": 0.01}}
    behavior = ppo_behavior(reward_signals=signals)
    run = run_train({"behaviors": {"Pyramids": behavior}}, "--scene", "Pyramids", "--seed", "3",
                    "--torch-device", "cuda")  # fmt: skip
    state = _check_cuda_run(run, "Pyramids", "ppo")
    assert {"reward_signal.curiosity.optimizer", "reward_signal.rnd.optimizer"} <= set(
        state["optimizers"]
    )


def test_gail_and_behavioral_cloning_train_on_cuda(run_train: RunTrain, tmp_path: Path) -> None:
    # A synthetic demonstration of Basic (a one-hot position of 20, one branch of 3): go right.
    positions = np.random.default_rng(0).integers(0, 20, size=200)
    demo = write_demo(
        tmp_path / "basic.demo",
        [np.eye(20, dtype=np.float32)[positions]],
        discrete=np.full((200, 1), 2),
        branches=(3,),
        dones=[step % 20 == 19 for step in range(200)],
    )
    behavior = ppo_behavior(
        reward_signals={"extrinsic": {}, "gail": {"strength": 0.1, "demo_path": str(demo)}},
        behavioral_cloning={"demo_path": str(demo), "steps": 1000, "strength": 0.5},
    )
    run = run_train({"behaviors": {"Basic": behavior}}, "--scene", "Basic", "--seed", "3",
                    "--torch-device", "cuda")  # fmt: skip
    state = _check_cuda_run(run, "Basic", "ppo")
    assert {"reward_signal.gail.optimizer", "behavioral_cloning.optimizer"} <= set(
        state["optimizers"]
    )
