"""The GAIL reward signal: reward, discriminator loss, gradient penalty and VAIL's beta on a
discriminator with hand-set weights."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium import spaces
from imitation_test_support import write_demo

from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.reward_signals import GAILSignal, SignalBatch, create_signals
from trainers.settings import ConfigError, GAILSettings, NetworkSettings, parse_run_options

pytestmark = pytest.mark.timeout(60)

CPU = torch.device("cpu")
LAYOUT = ObservationLayout.from_space(spaces.Box(-5, 5, (1,), np.float32))
ACTIONS = ActionLayout.from_space(spaces.Discrete(2))
EPS = 1e-7


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _silu(z: np.ndarray) -> np.ndarray:
    return z * _sigmoid(z)


def _signal(tmp_path: Path, **options: bool) -> GAILSignal:
    demo = write_demo(
        tmp_path / "expert.demo",
        [np.array([[0.5], [1.0], [1.5]])],
        discrete=np.array([[1], [0], [1]]),
        branches=[2],
        dones=[False, True, False],
    )
    settings = GAILSettings(
        network_settings=NetworkSettings(hidden_units=1, num_layers=1),
        demo_path=str(demo),
        **options,
    )
    signal = GAILSignal(settings, LAYOUT, ACTIONS, CPU)
    network = signal.network
    with torch.no_grad():  # D(x) = sigmoid(silu(x)) (without VAIL)
        layer = network.body.plain[0]
        assert isinstance(layer, torch.nn.Linear)
        layer.weight.zero_()
        layer.weight[0, 0] = 1.0
        layer.bias.zero_()
        network.estimator.weight.fill_(1.0)
        network.estimator.bias.zero_()
    return signal


def _batch(x: list[float], **fields: torch.Tensor) -> SignalBatch:
    return SignalBatch(
        observations=[torch.tensor(x, dtype=torch.float32).reshape(-1, 1)],
        next_observations=None,
        continuous=None,
        discrete=fields.get("discrete"),
        rewards=torch.zeros(len(x)),
        dones=fields.get("dones"),
    )


def test_reward_is_minus_log_one_minus_the_estimate(tmp_path: Path) -> None:
    signal = _signal(tmp_path)
    x = np.array([-1.0, 0.0, 2.0])
    estimate = _sigmoid(_silu(x))
    expected = -np.log(1.0 - estimate * (1.0 - EPS))
    np.testing.assert_allclose(signal.evaluate(_batch(x.tolist())), expected, rtol=1e-5)
    assert signal.key == "gail" and signal.name == "Gail" and not signal.ignore_done


def test_discriminator_loss_and_estimates_by_hand(tmp_path: Path) -> None:
    signal = _signal(tmp_path)
    policy, expert = np.array([-1.0, 0.0]), np.array([1.0, 2.0])
    _, stats = signal.loss(_batch(policy.tolist()), _batch(expert.tolist()))
    d_policy, d_expert = _sigmoid(_silu(policy)), _sigmoid(_silu(expert))
    loss = -np.mean(np.log(d_expert + EPS) + np.log(1.0 - d_policy + EPS))
    assert stats["Losses/GAIL Loss"] == pytest.approx(loss, rel=1e-5)
    assert stats["Policy/GAIL Policy Estimate"] == pytest.approx(d_policy.mean(), rel=1e-5)
    assert stats["Policy/GAIL Expert Estimate"] == pytest.approx(d_expert.mean(), rel=1e-5)
    assert "Policy/GAIL Beta" not in stats


def test_gradient_penalty_by_hand(tmp_path: Path) -> None:
    signal = _signal(tmp_path)
    x = np.array([-0.5, 0.3, 1.0])  # same batches: every random mix is x itself
    total, stats = signal.loss(_batch(x.tolist()), _batch(x.tolist()))
    s = _sigmoid(x)
    d_silu = s * (1.0 + x * (1.0 - s))
    d_estimate = _sigmoid(_silu(x)) * (1.0 - _sigmoid(_silu(x))) * d_silu
    magnitude = np.mean((np.sqrt(d_estimate**2 + EPS) - 1.0) ** 2)
    assert stats["Policy/GAIL Grad Mag Loss"] == pytest.approx(10.0 * magnitude, rel=1e-5)
    expected = stats["Losses/GAIL Loss"] + 10.0 * magnitude
    assert float(total.detach()) == pytest.approx(expected, rel=1e-5)


def test_vail_beta_follows_the_kl_term(tmp_path: Path) -> None:
    signal = _signal(tmp_path, use_vail=True)
    network = signal.network
    assert network.z_mean is not None and network.z_sigma is not None
    assert network.z_mean.out_features == 128 and float(network.beta) == 0.0
    with torch.no_grad():  # code means 1, standard deviations 1: KL = 128 x 1
        network.z_mean.weight.zero_()
        network.z_mean.bias.fill_(1.0)
        network.estimator.weight.fill_(0.01)
    batch = _batch([0.0, 1.0])
    _, first = signal.loss(batch, batch)
    assert first["Losses/GAIL KL Loss"] == pytest.approx(128.0)
    assert first["Policy/GAIL Beta"] == pytest.approx(5e-4 * (128.0 - 0.5))
    _, second = signal.loss(batch, batch)
    assert second["Policy/GAIL Beta"] == pytest.approx(2 * 5e-4 * (128.0 - 0.5))
    with torch.no_grad():  # code means 0: KL 0 pulls beta down, never below 0
        network.z_mean.bias.zero_()
        network.beta.fill_(1e-4)
    _, third = signal.loss(batch, batch)
    assert third["Losses/GAIL KL Loss"] == pytest.approx(0.0, abs=1e-6)
    assert third["Policy/GAIL Beta"] == 0.0
    # the reward uses the code's mean (no noise): sigmoid(0.01 * 128 * 0 + 0) = 0.5
    np.testing.assert_allclose(signal.evaluate(batch), [-math.log(1 - 0.5 * (1 - EPS))] * 2)


def test_use_actions_feeds_choices_and_done_flags(tmp_path: Path) -> None:
    signal = _signal(tmp_path, use_actions=True)
    first = signal.network.body.plain[0]
    assert isinstance(first, torch.nn.Linear)
    assert first.in_features == 1 + 2 + 1  # obs, one-hot, done
    batch = _batch([0.0, 1.0], discrete=torch.tensor([[1], [0]]), dones=torch.tensor([0.0, 1.0]))
    inputs = signal.network.action_inputs(batch)
    assert inputs.tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 1.0]]
    expert = signal.expert_batch(16)  # demonstrated choices and next-record done flags
    assert expert.dones is not None and set(expert.dones.tolist()) <= {0.0, 1.0}
    stats = signal.update(batch)
    assert {"Losses/GAIL Loss", "Policy/GAIL Grad Mag Loss"} <= set(stats)
    with pytest.raises(RuntimeError, match="done flag"):
        signal.evaluate(_batch([0.0], discrete=torch.tensor([[1]])))


def test_training_separates_policy_from_demonstrations(tmp_path: Path) -> None:
    torch.manual_seed(0)
    signal = _signal(tmp_path)
    policy = _batch([-2.0, -1.5, -2.5, -1.0])
    before = signal.evaluate(policy).mean()
    for _ in range(200):
        signal.update(policy)
    assert signal.evaluate(policy).mean() < before  # policy steps look less demonstrated
    assert signal.evaluate(_batch([1.0])).mean() > signal.evaluate(policy).mean()
    state = signal.state_dict()
    assert set(state["modules"]) == {"discriminator"} and set(state["optimizers"]) == {"optimizer"}


def test_create_signals_builds_gail_and_reports_a_mismatch(tmp_path: Path) -> None:
    demo = write_demo(tmp_path / "other.demo", [np.zeros((3, 4))], discrete=np.zeros((3, 1)),
                      branches=[2])  # fmt: skip
    options = parse_run_options(
        {
            "behaviors": {
                "B": {"reward_signals": {"extrinsic": {}, "gail": {"demo_path": str(demo)}}}
            }
        }
    )
    settings = options.trainer_settings_for("B").reward_signals
    with pytest.raises(ConfigError) as info:
        create_signals(settings, LAYOUT, ACTIONS, CPU, behavior_name="B",
                       path="behaviors.B.reward_signals")  # fmt: skip
    message = str(info.value)
    assert message.startswith("behaviors.B.reward_signals.gail.demo_path: the demonstration")
    assert "records observations [(4,)]" in message and "has observations [(1,)]" in message
