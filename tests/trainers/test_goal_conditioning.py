"""Goal-signal observations condition the networks (``goal_conditioning_type: hyper``).

The GridWorld game (a real headless-player process over gRPC on 127.0.0.1) names its goal signal
in ``metadata["goal_signal_keys"]``; the trainers' layout marks that entry, and the networks feed
it to a hypernetwork as well as to the features (as ML-Agents does). The ONNX model keeps it as
an ordinary input.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium
import numpy as np
import onnxruntime
import pytest
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from trainers.common.checkpoints.onnx_export import export_policy
from trainers.common.networks.models import (
    HyperLinear,
    PolicyNetwork,
    ValueNetwork,
    build_normalizer,
)
from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.env_manager import EnvManager
from trainers.settings import NetworkSettings
from unity_gym.pettingzoo import parallel_env

pytestmark = pytest.mark.timeout(120)

SPACE = spaces.Dict(  # Gymnasium sorts the keys: obs_0 is "Goal", obs_1 "Position"
    {
        "Goal": spaces.Box(-np.inf, np.inf, (2,), np.float32),
        "Position": spaces.Box(-np.inf, np.inf, (6,), np.float32),
    }
)
ACTIONS = spaces.Discrete(3)


def _networks(conditioning: str) -> tuple[ObservationLayout, PolicyNetwork, ValueNetwork]:
    layout = ObservationLayout.from_space(SPACE, goal_keys=("Goal",))
    settings = NetworkSettings(hidden_units=16, num_layers=2, goal_conditioning_type=conditioning)  # type: ignore[arg-type]
    normalizer = build_normalizer(layout, False)
    policy = PolicyNetwork(layout, ActionLayout.from_space(ACTIONS), settings, normalizer,
                           squash=False)  # fmt: skip
    return layout, policy, ValueNetwork(layout, settings, normalizer)


def test_goal_entries_feed_a_hypernetwork_with_hyper_conditioning() -> None:
    layout, policy, critic = _networks("hyper")
    assert [(entry.name, entry.goal) for entry in layout.entries] == [
        ("Goal", True),
        ("Position", False),
    ]
    assert policy.encoder.output_size == 8 and policy.encoder.goal_size == 2
    assert isinstance(policy.body.conditional, HyperLinear)
    assert policy.body.conditional.in_size == 16  # the last of two layers is generated
    assert isinstance(critic.body.conditional, HyperLinear)
    position = torch.randn(4, 6)
    values = [critic([torch.tensor([[1.0, 0.0]] * 4), position]),
              critic([torch.tensor([[0.0, 1.0]] * 4), position])]  # fmt: skip
    assert not torch.allclose(values[0], values[1])  # the goal changes the answer


def test_the_hypernetwork_sees_the_normalized_goal_with_normalize() -> None:
    layout = ObservationLayout.from_space(SPACE, goal_keys=("Goal",))
    settings = NetworkSettings(hidden_units=16, num_layers=1, normalize=True)
    normalizer = build_normalizer(layout, True)
    policy = PolicyNetwork(layout, ActionLayout.from_space(ACTIONS), settings, normalizer,
                           squash=False)  # fmt: skip
    goal = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]])
    observations = [goal, torch.randn(4, 6)]
    normalizer.update(observations)  # goal means 0.75 / 0.25: normalizing changes the values
    features, conditioned_on = policy.encoder(observations)
    normalized_goal = normalizer(observations)[0]
    assert not torch.allclose(normalized_goal, goal)
    assert conditioned_on is not None
    torch.testing.assert_close(conditioned_on, normalized_goal)
    torch.testing.assert_close(features[:, :2], normalized_goal)  # also a feature


def test_without_conditioning_the_goal_is_one_more_feature() -> None:
    _, policy, _ = _networks("none")
    assert policy.encoder.output_size == 8 and policy.encoder.goal_size == 0
    assert policy.body.conditional is None


def test_goal_conditioned_policy_exports_to_onnx(tmp_path: Path) -> None:
    layout, policy, _ = _networks("hyper")
    path = tmp_path / "policy.onnx"
    export_policy(policy, layout, path)
    session = onnxruntime.InferenceSession(str(path))
    assert [i.name for i in session.get_inputs()] == ["obs_0", "obs_1", "action_masks"]
    rng = np.random.default_rng(3)
    position = rng.standard_normal((5, 6)).astype(np.float32)
    goal = np.eye(2, dtype=np.float32)[rng.integers(0, 2, 5)]
    masks = np.ones((5, 3), np.float32)
    (exported,) = session.run(
        ["deterministic_discrete_actions"],
        {"obs_0": goal, "obs_1": position, "action_masks": masks},
    )
    with torch.no_grad():
        _, expected = policy([torch.from_numpy(goal), torch.from_numpy(position)]).deterministic()
    assert expected is not None
    np.testing.assert_array_equal(exported.reshape(-1), expected.numpy().reshape(-1))


def test_gridworld_names_its_goal_signal() -> None:
    env = gymnasium.make_vec(
        "unity_gym:Unity-v0",
        num_envs=None,  # type: ignore[arg-type]
        num_processes=1,
        scene="GridWorld",
        autoreset_mode=AutoresetMode.SAME_STEP,
        backend="inprocess",
        timeout_wait=30,
    )
    manager = EnvManager.for_vector_env(env, "GridWorld")
    try:
        assert env.metadata["goal_signal_keys"] == ("VectorSensor",)
        entries = manager.behaviors["GridWorld"].observation_layout.entries
        assert [(entry.name, entry.goal) for entry in entries] == [
            ("CameraSensor", False),
            ("VectorSensor", True),
        ]
    finally:
        manager.close()


def test_pettingzoo_path_marks_the_goal_signal_too() -> None:
    env = parallel_env(scene="GridWorld", timeout_wait=30)
    try:
        assert env.metadata["goal_signal_keys"] == {"GridWorld?team=0": ("VectorSensor",)}
        manager = EnvManager.for_parallel_envs([env])
    except BaseException:
        env.close()
        raise
    try:
        entries = manager.behaviors["GridWorld"].observation_layout.entries
        assert [(entry.name, entry.goal) for entry in entries] == [
            ("CameraSensor", False),
            ("VectorSensor", True),
        ]
    finally:
        manager.close()
