"""The five real Unity recordings parse with exactly the contents listed in their README."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from unity_gym.base_env import ActionSpec, DimensionProperty, ObservationType
from unity_gym.demo import Demonstration, DemonstrationStep, read_demonstration
from unity_gym.protocol.communicator_objects.agent_info_action_pair_pb2 import (
    AgentInfoActionPairProto,
)

pytestmark = pytest.mark.timeout(120)

# file: (behavior, meta name, steps, episodes, mean reward, obs shapes, action spec, done count)
EXPECTED = {
    "ExpertBasic.demo": (
        "BasicLearning", "ExpertBasic", 73, 11, 0.8436, [(20,)], ActionSpec(0, (3,)), 10,
    ),
    "ExpertPushBlock.demo": (
        "PushBlock", "ExpertPush", 2558, 96, 4.9211, [(105,), (105,)], ActionSpec(0, (7,)), 95,
    ),
    "ExpertGridWorld.demo": (
        "GridWorld?team=0", "ExpertGrid", 53, 14, 0.91, [(64, 84, 3)], ActionSpec(0, (5,)), 13,
    ),
    "test.demo": (
        "3DBall?team=0", "3DBall", 2144, 22, 9.7002, [(8,)], ActionSpec(2, ()), 21,
    ),
    "testhybridvis.demo": (
        "VisualFoodCollector?team=0", "testhybridvis", 25, 1, 4.0, [(3, 84, 84), (1,)],
        ActionSpec(3, (2,)), 0,
    ),
}  # fmt: skip
_cache: dict[str, Demonstration] = {}


def load(demos_dir: Path, name: str) -> Demonstration:
    if name not in _cache:
        _cache[name] = read_demonstration(demos_dir / name)
    return _cache[name]


def raw_records(path: Path, count: int) -> list[AgentInfoActionPairProto]:
    """The first ``count`` records, read with a minimal independent walk of the layout."""
    data = path.read_bytes()
    offset, records = 33, []
    for index in range(count + 1):
        size, shift = 0, 0
        while True:
            byte = data[offset]
            offset += 1
            size |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        if index > 0:  # index 0 is the brain parameters
            record = AgentInfoActionPairProto()
            record.ParseFromString(data[offset : offset + size])
            records.append(record)
        offset += size
    return records


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_meta_behavior_and_specs(demos_dir: Path, name: str) -> None:
    behavior, meta_name, steps, episodes, reward, shapes, action_spec, n_done = EXPECTED[name]
    demo = load(demos_dir, name)
    assert demo.behavior_name == behavior
    assert demo.meta.name == meta_name
    assert demo.meta.api_version == 1
    assert (demo.meta.number_steps, demo.meta.number_episodes) == (steps, episodes)
    assert demo.meta.mean_reward == pytest.approx(reward, abs=1e-4)
    assert len(demo) == len(demo.steps) == steps
    assert [s.shape for s in demo.behavior_spec.observation_specs] == shapes
    assert demo.behavior_spec.action_spec == action_spec
    assert int(demo.dones().sum()) == n_done
    for index, shape in enumerate(shapes):
        stacked = demo.observations(index)
        assert stacked.shape == (steps, *shape) and stacked.dtype == np.float32
    assert demo.continuous_actions().shape == (steps, action_spec.continuous_size)
    assert demo.discrete_actions().shape == (steps, len(action_spec.discrete_branches))
    assert demo.rewards().shape == demo.agent_ids().shape == (steps,)
    assert all(isinstance(s, DemonstrationStep) for s in demo.steps)


def test_expert_basic_deprecated_discrete_actions(demos_dir: Path) -> None:
    demo = load(demos_dir, "ExpertBasic.demo")
    records = raw_records(demos_dir / "ExpertBasic.demo", 73)
    recorded = [list(r.action_info.vector_actions_deprecated) for r in records]
    with_action = [s for s in demo.steps if s.has_action]
    assert len(with_action) == sum(1 for r in recorded if r) == 72
    for step, values in zip(demo.steps, recorded, strict=True):
        if values:
            assert step.discrete_actions.tolist() == [int(values[0])]
        else:
            assert step.discrete_actions.tolist() == [0] and not step.has_action
    assert set(demo.discrete_actions()[:, 0].tolist()) <= {0, 1, 2}
    assert demo.steps[0].observations[0].tolist() == list(
        records[0].agent_info.observations[0].float_data.data
    )


def test_push_block_two_vector_observations(demos_dir: Path) -> None:
    demo = load(demos_dir, "ExpertPushBlock.demo")
    assert len(set(demo.agent_ids().tolist())) == 1
    assert not np.array_equal(demo.observations(0), demo.observations(1))
    assert set(np.unique(demo.discrete_actions()).tolist()) <= set(range(7))
    assert demo.interrupted().sum() == 0
    # The file ends with the 24-byte undelimited meta copy, which must not become a record.
    assert (demos_dir / "ExpertPushBlock.demo").stat().st_size == 2284551


def test_grid_world_legacy_hwc_masks_and_ids(demos_dir: Path) -> None:
    demo = load(demos_dir, "ExpertGridWorld.demo")
    spec = demo.behavior_spec.observation_specs[0]
    assert spec.shape == (64, 84, 3)
    assert spec.dimension_property == (DimensionProperty.UNSPECIFIED,) * 3
    images = demo.observations(0)
    assert images.min() >= 0.0 and images.max() <= 1.0
    masked = [s for s in demo.steps if s.action_mask is not None]
    assert len(masked) == 35
    assert all(s.action_mask is not None and s.action_mask.shape == (5,) for s in masked)
    masks = demo.action_masks()
    assert masks.shape == (53, 5) and masks.dtype == bool
    assert masks.any(axis=1).sum() == sum(
        bool(s.action_mask.any()) for s in masked if s.action_mask is not None
    )
    assert len(set(demo.agent_ids().tolist())) == 14


def test_3dball_continuous_and_interrupted(demos_dir: Path) -> None:
    demo = load(demos_dir, "test.demo")
    dones, interrupted = demo.dones(), demo.interrupted()
    assert int((dones & interrupted).sum()) == 21
    assert not (interrupted & ~dones).any()
    assert len(set(demo.agent_ids().tolist())) == 22
    records = raw_records(demos_dir / "test.demo", 5)
    for step, record in zip(demo.steps, records, strict=False):
        expected = np.asarray(record.action_info.vector_actions_deprecated, dtype=np.float32)
        np.testing.assert_array_equal(step.continuous_actions, expected)
        assert step.discrete_actions.shape == (0,)
    assert demo.action_masks().shape == (2144, 0)


def test_hybrid_visual_png_observations(demos_dir: Path) -> None:
    demo = load(demos_dir, "testhybridvis.demo")
    camera, vector = demo.behavior_spec.observation_specs
    assert (camera.name, vector.name) == ("CameraSensor", "VectorSensor_size1")
    assert camera.dimension_property == (
        DimensionProperty.NONE,
        DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
        DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
    )
    assert vector.dimension_property == (DimensionProperty.NONE,)
    assert camera.observation_type == ObservationType.DEFAULT
    records = raw_records(demos_dir / "testhybridvis.demo", 25)
    for step, record in zip(demo.steps, records, strict=True):
        png = record.agent_info.observations[0].compressed_data
        with Image.open(io.BytesIO(png)) as image:
            assert image.mode == "RGB"
            expected = np.asarray(image, dtype=np.float32).transpose(2, 0, 1) / 255.0
        np.testing.assert_allclose(step.observations[0], expected, atol=1e-6)
        assert step.continuous_actions.tolist() == pytest.approx(
            list(record.action_info.continuous_actions)
        )
        assert step.discrete_actions.tolist() == list(record.action_info.discrete_actions)
    images = demo.observations(0)
    assert images.shape == (25, 3, 84, 84)
    assert 0.0 <= images.min() < images.max() <= 1.0
    assert set(demo.discrete_actions()[:, 0].tolist()) <= {0, 1}


def test_group_fields_and_observation_index_errors(demos_dir: Path) -> None:
    demo = load(demos_dir, "ExpertBasic.demo")
    assert demo.group_ids().tolist() == [0] * 73
    assert demo.group_rewards().tolist() == [0.0] * 73
    with pytest.raises(IndexError, match="has 1 observation"):
        demo.observations(1)
