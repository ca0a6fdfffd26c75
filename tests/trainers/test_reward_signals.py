"""Reward signals beside ``extrinsic``: RND and curiosity rewards and losses on hand-checked
inputs, per-signal discounting, and PPO runs that train with them, log them, save and resume."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from gymnasium import spaces
from trainer_test_support import (
    RunTrain,
    adam_steps,
    ppo_behavior,
    ppo_trainer,
    tensorboard_scalars,
)

from trainers.common.buffers.experience import RolloutBuffer
from trainers.common.checkpoints.files import load_checkpoint
from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.reward_signals import CuriositySignal, RNDSignal, SignalBatch
from trainers.settings import (
    ConfigError,
    CuriositySettings,
    NetworkSettings,
    RNDSettings,
    UnsupportedFeatureError,
    parse_run_options,
)

pytestmark = pytest.mark.timeout(120)

CPU = torch.device("cpu")
TINY = NetworkSettings(hidden_units=2, num_layers=1, normalize=False)


def _silu(z: np.ndarray) -> np.ndarray:
    return z / (1.0 + np.exp(-z))


def _set_layer(layer: Any, weight: list[list[float]], bias: list[float]) -> None:
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(weight))
        layer.bias.copy_(torch.tensor(bias))


def _batch(observations: np.ndarray, **fields: Any) -> SignalBatch:
    return SignalBatch(
        observations=[torch.as_tensor(observations, dtype=torch.float32)],
        next_observations=fields.get("next_observations"),
        continuous=fields.get("continuous"),
        discrete=fields.get("discrete"),
        rewards=torch.zeros(len(observations)),
    )


# -- RND -------------------------------------------------------------------------------------


def test_rnd_reward_is_the_summed_squared_error_of_the_two_embeddings() -> None:
    layout = ObservationLayout.from_space(spaces.Box(-5, 5, (2,), np.float32))
    signal = RNDSignal(RNDSettings(network_settings=TINY), layout, CPU)
    _set_layer(signal.target.body.plain[0], [[1.0, 0.0], [0.0, 1.0]], [0.0, 0.0])
    _set_layer(signal.predictor.body.plain[0], [[2.0, 0.0], [0.0, 0.0]], [0.0, 1.0])
    x = np.array([[1.0, -1.0], [0.5, 2.0], [0.0, 0.0]], dtype=np.float32)

    target = _silu(x)
    prediction = _silu(np.stack([2.0 * x[:, 0], np.ones(3)], axis=1))
    expected = ((prediction - target) ** 2).sum(axis=1)
    np.testing.assert_allclose(signal.evaluate(_batch(x)), expected, rtol=1e-5)

    before = [p.detach().clone() for p in signal.target.parameters()]
    losses = signal.update(_batch(x))
    assert losses["Losses/RND Loss"] == pytest.approx(float(expected.mean()), rel=1e-5)
    for old, new in zip(before, signal.target.parameters(), strict=True):
        torch.testing.assert_close(old, new)  # the target never learns


def test_rnd_reward_falls_on_a_repeated_observation() -> None:
    layout = ObservationLayout.from_space(spaces.Box(-5, 5, (4,), np.float32))
    torch.manual_seed(0)
    settings = RNDSettings(
        learning_rate=1e-2, network_settings=NetworkSettings(hidden_units=16, num_layers=2)
    )
    signal = RNDSignal(settings, layout, CPU)
    seen = np.array([[1.0, -2.0, 0.5, 3.0]] * 8, dtype=np.float32)
    unseen = np.array([[-3.0, 2.5, -1.0, -2.0]], dtype=np.float32)
    first = float(signal.evaluate(_batch(seen))[0])
    first_unseen = float(signal.evaluate(_batch(unseen))[0])
    for _ in range(100):
        signal.update(_batch(seen))
    last = float(signal.evaluate(_batch(seen))[0])
    assert last < 0.05 * first  # the novelty of what was seen vanishes ...
    assert float(signal.evaluate(_batch(unseen))[0]) > 10 * last  # ... not that of the rest
    assert first_unseen > 0


# -- curiosity -------------------------------------------------------------------------------


def _curiosity(strength: float) -> CuriositySignal:
    layout = ObservationLayout.from_space(spaces.Box(-5, 5, (2,), np.float32))
    actions = ActionLayout.from_space(
        spaces.Dict(
            {"continuous": spaces.Box(-1, 1, (1,), np.float32), "discrete": spaces.Discrete(3)}
        )
    )
    settings = CuriositySettings(strength=strength, network_settings=TINY)
    signal = CuriositySignal(settings, layout, actions, CPU)
    network = signal.network
    _set_layer(network.state.body.plain[0], [[1.0, 0.0], [0.0, 1.0]], [0.0, 0.0])
    with torch.no_grad():  # inverse and forward models predict 0 (uniform choices)
        for module in (network.inverse, network.forward_model):
            for parameter in module.parameters():
                parameter.zero_()
        for head in (network.continuous_head, network.discrete_head):
            assert head is not None
            head.weight.zero_()
            head.bias.zero_()
    return signal


def test_curiosity_losses_and_rewards_by_hand() -> None:
    signal = _curiosity(strength=2.0)
    x = np.array([[1.0, 0.0], [0.0, -1.0], [2.0, 1.0]], dtype=np.float32)
    following = np.array([[0.5, 1.0], [3.0, 2.0], [-1.0, 0.0]], dtype=np.float32)
    continuous = torch.tensor([[0.5], [-1.0], [2.0]])
    batch = _batch(
        x,
        next_observations=[torch.as_tensor(following)],
        continuous=continuous,
        discrete=torch.tensor([[0], [2], [1]]),
    )
    assert not signal.evaluate(batch).any()  # no reward before the networks learned once

    # forward: 0.5 * |embedding(s') - 0|^2; inverse: squared action error + cross-entropy of
    # uniform choices over 3
    forward = 0.5 * (_silu(following) ** 2).sum(axis=1)
    inverse = (continuous.numpy() ** 2).sum(axis=1) + np.log(3.0)
    losses = signal.update(batch)
    assert losses["Losses/Curiosity Forward Loss"] == pytest.approx(forward.mean(), rel=1e-5)
    assert losses["Losses/Curiosity Inverse Loss"] == pytest.approx(inverse.mean(), rel=1e-5)

    with torch.no_grad():
        errors = signal.network.forward_errors(batch, *signal.network.embeddings(batch)).numpy()
    rewards = signal.evaluate(batch)
    assert errors.max() > 0.5 > errors.min()  # some rewards are capped at 1 / strength ...
    np.testing.assert_allclose(rewards, np.minimum(errors, 0.5), rtol=1e-6)  # ... some not


def test_curiosity_layers_start_as_in_ml_agents() -> None:
    """Hidden layers He-normal (linear gain); output layers (predicted actions, predicted
    successor embedding) Glorot-uniform with zero bias, as ML-Agents' curiosity module."""
    torch.manual_seed(0)
    layout = ObservationLayout.from_space(spaces.Box(-5, 5, (40,), np.float32))
    actions = ActionLayout.from_space(
        spaces.Dict(
            {"continuous": spaces.Box(-1, 1, (2,), np.float32), "discrete": spaces.Discrete(5)}
        )
    )
    settings = CuriositySettings(network_settings=NetworkSettings(hidden_units=64))
    network = CuriositySignal(settings, layout, actions, CPU).network
    assert network.continuous_head is not None and network.discrete_head is not None
    outputs = [network.continuous_head, network.discrete_head, network.forward_model[2]]
    assert [tuple(layer.weight.shape) for layer in outputs] == [(2, 256), (5, 256), (64, 256)]
    for layer in outputs:
        fan_out, fan_in = layer.weight.shape
        bound = float(np.sqrt(6.0 / (fan_in + fan_out)))
        weights = layer.weight.detach().abs()
        assert float(weights.max()) <= bound  # uniform within Glorot's bound ...
        assert float(weights.max()) > 0.9 * bound  # ... and filling it
        assert not layer.bias.detach().any()
    hidden = [network.inverse[0], network.forward_model[0]]
    assert [tuple(layer.weight.shape) for layer in hidden] == [(256, 128), (256, 64 + 7)]
    for layer in hidden:
        fan_in = layer.weight.shape[1]
        std = float(layer.weight.detach().std())
        assert std == pytest.approx(1.0 / np.sqrt(fan_in), rel=0.05)


# -- per-signal returns ----------------------------------------------------------------------


def test_each_signal_discounts_with_its_own_gamma(tmp_path: Path) -> None:
    behavior = ppo_behavior(
        hyperparameters={"lambd": 1.0},
        reward_signals={"extrinsic": {"gamma": 0.5}, "rnd": {"gamma": 0.9}},
    )
    trainer = ppo_trainer(
        "Toy",
        behavior,
        ObservationLayout.from_space(spaces.Box(-1, 1, (1,), np.float32)),
        ActionLayout.from_space(spaces.Discrete(2)),
        tmp_path,
    )
    buffer = RolloutBuffer(time_horizon=10, num_slots=1)
    no = np.zeros(1, dtype=bool)
    for t, (obs, reward) in enumerate([(0.1, 1.0), (0.2, 0.0), (0.3, 2.0)]):
        buffer.add_decision(
            [np.array([[obs]], np.float32)], None, np.zeros((1, 1)), None, np.zeros((1, 1))
        )
        ends = np.array([t == 2])
        final_values = np.array([[7.0, 4.0]], np.float32)  # values of the final observation
        buffer.add_outcome(np.array([reward], np.float32), ends, no, ~no, final_values)

    def values(observations: list[np.ndarray]) -> np.ndarray:  # extrinsic v, rnd 10 v
        v = observations[0][:, 0]
        return np.stack([v, 10 * v], axis=1)

    rollout = buffer.finish(values, [np.zeros((1, 1), np.float32)])
    rnd_rewards = np.array([[0.1], [0.2], [0.3]], np.float32)
    rewards = np.stack([rollout.rewards, rnd_rewards], axis=-1)
    advantages, returns = trainer._estimates(rollout, rewards)

    # extrinsic, gamma 0.5, no bootstrap at the terminal step: 2; 0 + 0.5 * 2; 1 + 0.5 * 1
    np.testing.assert_allclose(returns[:, 0, 0], [1.5, 1.0, 2.0], rtol=1e-6)
    # rnd, gamma 0.9, bootstrapping through the episode end from the final value 4
    np.testing.assert_allclose(returns[:, 0, 1], [3.439, 3.71, 3.9], rtol=1e-6)
    extrinsic_advantages = np.array([1.5, 1.0, 2.0]) - [0.1, 0.2, 0.3]
    rnd_advantages = np.array([3.439, 3.71, 3.9]) - [1.0, 2.0, 3.0]
    np.testing.assert_allclose(
        advantages[:, 0], (extrinsic_advantages + rnd_advantages) / 2, rtol=1e-6
    )


# -- configuration ---------------------------------------------------------------------------


def _signals(signals: dict[str, Any], trainer_type: str = "ppo") -> dict[str, Any]:
    options = parse_run_options(
        {"behaviors": {"B": {"trainer_type": trainer_type, "reward_signals": signals}}}
    )
    return options.trainer_settings_for("B").reward_signals


def test_signal_settings_follow_ml_agents(caplog: pytest.LogCaptureFixture) -> None:
    parsed = _signals({"extrinsic": {}, "rnd": {}, "curiosity": {"strength": 0.02}})
    assert isinstance(parsed["rnd"], RNDSettings) and parsed["rnd"].learning_rate == 1e-4
    curiosity = parsed["curiosity"]
    assert isinstance(curiosity, CuriositySettings)
    assert (curiosity.learning_rate, curiosity.strength, curiosity.gamma) == (3e-4, 0.02, 0.99)
    assert curiosity.network_settings.hidden_units == 128

    with caplog.at_level(logging.WARNING):
        parsed = _signals({"extrinsic": {}, "curiosity": {"encoding_size": 64}})
    assert parsed["curiosity"].network_settings.hidden_units == 64
    assert "encoding_size is deprecated" in caplog.text
    parsed = _signals(
        {"extrinsic": {}, "rnd": {"encoding_size": 64, "network_settings": {"hidden_units": 8}}}
    )
    assert parsed["rnd"].network_settings.hidden_units == 8  # network_settings wins


@pytest.mark.parametrize(
    ("signals", "trainer_type", "message"),
    [
        ({"extrinsic": {}, "gail": {}}, "ppo", "gail.demo_path: required for GAIL"),
        ({"extrinsic": {}, "rdn": {}}, "ppo", "did you mean rnd?"),
        ({"extrinsic": {}, "rnd": {"learning_rate": 0}}, "ppo", "rnd.learning_rate"),
    ],
)
def test_signal_configuration_errors(
    signals: dict[str, Any], trainer_type: str, message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        _signals(signals, trainer_type)
    assert message in str(info.value)
    if trainer_type == "sac":
        assert isinstance(info.value, UnsupportedFeatureError)


# -- training runs ---------------------------------------------------------------------------

SIGNALS = {
    "extrinsic": {"gamma": 0.99, "strength": 1.0},
    "rnd": {"gamma": 0.9, "strength": 0.5, "network_settings": {"hidden_units": 8}},
    "curiosity": {"strength": 0.1, "network_settings": {"hidden_units": 8, "normalize": True}},
}
SIGNAL_TAGS = (
    "Policy/Extrinsic Reward",
    "Policy/Rnd Reward",
    "Policy/Curiosity Reward",
    "Policy/Extrinsic Value Estimate",
    "Policy/Rnd Value Estimate",
    "Policy/Curiosity Value Estimate",
    "Losses/RND Loss",
    "Losses/Curiosity Forward Loss",
    "Losses/Curiosity Inverse Loss",
)


def test_ppo_trains_with_rnd_and_curiosity_logs_saves_and_resumes(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    first = {"behaviors": {"CartPole": ppo_behavior(max_steps=400, reward_signals=SIGNALS)}}
    run = run_train(first, "--gym-id", "CartPole-v1", "--num-envs", "2", "--seed", "2")
    scalars = tensorboard_scalars(run / "CartPole")
    for tag in SIGNAL_TAGS:
        assert tag in scalars, tag
        assert all(np.isfinite(scalars[tag])), tag
    assert max(scalars["Policy/Rnd Reward"]) > 0
    assert max(scalars["Losses/Curiosity Forward Loss"]) > 0
    assert (run / "CartPole.onnx").is_file()  # the policy alone is exported

    saved = load_checkpoint(run / "CartPole" / "checkpoint.pt")
    for name in ("rnd.target", "rnd.predictor", "curiosity.network"):
        assert f"reward_signal.{name}" in saved["modules"], name
    assert {"signal_heads.0.weight", "signal_heads.1.weight"} <= set(saved["modules"]["critic"])
    # 3 updates x 2 epochs x 4 minibatches of 32
    assert adam_steps(saved, "reward_signal.rnd.optimizer") == saved["update_count"] * 8
    assert float(saved["modules"]["reward_signal.curiosity.network"]["trained"]) == 1.0

    second = {"behaviors": {"CartPole": ppo_behavior(max_steps=800, reward_signals=SIGNALS)}}
    run_train(second, "--gym-id", "CartPole-v1", "--num-envs", "2", "--resume")
    resumed = load_checkpoint(run / "CartPole" / "checkpoint.pt")
    assert resumed["step"] == 800
    for name in ("reward_signal.rnd.optimizer", "reward_signal.curiosity.optimizer"):
        assert adam_steps(resumed, name) == resumed["update_count"] * 8, name  # continued

    # a run without the signals initializes one that has them: their parts start fresh
    frozen = ppo_behavior(max_steps=100, reward_signals=SIGNALS)
    frozen["hyperparameters"]["buffer_size"] = 1000
    plain = {"behaviors": {"CartPole": ppo_behavior(max_steps=200)}}
    run_train(plain, "--gym-id", "CartPole-v1", run_id="plain")
    capsys.readouterr()
    target = run_train(
        {"behaviors": {"CartPole": frozen}},
        "--gym-id",
        "CartPole-v1",
        "--initialize-from",
        "plain",
        run_id="target",
    )
    assert "critic has no value heads for curiosity, rnd" in capsys.readouterr().err
    assert load_checkpoint(target / "CartPole" / "checkpoint.pt")["step"] == 100


def test_curiosity_and_rnd_on_3dball_games(run_train: RunTrain) -> None:
    """Continuous actions, two real game processes (slot groups stepping on their own)."""
    behavior = ppo_behavior(
        max_steps=2400,
        summary_freq=1200,
        checkpoint_interval=10**6,
        time_horizon=20,
        reward_signals=SIGNALS,
    )
    behavior["hyperparameters"]["buffer_size"] = 240
    run = run_train({"behaviors": {"3DBall": behavior}}, "--scene", "3DBall", "--num-envs", "2",
                    "--seed", "5", "--no-graphics")  # fmt: skip
    state = load_checkpoint(run / "3DBall" / "checkpoint.pt")
    assert state["step"] == 2400 and state["update_count"] >= 5
    scalars = tensorboard_scalars(run / "3DBall")
    for tag in ("Losses/Curiosity Inverse Loss", "Losses/RND Loss", "Policy/Rnd Value Estimate"):
        assert all(np.isfinite(scalars[tag])), tag
    assert max(scalars["Policy/Curiosity Reward"]) > 0  # rewarded once the model has learned
