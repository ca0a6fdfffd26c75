"""SAC with reward signals beside ``extrinsic``: one Q stream per signal with its own discount
(intrinsic streams bootstrap through episode ends) on hand-checked batches, the signals' update
pace, and a real-player run that trains with curiosity, logs it, exports, saves and resumes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from gymnasium import spaces
from trainer_test_support import (
    RunTrain,
    adam_steps,
    sac_behavior,
    sac_trainer,
    tensorboard_scalars,
)

from trainers.common.checkpoints.files import load_checkpoint
from trainers.reward_signals import CuriositySignal, RNDSignal
from trainers.sac.trainer import REPLAY_FILE, SACTrainer

pytestmark = pytest.mark.timeout(120)

TINY = {"hidden_units": 4, "num_layers": 1}
SIGNALS: dict[str, Any] = {
    "extrinsic": {"gamma": 0.9, "strength": 2.0},
    "curiosity": {"gamma": 0.5, "strength": 0.5, "network_settings": TINY},
    "rnd": {"gamma": 0.8, "strength": 0.25, "network_settings": TINY},
}


def _sac_trainer(tmp_path: Path, action_space: spaces.Space[Any], **overrides: Any) -> SACTrainer:
    """A training SAC trainer on CPU for 2-float observations, without checkpoints."""
    return sac_trainer(sac_behavior(**overrides), action_space, tmp_path)


def _constant_streams(network: torch.nn.Module, constants: list[float]) -> None:
    """Make every output of stream ``j`` of a Q network ``constants[j]``."""
    heads = [network.head, *network.signal_heads]
    with torch.no_grad():
        for head, constant in zip(heads, constants, strict=True):
            head.weight.zero_()
            head.bias.fill_(constant)


def _transitions(count: int, discrete: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    transitions = {
        "obs_0": rng.normal(size=(count, 2)).astype(np.float32),
        "next_obs_0": rng.normal(size=(count, 2)).astype(np.float32),
        "env_reward": np.arange(count, dtype=np.float32),
        "terminated": (np.arange(count) % 2).astype(np.float32),
        "done": (np.arange(count) % 2).astype(np.float32),
    }
    if discrete:
        transitions["action"] = (np.arange(count) % 3).reshape(count, 1).astype(np.int64)
        transitions["mask"] = np.ones((count, 3), dtype=bool)
        transitions["next_mask"] = np.ones((count, 3), dtype=bool)
    else:
        transitions["action"] = np.zeros((count, 2), dtype=np.float32)
    return transitions


@pytest.mark.parametrize("discrete", [True, False])
def test_each_signal_has_a_q_stream_with_its_own_gamma_and_dones(
    tmp_path: Path, discrete: bool
) -> None:
    space = spaces.Discrete(3) if discrete else spaces.Box(-1, 1, (2,), np.float32)
    trainer = _sac_trainer(tmp_path, space, reward_signals=SIGNALS)
    assert [s.key for s in trainer.signals] == ["extrinsic", "curiosity", "rnd"]
    assert isinstance(trainer.signals[1], CuriositySignal)
    assert isinstance(trainer.signals[2], RNDSignal)

    transitions = _transitions(4, discrete)
    batch = trainer._signal_batch(transitions)
    assert batch.dones is not None and batch.dones.tolist() == [False, True, False, True]
    observations = batch.observations
    for network in (trainer.q1, trainer.q2, trainer.q1_target, trainer.q2_target):
        assert len(network.signal_heads) == 2
        q = network(observations, None if discrete else batch.continuous)
        assert q.shape == ((4, 3, 3) if discrete else (4, 3))  # (rows, streams[, choices])

    # rewards: each signal's evaluation times its strength (curiosity gives 0 until trained)
    rewards = trainer._stream_rewards(batch)
    assert rewards.shape == (4, 3)
    np.testing.assert_allclose(rewards[:, 0].numpy(), [0.0, 2.0, 4.0, 6.0])
    np.testing.assert_allclose(rewards[:, 1].numpy(), 0.0)
    rnd = trainer.signals[2].evaluate(batch) * 0.25
    np.testing.assert_allclose(rewards[:, 2].numpy(), rnd, rtol=1e-6)
    assert (rnd > 0).all()

    # targets: r_j + gamma_j * (1 - done_j) * V_j(s'), the target critics' streams constant,
    # no entropy term (alpha ~ 0); rows 1 and 3 terminated, which only the extrinsic stream sees
    for network in (trainer.q1_target, trainer.q2_target):
        _constant_streams(network, [10.0, 20.0, 30.0])
    hand_rewards = torch.tensor(
        [[1.0, 0.1, 0.2], [2.0, 0.3, 0.4], [3.0, 0.5, 0.6], [4.0, 0.7, 0.8]]
    )
    not_done = trainer._not_done(torch.tensor([0.0, 1.0, 0.0, 1.0]))
    assert not_done.tolist() == [[1, 1, 1], [0, 1, 1], [1, 1, 1], [0, 1, 1]]
    alpha = torch.full_like(trainer.log_alpha, 1e-12)
    next_mask = trainer.mask_tensor(transitions["next_mask"]) if discrete else None
    targets = trainer._targets(batch.next_observations or [], hand_rewards, not_done, alpha,
                               next_mask)  # fmt: skip
    expected = [
        [1.0 + 0.9 * 10, 0.1 + 0.5 * 20, 0.2 + 0.8 * 30],
        [2.0, 0.3 + 0.5 * 20, 0.4 + 0.8 * 30],
        [3.0 + 0.9 * 10, 0.5 + 0.5 * 20, 0.6 + 0.8 * 30],
        [4.0, 0.7 + 0.5 * 20, 0.8 + 0.8 * 30],
    ]
    np.testing.assert_allclose(targets.numpy(), expected, rtol=1e-5)


def test_signals_train_at_their_own_pace_after_the_policy(tmp_path: Path) -> None:
    signals = {"extrinsic": {}, "curiosity": {"network_settings": TINY}}
    trainer = _sac_trainer(
        tmp_path,
        spaces.Discrete(3),
        reward_signals=signals,
        hyperparameters={
            "batch_size": 8,
            "buffer_init_steps": 10,
            "steps_per_update": 4.0,
            "reward_signal_steps_per_update": 2.0,
        },
    )
    trainer.replay.add(_transitions(8, discrete=True))
    trainer.step = 30  # (30 - 10) / 4 + 1 = 6 policy steps, (30 - 10) / 2 + 1 = 11 rounds
    assert (trainer._due_updates(), trainer._due_signal_updates()) == (6, 11)
    trainer._take_update_job()()
    assert (trainer.update_count, trainer.signal_update_count) == (6, 11)
    curiosity = trainer.signals[1]
    assert isinstance(curiosity, CuriositySignal)
    assert float(curiosity.optimizer.state_dict()["state"][0]["step"]) == 11
    assert float(curiosity.network.trained) == 1.0
    assert not trainer._update_ready()
    # the signals keep their own learning rate while the SAC one is scheduled
    assert curiosity.optimizer.param_groups[0]["lr"] == pytest.approx(3e-4)
    # a checkpoint keeps the signal's networks, optimizer and pace
    copy = _sac_trainer(tmp_path, spaces.Discrete(3), reward_signals=signals)
    copy.load_state_dict(trainer.state_dict(), restore_progress=True)
    assert copy.signal_update_count == 11
    restored = copy.signals[1]
    assert isinstance(restored, CuriositySignal)
    for name, value in curiosity.network.state_dict().items():
        assert torch.equal(restored.network.state_dict()[name], value), name
    assert float(restored.optimizer.state_dict()["state"][0]["step"]) == 11
    # a checkpoint written without the count resumes at the pace due now
    trainer.load_extra_state({"log_alpha": trainer.log_alpha.detach().clone()})
    assert trainer.signal_update_count == 11

    plain = _sac_trainer(tmp_path, spaces.Discrete(3))
    assert plain._due_signal_updates() == 0 and "signal_update_count" not in plain.extra_state()


def test_a_replay_buffer_saved_with_scaled_rewards_loads_unscaled(tmp_path: Path) -> None:
    trainer = _sac_trainer(
        tmp_path,
        spaces.Discrete(3),
        reward_signals={"extrinsic": {"strength": 2.0}},
        hyperparameters={"save_replay_buffer": True},
    )
    legacy = _transitions(3, discrete=True)
    legacy["reward"] = legacy.pop("env_reward") * 2.0  # the former format: times the strength
    del legacy["done"]  # and no done flags
    torch.save({k: torch.from_numpy(v) for k, v in legacy.items()}, tmp_path / REPLAY_FILE)
    trainer.load_auxiliary(tmp_path)
    state = trainer.replay.state()
    assert "reward" not in state
    np.testing.assert_allclose(state["env_reward"], [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(state["done"], state["terminated"])  # the best it can know


def test_sac_with_curiosity_on_basic_logs_exports_saves_and_resumes(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    signals = {
        "extrinsic": {"gamma": 0.99, "strength": 1.0},
        "curiosity": {"gamma": 0.9, "strength": 0.1, "network_settings": {"hidden_units": 8}},
    }
    flags = ("--scene", "Basic", "--seed", "4", "--no-graphics")

    def behavior(max_steps: int) -> dict[str, Any]:
        return sac_behavior(
            max_steps=max_steps,
            summary_freq=150,
            checkpoint_interval=10**6,
            hyperparameters={"reward_signal_steps_per_update": 8.0},
            reward_signals=signals,
        )

    run = run_train({"behaviors": {"Basic": behavior(300)}}, *flags)
    scalars = tensorboard_scalars(run / "Basic")
    for tag in (
        "Policy/Extrinsic Reward",
        "Policy/Curiosity Reward",
        "Policy/Extrinsic Value",
        "Policy/Curiosity Value",
        "Losses/Curiosity Forward Loss",
        "Losses/Curiosity Inverse Loss",
        "Losses/Q1 Loss",
    ):
        assert tag in scalars, tag
        assert all(np.isfinite(scalars[tag])), tag
    assert max(scalars["Policy/Curiosity Reward"]) > 0  # rewarded once the model has learned
    assert (run / "Basic.onnx").is_file()  # the policy alone is exported

    saved = load_checkpoint(run / "Basic" / "checkpoint.pt")
    assert {"reward_signal.curiosity.network", "signal_heads.0.weight"} <= {
        *saved["modules"],
        *saved["modules"]["q1_target"],
    }
    rounds = saved["extra"]["signal_update_count"]
    assert rounds == pytest.approx((saved["step"] - 64) / 8, abs=2)  # half the policy's pace
    assert adam_steps(saved, "reward_signal.curiosity.optimizer") == rounds

    run_train({"behaviors": {"Basic": behavior(450)}}, *flags, "--resume")
    resumed = load_checkpoint(run / "Basic" / "checkpoint.pt")
    assert resumed["step"] >= 450 and resumed["extra"]["signal_update_count"] > rounds
    # the signal's optimizer (and so its networks, loaded with it) continued
    assert (
        adam_steps(resumed, "reward_signal.curiosity.optimizer")
        == (resumed["extra"]["signal_update_count"])
    )

    # a run without the signal initializes one that has it: its parts start fresh
    plain = sac_behavior(max_steps=100, checkpoint_interval=10**6)
    run_train({"behaviors": {"Basic": plain}}, *flags, run_id="plain")
    capsys.readouterr()
    target = run_train({"behaviors": {"Basic": behavior(100)}}, *flags,
                       "--initialize-from", "plain", run_id="target")  # fmt: skip
    assert "Q networks have no streams for curiosity" in capsys.readouterr().err
    assert (
        "reward_signal.curiosity.network"
        in load_checkpoint(target / "Basic" / "checkpoint.pt")["modules"]
    )
