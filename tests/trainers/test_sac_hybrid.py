"""SAC with hybrid actions (continuous and discrete at once), as ML-Agents' SAC supports them.

The entropy coefficients and targets and the soft value formula on hand-checked numbers; a
real-player run on the built-in Stress scene with 2 continuous actions and discrete branches
3 and 2 (action masks on) that learns the rewarded continuous action, trains every entropy
coefficient and exports an ONNX model with both parts; the same with an LSTM (memory), saving
both action parts in the replay and resuming; and a
Gymnasium run whose reward needs the right discrete choice, which the exported model learns.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import pytest
import torch
from gymnasium import spaces
from trainer_test_support import RunTrain, sac_behavior, sac_trainer, tensorboard_scalars

import unity_gym.vector  # noqa: F401  (a broken import fails the module, never skips it)
from trainers.sac.trainer import SACTrainer

pytestmark = pytest.mark.timeout(180)

HYBRID = spaces.Dict(
    {
        "continuous": spaces.Box(-1.0, 1.0, (2,), np.float32),
        "discrete": spaces.MultiDiscrete([3, 2]),
    }
)
# Stress: 2 observations (step in episode, agent id), 10-step episodes, 2 continuous actions
# and branches 3 and 2 whose action (step % size) is masked; the reward of a step is the first
# continuous action.
STRESS_OPTIONS = ("continuous=2", "discrete=3,2", "action_mask=true", "episode_length=10",
                  "obs_size=2")  # fmt: skip
STRESS_ARGS = ("--scene", "Stress", "--seed", "3", "--no-graphics", "--env-args",
               *(arg for option in STRESS_OPTIONS for arg in ("--option", option)))  # fmt: skip
INIT_ENTCOEF = 0.2


def _hybrid_behavior(**overrides: Any) -> dict[str, Any]:
    """A small SAC config that learns Stress's and HybridTarget's rewards in seconds."""
    base = sac_behavior(
        hyperparameters={
            "batch_size": 64,
            "learning_rate": 3.0e-3,
            "buffer_init_steps": 200,
            "tau": 0.02,
            "init_entcoef": INIT_ENTCOEF,
        },
        network_settings={"hidden_units": 32, "num_layers": 1},
        reward_signals={"extrinsic": {"gamma": 0.9, "strength": 1.0}},
        max_steps=2000,
        summary_freq=500,
        checkpoint_interval=10**6,
    )
    return {**base, **overrides}


def _hybrid_trainer(tmp_path: Path) -> SACTrainer:
    return sac_trainer(sac_behavior(), HYBRID, tmp_path)


def test_hybrid_entropy_coefficients_q_shapes_and_soft_value(tmp_path: Path) -> None:
    trainer = _hybrid_trainer(tmp_path)
    # ML-Agents: one coefficient for the continuous part (target -1.0 x size), one per branch
    # (target 0.2 x log(size)), all starting at init_entcoef (0.5 here)
    np.testing.assert_allclose(trainer.log_alpha.detach().exp().numpy(), [0.5] * 3, rtol=1e-6)
    np.testing.assert_allclose(
        trainer.target_entropy.numpy(), [-2.0, 0.2 * math.log(3), 0.2 * math.log(2)], rtol=1e-6
    )
    # the Q networks read the continuous action and give one value per discrete choice
    observations = [torch.zeros((4, 2))]
    actions = torch.zeros((4, 2))
    for network in (trainer.q1, trainer.q2, trainer.q1_target, trainer.q2_target):
        values = network(observations, actions)
        assert values.shape == (4, 5)
        assert not torch.equal(values, network(observations, actions + 0.5))

    # soft V = mean over branches of sum_i p_i (Q_i - alpha_b log p_i) - alpha_c log pi(a_c)
    p1, p2 = [0.5, 0.25, 0.25], [0.9, 0.1]
    q = torch.tensor([[[1.0, 2.0, 3.0, 10.0, 20.0]]])  # (rows, streams, choices)
    alpha = torch.tensor([0.3, 0.1, 0.2])
    log_prob = torch.tensor([-1.5])
    value = trainer._soft_value(
        q, [torch.tensor([p1]).log(), torch.tensor([p2]).log()], log_prob, alpha
    )
    branch1 = sum(p * (qi - 0.1 * math.log(p)) for p, qi in zip(p1, [1.0, 2.0, 3.0], strict=True))
    branch2 = sum(p * (qi - 0.2 * math.log(p)) for p, qi in zip(p2, [10.0, 20.0], strict=True))
    expected = (branch1 + branch2) / 2 - 0.3 * -1.5
    assert value.shape == (1, 1)
    assert value.item() == pytest.approx(expected, rel=1e-6)


def _last_summaries(scalars: dict[str, list[float]], tag: str, count: int) -> list[float]:
    values = scalars[tag]
    assert len(values) >= count, f"{tag}: {values}"
    return values[-count:]


def test_sac_learns_stress_with_hybrid_actions_and_exports_both_parts(
    run_train: RunTrain,
) -> None:
    run = run_train({"behaviors": {"Stress": _hybrid_behavior()}}, *STRESS_ARGS)
    scalars = tensorboard_scalars(run / "Stress")
    # A 10-step episode earns the sum of its first continuous actions: 0 on average for a
    # random (untrained, symmetric tanh-Gaussian) policy, whose episode sums vary by about
    # sqrt(10 x E[tanh(z)^2]) ~ 2, so a 500-step summary's mean (>= 40 episodes of the 4
    # agents) within about 0.3 of 0; pushing the action to +1 earns up to 10.
    rewards = _last_summaries(scalars, "Environment/Cumulative Reward", 2)
    assert min(rewards) > 6.0, rewards
    # both kinds of entropy coefficient were trained, each its own way: the continuous one
    # (a few percent off init_entcoef), the discrete ones (the masks leave branch 1 one choice:
    # its entropy 0 is below its target, so its coefficient grows)
    continuous = scalars["Policy/Continuous Entropy Coeff"][-1]
    discrete = scalars["Policy/Discrete Entropy Coeff"][-1]
    assert abs(continuous - INIT_ENTCOEF) > 0.01, scalars["Policy/Continuous Entropy Coeff"]
    assert discrete > INIT_ENTCOEF + 0.05, scalars["Policy/Discrete Entropy Coeff"]
    assert "Losses/Q1 Loss" in scalars and "Policy/Extrinsic Value" in scalars

    session = onnxruntime.InferenceSession(str(run / "Stress.onnx"))
    assert [(i.name, i.shape) for i in session.get_inputs()] == [
        ("obs_0", ["batch", 2]),
        ("action_masks", ["batch", 5]),
    ]
    names = [o.name for o in session.get_outputs()]
    assert names == [
        "version_number",
        "memory_size",
        "continuous_actions",
        "continuous_action_output_shape",
        "deterministic_continuous_actions",
        "discrete_actions",
        "discrete_action_output_shape",
        "deterministic_discrete_actions",
    ]
    observations = np.array([[0, 0], [3, 1], [7, 2], [9, 3]], np.float32)
    masks = np.ones((4, 5), np.float32)
    masks[:, [0, 1]] = 0.0  # only the last choice of branch 0 and any of branch 1
    masks[:, 4] = 0.0  # ... and the first of branch 1
    outputs = dict(zip(names, session.run(None, {"obs_0": observations, "action_masks": masks}),
                       strict=True))  # fmt: skip
    assert outputs["deterministic_continuous_actions"].shape == (4, 2)
    assert (outputs["deterministic_continuous_actions"][:, 0] > 0.5).all()
    np.testing.assert_array_equal(outputs["discrete_action_output_shape"], [[3.0, 2.0]])
    for key in ("discrete_actions", "deterministic_discrete_actions"):
        np.testing.assert_array_equal(outputs[key], [[2, 0]] * 4)


def test_sac_with_memory_trains_hybrid_actions_and_resumes(run_train: RunTrain) -> None:
    behavior = _hybrid_behavior(max_steps=400, summary_freq=200)
    behavior["hyperparameters"]["save_replay_buffer"] = True
    behavior["network_settings"]["memory"] = {"sequence_length": 4, "memory_size": 8}
    run = run_train({"behaviors": {"Stress": behavior}}, *STRESS_ARGS)
    # the replay holds both parts of the actions: "action" continuous, "discrete_action"
    replay = torch.load(run / "Stress" / "replay_buffer.pt", weights_only=True)
    assert replay["action"].dtype == torch.float32 and replay["action"].shape[-1] == 2
    assert replay["discrete_action"].dtype == torch.int64
    assert replay["discrete_action"].shape[-1] == 2
    # resumed: the coefficients, the Q networks and the replay load and training goes on
    behavior["max_steps"] = 600
    run_train({"behaviors": {"Stress": behavior}}, "--resume", *STRESS_ARGS)
    status = json.loads((run / "run_logs" / "training_status.json").read_text())
    assert status["Stress"]["final_checkpoint"]["steps"] == 600
    scalars = tensorboard_scalars(run / "Stress")
    assert "Policy/Discrete Entropy Coeff" in scalars
    assert "Policy/Continuous Entropy Coeff" in scalars
    session = onnxruntime.InferenceSession(str(run / "Stress.onnx"))
    outputs = session.run(
        ["deterministic_continuous_actions", "deterministic_discrete_actions", "recurrent_out"],
        {
            "obs_0": np.zeros((3, 2), np.float32),
            "action_masks": np.ones((3, 5), np.float32),
            "recurrent_in": np.zeros((3, 1, 8), np.float32),
        },
    )
    assert [o.shape for o in outputs] == [(3, 2), (3, 2), (3, 1, 8)]


def test_sac_learns_the_rewarded_discrete_choice_of_hybrid_actions(run_train: RunTrain) -> None:
    # HybridTarget: reward -(|c_0| + |c_1|) + (d == 2) per step, 10-step episodes. A random
    # policy earns about 10 x (-2 x E|tanh(z)| + 1/3) ~ -9 per episode; the best, 10.
    behavior = _hybrid_behavior(max_steps=2500)
    behavior["network_settings"]["vis_encode_type"] = "fully_connected"
    run = run_train({"behaviors": {"Hybrid": behavior}}, "--gym-id",
                    "trainer_toy_envs:HybridTarget-v0", "--seed", "1")  # fmt: skip
    rewards = _last_summaries(
        tensorboard_scalars(run / "Hybrid"), "Environment/Cumulative Reward", 1
    )
    assert rewards[0] > 4.0, rewards
    session = onnxruntime.InferenceSession(str(run / "Hybrid.onnx"))
    continuous, discrete = session.run(
        ["deterministic_continuous_actions", "deterministic_discrete_actions"],
        {
            "obs_0": np.full((3, 1, 24, 24), 0.3, np.float32),
            "action_masks": np.ones((3, 3), np.float32),
        },
    )
    np.testing.assert_array_equal(discrete, [[2]] * 3)
    assert (np.abs(continuous) < 0.3).all(), continuous
