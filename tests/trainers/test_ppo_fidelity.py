"""PPO details that follow ML-Agents: per-column likelihood ratios, sampling of discrete branches
(masked actions never drawn; ``Multinomial`` in exported models), when the normalizer learns."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import gymnasium
import numpy as np
import onnx
import pytest
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from trainer_test_support import ppo_behavior, ppo_trainer, random_outcome

from trainers.common.checkpoints.onnx_export import export_policy
from trainers.common.networks.distributions import ActionDistribution, mask_logits
from trainers.common.networks.models import PolicyNetwork, build_normalizer
from trainers.common.networks.normalizer import RunningNormalizer
from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.contract import BehaviorStep
from trainers.env_manager import EnvManager
from trainers.settings import NetworkSettings


def test_log_probs_have_one_column_per_dimension_and_branch() -> None:
    mean = torch.tensor([[0.5, -1.0], [0.0, 2.0]])
    log_std = torch.tensor([[-0.3, 0.4]])
    logits = torch.tensor([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]])
    dist = ActionDistribution(mean, log_std, [logits], squash=False)
    continuous = torch.tensor([[1.0, 0.0], [-0.5, 2.5]])
    discrete = torch.tensor([[1], [2]])

    columns = dist.log_probs(continuous, discrete)

    gaussian = torch.distributions.Normal(mean, torch.exp(log_std)).log_prob(continuous)
    categorical = torch.distributions.Categorical(logits=logits).log_prob(discrete[:, 0])
    assert columns.shape == (2, 3)
    torch.testing.assert_close(columns[:, :2], gaussian)
    torch.testing.assert_close(columns[:, 2], categorical)


def test_log_probs_of_masked_branches_renormalize_over_allowed_actions() -> None:
    logits = torch.tensor([[0.0, 0.0, 5.0]])
    allowed = torch.tensor([[1.0, 1.0, 0.0]])
    dist = ActionDistribution(None, None, [mask_logits(logits, allowed)], squash=False)
    column = dist.log_probs(None, torch.tensor([[0]]))
    assert column.shape == (1, 1)
    assert math.isclose(float(column), math.log(0.5), rel_tol=1e-6)


BRANCH_LAYOUTS = {"equal": (3, 3, 3), "unequal": (3, 2, 4), "single": (5,)}


def _masked_branches(sizes: tuple[int, ...], rows: int) -> list[torch.Tensor]:
    """Masked logits per branch, the same on every row: the first action masked in branch 0,
    the last in branch 1, a middle one in branch 2 (a single branch: its first and last)."""
    generator = torch.Generator().manual_seed(4)
    branches = []
    for index, size in enumerate(sizes):
        logits = torch.randn(1, size, generator=generator) * 2.0
        allowed = torch.ones(1, size)
        if len(sizes) == 1:
            allowed[0, [0, -1]] = 0.0
        else:
            allowed[0, [0, -1, size // 2][index]] = 0.0
        branches.append(mask_logits(logits, allowed).expand(rows, size))
    return branches


@pytest.mark.parametrize("layout", list(BRANCH_LAYOUTS))
def test_sampled_branches_follow_their_probabilities_and_skip_masked_actions(layout: str) -> None:
    rows = 40_000
    branches = _masked_branches(BRANCH_LAYOUTS[layout], rows)
    torch.manual_seed(0)
    _, discrete = ActionDistribution(None, None, branches, squash=False).sample()
    assert discrete is not None and discrete.shape == (rows, len(branches))
    assert discrete.dtype == torch.int64
    for index, logits in enumerate(branches):
        probabilities = torch.softmax(logits[0], dim=0)
        counts = torch.bincount(discrete[:, index], minlength=len(probabilities))
        assert len(counts) == len(probabilities)  # no index past the branch
        assert torch.all(counts[probabilities == 0.0] == 0)  # masked: never sampled
        # binomial standard deviation <= 0.0025 at 40k rows: 6 of them
        torch.testing.assert_close(counts / rows, probabilities, rtol=0.0, atol=0.015)


def test_exported_policies_sample_discrete_actions_with_onnx_multinomial(tmp_path: Path) -> None:
    """Unity's inference runs ML-Agents' graphs, which draw discrete actions with
    ``Multinomial``; the faster sampling used while training stays out of the ONNX file."""
    layout = ObservationLayout.from_space(spaces.Box(-1.0, 1.0, (4,), np.float32))
    actions = ActionLayout.from_space(spaces.MultiDiscrete([3, 3, 3]))
    policy = PolicyNetwork(
        layout, actions, NetworkSettings(hidden_units=8, num_layers=1),
        build_normalizer(layout, False), squash=False,
    )  # fmt: skip
    path = tmp_path / "policy.onnx"
    export_policy(policy, layout, path)
    operators = {node.op_type for node in onnx.load(str(path)).graph.node}
    assert "Multinomial" in operators
    assert "CumSum" not in operators and "RandomUniformLike" not in operators


@pytest.mark.parametrize("layout", list(BRANCH_LAYOUTS))
def test_log_probs_and_entropy_of_several_branches_match_torch_categoricals(layout: str) -> None:
    generator = torch.Generator().manual_seed(5)
    branches = [torch.randn(6, size, generator=generator) for size in BRANCH_LAYOUTS[layout]]
    actions = torch.stack(
        [torch.randint(0, len(b[0]), (6,), generator=generator) for b in branches], dim=1
    )
    dist = ActionDistribution(None, None, branches, squash=False)
    categoricals = [torch.distributions.Categorical(logits=b) for b in branches]
    expected = torch.stack([c.log_prob(actions[:, i]) for i, c in enumerate(categoricals)], 1)
    torch.testing.assert_close(dist.log_probs(None, actions), expected)
    entropy = sum(c.entropy() for c in categoricals)
    assert isinstance(entropy, torch.Tensor)
    torch.testing.assert_close(dist.entropy(), entropy)


def test_entropy_counts_the_continuous_part_once_as_its_mean_over_dimensions() -> None:
    """ML-Agents' ``ActionModel.evaluate`` sums one column for the Gaussian (its per-dimension
    entropies averaged) and one per discrete branch; a sum over the Gaussian's dimensions made
    the bonus pull 3 times harder on Tennis' standard deviations than ``mlagents-learn``'s."""
    mean = torch.zeros(2, 3)
    log_std = torch.tensor([[-0.5, 0.0, 0.7]])
    logits = torch.tensor([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]])
    per_dimension = torch.distributions.Normal(mean, torch.exp(log_std)).entropy()
    continuous = ActionDistribution(mean, log_std, [], squash=False).entropy()
    torch.testing.assert_close(continuous, per_dimension.mean(dim=1))
    # at a unit standard deviation: 0.5 * log(2 pi e) = 1.4189, the value mlagents-learn logs
    # as Policy/Entropy for a fresh continuous policy whatever its number of actions
    fresh = ActionDistribution(torch.zeros(1, 39), torch.zeros(1, 39), [], squash=False)
    assert math.isclose(float(fresh.entropy()), 0.5 * math.log(2 * math.pi * math.e), rel_tol=1e-6)
    hybrid = ActionDistribution(mean, log_std, [logits], squash=False).entropy()
    categorical = torch.distributions.Categorical(logits=logits).entropy()
    torch.testing.assert_close(hybrid, per_dimension.mean(dim=1) + categorical)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_normalizer_absorbs_the_rollout_before_the_update(
    tmp_path: Path, mode: AutoresetMode
) -> None:
    """Countdown's valid observations cycle 0, 1, 2 (mean 1, variance 2/3); the steps whose
    action a next-step autoreset ignores must not count."""
    env = gymnasium.make_vec(
        "trainer_toy_envs:Countdown-v0",
        num_envs=2,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": mode},
    )
    manager = EnvManager.for_vector_env(env, "Countdown")
    try:
        slots = manager.behaviors["Countdown"]
        trainer = ppo_trainer(
            "Countdown",
            ppo_behavior(hyperparameters={"buffer_size": 12, "batch_size": 4}),
            slots.observation_layout,
            slots.action_layout,
            tmp_path,
        )
        step = manager.reset(seed=0)["Countdown"]
        while not trainer.update_due:
            decision = trainer.decide(step)
            step = manager.step({"Countdown": decision})["Countdown"]
            trainer.observe(step)
        module = trainer.normalizer.normalizers[0]
        assert isinstance(module, RunningNormalizer)
        assert float(module.count) == 0.0

        job = trainer._take_update_job()

        # absorbed before the update runs (and before the critic valued the rollout); the
        # rollout is the whole trajectories (Countdown's: 3 steps) once they hold more than
        # buffer_size = 12 steps, as ML-Agents' update buffer: 18
        assert float(module.count) == 18.0
        np.testing.assert_allclose(module.mean.numpy(), [1.0], rtol=1e-6)
        np.testing.assert_allclose(module.variance.numpy(), [2.0 / 3.0], rtol=1e-5)
        job()
        assert float(module.count) == 18.0  # not absorbed twice
    finally:
        manager.close()


def test_one_update_fits_the_critic_to_the_returns_beyond_epsilon(tmp_path: Path) -> None:
    """ML-Agents 1.1.0's value loss is the squared error against the returns (its clipping is
    around the returns: ``returns_value_loss``), so one update may move the values by far more
    than ``epsilon``. Countdown's 3-step episodes pay 1, 2, 3 (the observation is the step
    index): with ``lambd`` 1 the returns are 5.92, 4.97 and 3, from a critic that starts near
    0; clipped around the old values (``epsilon`` 0.2) they could not be reached in one
    update."""
    env = gymnasium.make_vec("trainer_toy_envs:Countdown-v0", num_envs=2, vectorization_mode="sync")
    manager = EnvManager.for_vector_env(env, "Countdown")
    try:
        slots = manager.behaviors["Countdown"]
        behavior = ppo_behavior(
            hyperparameters={
                "buffer_size": 24,
                "batch_size": 8,
                "num_epoch": 30,
                "learning_rate": 0.01,
                "learning_rate_schedule": "constant",
                "epsilon": 0.2,
                "epsilon_schedule": "constant",
                "lambd": 1.0,
            },
            network_settings={"normalize": False},
        )
        trainer = ppo_trainer(
            "Countdown", behavior, slots.observation_layout, slots.action_layout, tmp_path
        )
        step = manager.reset(seed=0)["Countdown"]
        while not trainer.update_due:
            decision = trainer.decide(step)
            step = manager.step({"Countdown": decision})["Countdown"]
            trainer.observe(step)
        completed = [buffer.num_valid for buffer in trainer.buffers.values()]
        trainer._take_update_job()()
        assert trainer.update_count == 1 and sum(completed) > 24
        with torch.no_grad():
            values = trainer.critic(trainer.tensors([np.array([[0.0], [1.0], [2.0]], np.float32)]))
        returns = np.array([1.0 + 0.99 * 2.0 + 0.99**2 * 3.0, 2.0 + 0.99 * 3.0, 3.0])
        fitted = values.reshape(-1).numpy()
        # every value moved more than ten times epsilon from where it started, towards the
        # returns (their mean: 4.63)
        assert fitted.min() > 2.0 and abs(fitted.mean() - returns.mean()) < 0.6, fitted
    finally:
        manager.close()


def test_an_update_in_the_last_loop_leaves_a_group_whose_outcome_was_not_recorded(
    tmp_path: Path,
) -> None:
    """Once ``max_steps`` is reached the controller records no more outcomes, so in the run's
    last loop another game's decision may have no outcome; the update at ``max_steps``
    (ML-Agents takes one when ``step <= max_steps``) closes the other groups and leaves that
    one's steps as they are (seen once in a Tennis run of two games)."""
    trainer = ppo_trainer(
        "Toy",
        ppo_behavior(hyperparameters={"buffer_size": 8, "batch_size": 4}, time_horizon=2),
        ObservationLayout.from_space(spaces.Box(-1.0, 1.0, (3,), np.float32)),
        ActionLayout.from_space(spaces.Discrete(2)),
        tmp_path,
    )
    rng = np.random.default_rng(0)
    no = np.zeros(2, bool)
    current = {}
    for group in (0, 1):
        first = BehaviorStep.first([rng.uniform(-1, 1, (2, 3)).astype(np.float32)], None)
        current[group] = replace(first, group=group)
        trainer.observe(current[group])
    for t in range(4):
        for group in (0, 1):
            trainer.decide(current[group])
            if t == 3 and group == 1:
                continue  # its outcome came in after max_steps: not recorded
            current[group] = replace(random_outcome(rng, no, no, 3), group=group)
            trainer.observe(current[group])
    # completed trajectories (time_horizon 2): group 0 all 8 steps, group 1 4 of its 6, and a
    # decision awaiting its outcome
    assert trainer.buffers[1].awaiting_outcome and trainer._update_size() == 12
    assert trainer.update_due
    trainer._take_update_job()()
    assert trainer.update_count == 1
    assert trainer.buffers[0].num_steps == 0 and trainer.buffers[0].num_valid == 0
    assert trainer.buffers[1].awaiting_outcome and trainer.buffers[1].num_valid == 4
