"""Behavioral cloning: its learning-rate annealing, its loss on hand-set policies, its batching,
and PPO and SAC runs that train with it, log it and checkpoint its optimizer."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from gymnasium import spaces
from imitation_test_support import write_demo
from trainer_test_support import RunTrain, ppo_behavior, sac_behavior, tensorboard_scalars

from trainers.common.checkpoints.files import load_checkpoint
from trainers.common.networks.models import PolicyNetwork, build_normalizer
from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.imitation import BehavioralCloning, Demonstrations
from trainers.settings import BehavioralCloningSettings, NetworkSettings

pytestmark = pytest.mark.timeout(120)

CPU = torch.device("cpu")
LAYOUT = ObservationLayout.from_space(spaces.Box(-5, 5, (2,), np.float32))
TINY = NetworkSettings(hidden_units=4, num_layers=1)


def _demos(count: int, *, discrete: np.ndarray | None = None,
           continuous: np.ndarray | None = None) -> Demonstrations:  # fmt: skip
    return Demonstrations(
        observations=[np.random.default_rng(0).normal(size=(count, 2)).astype(np.float32)],
        continuous=continuous,
        discrete=discrete,
        dones=np.zeros(count, dtype=bool),
        files=(),
    )


def _cloning(
    actions: ActionLayout,
    demos: Demonstrations,
    *,
    squash: bool = False,
    deterministic: bool = False,
    **settings: Any,
) -> BehavioralCloning:
    policy = PolicyNetwork(LAYOUT, actions, TINY, build_normalizer(LAYOUT, False), squash=squash)
    return BehavioralCloning(
        policy,
        BehavioralCloningSettings(demo_path="unused", **settings),
        demos,
        LAYOUT,
        learning_rate=3e-4,
        batch_size=4,
        num_epoch=3,
        deterministic=deterministic,
        device=CPU,
        rng=np.random.default_rng(0),
    )


def _set_head(policy: PolicyNetwork, bias: list[float], *, discrete: bool) -> None:
    head = policy.logits_head if discrete else policy.mean_head
    assert head is not None
    with torch.no_grad():
        head.weight.zero_()
        head.bias.copy_(torch.tensor(bias))


def test_learning_rate_anneals_linearly_over_steps() -> None:
    cloning = _cloning(
        ActionLayout.from_space(spaces.Discrete(3)),
        _demos(8, discrete=np.zeros((8, 1), np.int64)),
        strength=0.5,
        steps=100,
    )
    lr = cloning.optimizer.param_groups[0]
    cloning.update(0)
    assert lr["lr"] == pytest.approx(1.5e-4)  # strength x the trainer's learning rate
    cloning.update(50)
    assert lr["lr"] == pytest.approx(0.75e-4, rel=1e-5)
    before = [p.detach().clone() for p in cloning.policy.parameters()]
    assert cloning.update(100) == {"Losses/Pretraining Loss": 0.0}  # annealed: BC stops
    assert cloning.update(10**6) == {"Losses/Pretraining Loss": 0.0}
    for old, new in zip(before, cloning.policy.parameters(), strict=True):
        torch.testing.assert_close(old, new)

    constant = _cloning(
        ActionLayout.from_space(spaces.Discrete(3)),
        _demos(8, discrete=np.zeros((8, 1), np.int64)),
        strength=2.0,
    )
    constant.update(10**6)
    assert constant.optimizer.param_groups[0]["lr"] == pytest.approx(6e-4)


def test_discrete_loss_is_the_mean_cross_entropy_over_branches_and_steps() -> None:
    cloning = _cloning(ActionLayout.from_space(spaces.MultiDiscrete([3, 2])), _demos(1))
    _set_head(cloning.policy, [1.0, 0.0, 0.0, 0.0, 2.0], discrete=True)
    observations = [torch.zeros((2, 2))]
    expert = torch.tensor([[0, 1], [2, 0]])
    branch_a = np.log(np.exp([1.0, 0.0, 0.0]).sum()) - np.array([1.0, 0.0, 0.0])
    branch_b = np.log(np.exp([0.0, 2.0]).sum()) - np.array([0.0, 2.0])
    expected = np.mean([branch_a[0], branch_a[2], branch_b[1], branch_b[0]])
    loss = cloning.loss(observations, None, expert)
    assert float(loss.detach()) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize(("squash", "action"), [(False, 0.3 / 3.0), (True, math.tanh(0.3))])
def test_continuous_loss_is_the_squared_error_of_the_environment_action(
    squash: bool, action: float
) -> None:
    cloning = _cloning(
        ActionLayout.from_space(spaces.Box(-1, 1, (1,), np.float32)),
        _demos(1),
        squash=squash,
        deterministic=True,
    )
    _set_head(cloning.policy, [0.3], discrete=False)
    loss = cloning.loss([torch.zeros((2, 2))], None, None)
    assert float(loss) == 0.0  # nothing demonstrated, nothing learned
    demonstrated = torch.tensor([[0.4], [-0.2]])
    loss = cloning.loss([torch.zeros((2, 2))], demonstrated, None)
    expected = np.mean([(action - 0.4) ** 2, (action + 0.2) ** 2])
    assert float(loss.detach()) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize(
    ("settings", "steps"),
    [({}, 3 * 2), ({"samples_per_update": 4}, 3 * 1), ({"batch_size": 2, "num_epoch": 1}, 5)],
)
def test_batches_per_update(settings: dict[str, Any], steps: int) -> None:
    """10 demonstrated steps, trainer batch 4 and BC's default 3 epochs unless set."""
    cloning = _cloning(
        ActionLayout.from_space(spaces.Discrete(3)),
        _demos(10, discrete=np.zeros((10, 1), np.int64)),
        **settings,
    )
    stats = cloning.update(0)
    assert stats["Losses/Pretraining Loss"] > 0
    state = cloning.optimizer.state_dict()["state"]
    assert {float(s["step"]) for s in state.values()} == {float(steps)}


def test_cloning_copies_the_demonstrated_choice() -> None:
    torch.manual_seed(0)
    cloning = _cloning(
        ActionLayout.from_space(spaces.Discrete(3)),
        _demos(16, discrete=np.full((16, 1), 2, np.int64)),
        strength=30.0,
    )
    for _ in range(10):
        cloning.update(0)
    dist = cloning.policy([torch.as_tensor(cloning.demonstrations.observations[0])])
    assert float(dist.branch_log_probs()[0][:, 2].exp().mean().detach()) > 0.9


# -- training runs ---------------------------------------------------------------------------


def _cartpole_demo(path: Path) -> Path:
    """CartPole-shaped demonstrations: push towards the side the pole leans to."""
    rng = np.random.default_rng(1)
    observations = rng.normal(scale=0.05, size=(64, 4))
    choices = (observations[:, 2:3] > 0).astype(np.int64)
    return write_demo(path, [observations], discrete=choices, branches=[2])


@pytest.mark.parametrize("behavior", [ppo_behavior, sac_behavior])
def test_trainers_clone_log_and_checkpoint(
    run_train: RunTrain, tmp_path: Path, behavior: Any
) -> None:
    demo = _cartpole_demo(tmp_path / "cartpole.demo")
    config = behavior(
        max_steps=400,
        behavioral_cloning={"demo_path": str(demo), "strength": 0.5, "steps": 300},
    )
    run = run_train({"behaviors": {"CartPole": config}}, "--gym-id", "CartPole-v1")
    losses = tensorboard_scalars(run / "CartPole")["Losses/Pretraining Loss"]
    assert losses and all(np.isfinite(losses)) and max(losses) > 0
    state = load_checkpoint(run / "CartPole" / "checkpoint.pt")
    assert "behavioral_cloning.optimizer" in state["optimizers"]


def test_cloning_a_recurrent_policy_is_refused(
    run_train: RunTrain, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = _cartpole_demo(tmp_path / "cartpole.demo")
    config = ppo_behavior(
        network_settings={"memory": {"memory_size": 16, "sequence_length": 8}},
        behavioral_cloning={"demo_path": str(demo)},
    )
    run_train({"behaviors": {"CartPole": config}}, "--gym-id", "CartPole-v1", expect=2)
    assert "behaviors.CartPole.behavioral_cloning: behavioral cloning of a recurrent" in (
        capsys.readouterr().err
    )
