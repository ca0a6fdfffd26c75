"""Spaces and conversions of ``unity_gym.spaces`` (no game needed)."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

from unity_gym.base_env import ActionSpec, DimensionProperty, ObservationSpec, ObservationType
from unity_gym.exceptions import UnityActionException, UnityObservationException
from unity_gym.spaces import (
    FLAT_VECTOR_KEY,
    ActionAdapter,
    ObservationAdapter,
    check_sb3_action_space,
    is_visual,
)

pytestmark = pytest.mark.timeout(30)


def _spec(name: str, *shape: int) -> ObservationSpec:
    props = (DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,) * 2 if len(shape) == 3 else ()
    return ObservationSpec(
        shape=tuple(shape),
        dimension_property=(DimensionProperty.NONE, *props)[: len(shape)],
        observation_type=ObservationType.DEFAULT,
        name=name,
    )


def _batch(rng: np.random.Generator, n: int, *specs: ObservationSpec) -> list[np.ndarray]:
    return [rng.random((n, *s.shape), dtype=np.float32) for s in specs]


RNG = np.random.default_rng(7)


def test_single_vector_sensor_is_a_float32_box_and_copies() -> None:
    adapter = ObservationAdapter([_spec("VectorSensor_size8", 8)])
    assert adapter.space == spaces.Box(-np.inf, np.inf, (8,), np.float32)
    assert adapter.keys == ()
    batch = _batch(RNG, 3, _spec("v", 8))
    obs = adapter.from_unity(batch, 2)
    np.testing.assert_array_equal(obs, batch[0][2])
    assert obs.dtype == np.float32 and not np.shares_memory(obs, batch[0])
    assert adapter.from_unity(batch, 2) is not obs


def test_several_sensors_give_a_dict_with_unique_keys() -> None:
    specs = [_spec("Ray", 4), _spec("Ray", 2), _spec("Goal", 3)]
    adapter = ObservationAdapter(specs)
    assert isinstance(adapter.space, spaces.Dict)
    assert set(adapter.space.spaces) == {"Ray", "Ray_2", "Goal"}
    batch = _batch(RNG, 2, *specs)
    obs = adapter.from_unity(batch, 1)
    np.testing.assert_array_equal(obs["Ray_2"], batch[1][1])
    np.testing.assert_array_equal(obs["Goal"], batch[2][1])
    assert adapter.space.contains(obs)


def test_camera_becomes_uint8_hwc_by_default_and_float_chw_on_request() -> None:
    camera = _spec("Cam", 3, 4, 5)
    assert is_visual(camera)
    image = RNG.random((1, 3, 4, 5), dtype=np.float32)
    hwc = ObservationAdapter([camera])
    assert hwc.space == spaces.Box(0, 255, (4, 5, 3), np.uint8)
    frame = hwc.from_unity([image], 0)
    assert frame.dtype == np.uint8 and frame.shape == (4, 5, 3)
    assert frame[2, 3, 1] == round(float(image[0, 1, 2, 3]) * 255)
    chw = ObservationAdapter([camera], visual_obs="float_chw")
    assert chw.space == spaces.Box(0.0, 1.0, (3, 4, 5), np.float32)
    np.testing.assert_array_equal(chw.from_unity([image], 0), image[0])


def test_flatten_obs_concatenates_vectors_and_keeps_cameras() -> None:
    specs = [_spec("a", 2), _spec("Cam", 1, 2, 2), _spec("b", 3)]
    adapter = ObservationAdapter(specs, flatten_obs=True)
    assert isinstance(adapter.space, spaces.Dict)
    assert set(adapter.space.spaces) == {FLAT_VECTOR_KEY, "Cam"}
    batch = _batch(RNG, 2, *specs)
    obs = adapter.from_unity(batch, 0)
    np.testing.assert_array_equal(obs[FLAT_VECTOR_KEY], np.concatenate([batch[0][0], batch[2][0]]))
    vectors_only = ObservationAdapter([_spec("a", 2), _spec("b", 3)], flatten_obs=True)
    assert vectors_only.space == spaces.Box(-np.inf, np.inf, (5,), np.float32)


def test_batch_conversion_matches_row_conversion() -> None:
    specs = [_spec("a", 2), _spec("Cam", 3, 2, 2)]
    adapter = ObservationAdapter(specs)
    batch = _batch(RNG, 4, *specs)
    stacked = adapter.batch_from_unity(batch, [3, 1])
    for i, row in enumerate([3, 1]):
        single = adapter.from_unity(batch, row)
        for key in single:
            np.testing.assert_array_equal(stacked[key][i], single[key])


def test_bad_inputs_are_explained() -> None:
    with pytest.raises(ValueError, match="visual_obs"):
        ObservationAdapter([_spec("a", 2)], visual_obs="rgb")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no observation sensor"):
        ObservationAdapter([])
    with pytest.raises(UnityObservationException, match="declares 1 sensors"):
        ObservationAdapter([_spec("a", 2)]).from_unity([np.zeros((1, 2))] * 2, 0)


def test_action_spaces_by_kind() -> None:
    assert ActionAdapter(ActionSpec(2, ())).space == spaces.Box(-1, 1, (2,), np.float32)
    assert ActionAdapter(ActionSpec(0, (3,))).space == spaces.Discrete(3)
    assert ActionAdapter(ActionSpec(0, (3, 2))).space == spaces.MultiDiscrete([3, 2])
    hybrid = ActionAdapter(ActionSpec(2, (3, 2)))
    assert hybrid.is_hybrid
    assert hybrid.space == spaces.Dict(
        {
            "continuous": spaces.Box(-1, 1, (2,), np.float32),
            "discrete": spaces.MultiDiscrete([3, 2]),
        }
    )


@pytest.mark.parametrize(
    ("spec", "action", "continuous", "discrete"),
    [
        (ActionSpec(2, ()), np.array([0.5, -0.25]), [[0.5, -0.25]], np.zeros((1, 0))),
        (ActionSpec(0, (3,)), np.int64(2), np.zeros((1, 0)), [[2]]),
        (ActionSpec(0, (3,)), np.array([1]), np.zeros((1, 0)), [[1]]),
        (ActionSpec(0, (3, 2)), [2, 1], np.zeros((1, 0)), [[2, 1]]),
        (ActionSpec(1, (2,)), {"continuous": [0.1], "discrete": [1]}, [[0.1]], [[1]]),
    ],
)
def test_actions_convert_to_one_row(
    spec: ActionSpec, action: object, continuous: object, discrete: object
) -> None:
    adapter = ActionAdapter(spec)
    assert adapter.space.contains(adapter.zero_action())
    result = adapter.to_unity(action)
    np.testing.assert_allclose(result.continuous, np.asarray(continuous, dtype=np.float32))
    np.testing.assert_array_equal(result.discrete, np.asarray(discrete, dtype=np.int32))
    assert result.continuous.dtype == np.float32 and result.discrete.dtype == np.int32


def test_batched_actions() -> None:
    adapter = ActionAdapter(ActionSpec(0, (3,)))
    result = adapter.batch_to_unity(np.array([0, 2, 1]), 3)
    np.testing.assert_array_equal(result.discrete, [[0], [2], [1]])


@pytest.mark.parametrize(
    ("spec", "action", "message"),
    [
        (ActionSpec(2, ()), [1.0, 2.0, 3.0], r"shape \(2,\)"),
        (ActionSpec(0, (3,)), 3, r"out of range; it must be in \[0, 3\)"),
        (ActionSpec(0, (3,)), 1.5, "must be integers"),
        (ActionSpec(1, (2,)), [0.1, 1], "hybrid actions; pass a dict"),
    ],
)
def test_bad_actions_are_explained(spec: ActionSpec, action: object, message: str) -> None:
    with pytest.raises(UnityActionException, match=message):
        ActionAdapter(spec).to_unity(action)


def test_masks_are_flat_true_allowed_and_sample_ready() -> None:
    adapter = ActionAdapter(ActionSpec(0, (3, 2)))
    unity_mask = [np.array([[True, False, False]]), np.array([[False, True]])]  # True = disabled
    flat = adapter.mask_from_unity(unity_mask, 0)
    np.testing.assert_array_equal(flat, [False, True, True, True, False])
    assert adapter.mask_from_unity(None, 0).tolist() == [True] * 5
    sample_mask = adapter.sample_mask(flat)
    assert [m.tolist() for m in sample_mask] == [[0, 1, 1], [1, 0]]
    for _ in range(20):
        action = adapter.space.sample(mask=sample_mask)
        assert action[0] != 0 and action[1] == 0
    np.testing.assert_array_equal(
        adapter.batch_mask_from_unity(unity_mask, 1), [[False, True, True, True, False]]
    )
    single = ActionAdapter(ActionSpec(0, (3,)))
    assert single.sample_mask(np.array([True, False, True])).dtype == np.int8
    assert ActionAdapter(ActionSpec(2, ())).sample_mask(np.ones(0, bool)) is None


def test_sb3_action_space_check() -> None:
    check_sb3_action_space(ActionAdapter(ActionSpec(0, (3, 2))).space)
    with pytest.raises(TypeError, match="hybrid actions"):
        check_sb3_action_space(ActionAdapter(ActionSpec(1, (2,))).space)


def test_goal_signal_sensors_are_named_for_goal_conditioning() -> None:
    goal = _spec("VectorSensor", 2)._replace(observation_type=ObservationType.GOAL_SIGNAL)
    adapter = ObservationAdapter([_spec("CameraSensor", 3, 64, 84), goal])
    assert adapter.keys == ("CameraSensor", "VectorSensor")
    assert adapter.goal_signal_keys == ("VectorSensor",)
    # flattened with an ordinary vector sensor, the goal is no longer an entry of its own
    mixed = ObservationAdapter([_spec("Ray", 5), goal, _spec("CameraSensor", 3, 64, 84)],
                               flatten_obs=True)  # fmt: skip
    assert mixed.goal_signal_keys == ()
    assert ObservationAdapter([goal]).goal_signal_keys == ()  # a plain Box has no keys
