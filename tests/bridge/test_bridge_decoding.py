"""Proto -> specs/steps decoding, PNG observations and action encoding (spec §4)."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from bridge_standin import Agent, build_output
from PIL import Image

from unity_gym.base_env import (
    ActionSpec,
    ActionTuple,
    BehaviorSpec,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
)
from unity_gym.decoding import (
    PNG_SIGNATURE,
    NonFiniteValueError,
    behavior_spec_from_proto,
    decode_png,
    decode_png_observation,
    encode_step_input,
    split_png_stream,
    steps_from_proto,
)
from unity_gym.exceptions import UnityObservationException
from unity_gym.protocol.communicator_objects.agent_info_pb2 import AgentInfoProto
from unity_gym.protocol.communicator_objects.brain_parameters_pb2 import BrainParametersProto
from unity_gym.protocol.communicator_objects.command_pb2 import STEP
from unity_gym.protocol.communicator_objects.space_type_pb2 import (
    SpaceTypeProto,
    continuous,
    discrete,
)
from unity_gym.protocol.communicator_objects.unity_message_pb2 import UnityMessageProto
from unity_gym.protocol.communicator_objects.unity_rl_input_pb2 import UnityRLInputProto

pytestmark = pytest.mark.timeout(60)


def unit(pixels: np.ndarray) -> np.ndarray:
    """uint8 pixels as the float32 values in [0, 1] a decoder must produce."""
    return pixels.astype(np.float32) / 255.0


def png(pixels: np.ndarray, mode: str | None = None) -> bytes:
    """Encode ``pixels`` (H, W[, C]) uint8 as PNG."""
    buffer = io.BytesIO()
    Image.fromarray(pixels, mode=mode).save(buffer, format="PNG")
    return buffer.getvalue()


def infos_of(message: bytes, name: str = "B?team=0") -> list[AgentInfoProto]:
    parsed = UnityMessageProto.FromString(message)
    return list(parsed.unity_output.rl_output.agentInfos[name].value)


def vector_spec(*shapes: tuple[int, ...], action: ActionSpec | None = None) -> BehaviorSpec:
    observation_specs = [
        ObservationSpec(s, (DimensionProperty.NONE,) * len(s), ObservationType.DEFAULT, f"o{i}")
        for i, s in enumerate(shapes)
    ]
    return BehaviorSpec(observation_specs, action or ActionSpec.create_continuous(1))


# --------------------------------------------------------------------------------------------
# specs
# --------------------------------------------------------------------------------------------


def test_behavior_spec_uses_action_spec_and_observation_metadata() -> None:
    info = AgentInfoProto()
    obs = info.observations.add(name="Camera", observation_type=1)
    obs.shape.extend([3, 4, 5])
    obs.dimension_properties.extend([1, 2, 2])
    plain = info.observations.add(name="Vec")
    plain.shape.append(6)
    params = BrainParametersProto(brain_name="B")
    params.action_spec.num_continuous_actions = 2
    params.action_spec.num_discrete_actions = 2
    params.action_spec.discrete_branch_sizes.extend([3, 4])
    spec = behavior_spec_from_proto(params, info)
    assert spec.action_spec == ActionSpec(2, (3, 4))
    camera, vec = spec.observation_specs
    assert camera.shape == (3, 4, 5)
    assert camera.dimension_property == (
        DimensionProperty.NONE,
        DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
        DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
    )
    assert camera.observation_type is ObservationType.GOAL_SIGNAL
    assert vec.dimension_property == (DimensionProperty.UNSPECIFIED,)
    assert vec.name == "Vec"


@pytest.mark.parametrize(
    ("space_type", "sizes", "expected"),
    [(continuous, [4], ActionSpec(4, ())), (discrete, [3, 2], ActionSpec(0, (3, 2)))],
)
def test_behavior_spec_falls_back_to_deprecated_action_fields(
    space_type: SpaceTypeProto, sizes: list[int], expected: ActionSpec
) -> None:
    params = BrainParametersProto(vector_action_space_type_deprecated=space_type)
    params.vector_action_size_deprecated.extend(sizes)
    assert behavior_spec_from_proto(params, AgentInfoProto()).action_spec == expected


def test_unknown_observation_type_is_an_observation_error() -> None:
    info = AgentInfoProto()
    info.observations.add(name="X", observation_type=3).shape.append(1)
    with pytest.raises(UnityObservationException, match="unknown observation_type 3"):
        behavior_spec_from_proto(BrainParametersProto(), info)


# --------------------------------------------------------------------------------------------
# steps
# --------------------------------------------------------------------------------------------


def test_steps_split_on_done_and_keep_message_order() -> None:
    agents = [
        Agent(id=5, obs=[[1, 2], [[1, 2, 3], [4, 5, 6]]], reward=0.5, group_id=2, group_reward=1),
        Agent(id=7, obs=[[3, 4], np.ones((2, 3))], reward=-1, done=True, max_step_reached=True),
        Agent(id=1, obs=[[5, 6], np.zeros((2, 3))], reward=0.25),
        Agent(id=5, obs=[[7, 8], np.full((2, 3), 2)], reward=2, done=True),
    ]
    infos = infos_of(build_output({"B?team=0": agents}))
    decision, terminal = steps_from_proto(infos, vector_spec((2,), (2, 3)), "B?team=0")
    assert decision.agent_id.tolist() == [5, 1]
    assert decision.agent_id.dtype == np.int32
    np.testing.assert_array_equal(decision.obs[0], [[1, 2], [5, 6]])
    assert decision.obs[1].shape == (2, 2, 3)
    assert decision.obs[1].dtype == np.float32
    np.testing.assert_array_equal(decision.obs[1][0], [[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(decision.reward, [0.5, 0.25])
    assert decision.group_id.tolist() == [2, 0]
    np.testing.assert_array_equal(decision.group_reward, [1, 0])
    assert decision.action_mask is None
    assert terminal.agent_id.tolist() == [7, 5]  # the same id may be in both batches
    assert terminal.interrupted.tolist() == [True, False]
    np.testing.assert_array_equal(terminal.obs[0], [[3, 4], [7, 8]])
    assert terminal[5].reward == 2
    assert decision[5].group_id == 2
    # decoded arrays are writable copies (users normalise in place)
    decision.obs[0][0, 0] = 42.0


def test_empty_agent_list_gives_zero_length_arrays() -> None:
    spec = vector_spec((3,), (2, 2, 2), action=ActionSpec.create_discrete((2,)))
    decision, terminal = steps_from_proto([], spec, "B")
    assert decision.obs[0].shape == (0, 3)
    assert decision.obs[1].shape == (0, 2, 2, 2)
    assert len(decision) == 0 and len(terminal) == 0
    # mlagents_envs 1.1.0 gives no mask list for an empty batch (tests/peer checks it on the wire)
    assert decision.action_mask is None


@pytest.mark.parametrize(
    ("field", "value", "kind"),
    [
        ("obs", float("nan"), "NaN"),
        ("obs", float("inf"), "infinite"),
        ("reward", float("nan"), "NaN"),
        ("group_reward", float("-inf"), "infinite"),
    ],
)
def test_non_finite_values_are_rejected_naming_behavior_and_field(
    field: str, value: float, kind: str
) -> None:
    bad = Agent(id=9, obs=[[1.0, 1.0]])
    if field == "obs":
        bad.obs = [[1.0, value]]
    else:
        setattr(bad, field, value)
    infos = infos_of(build_output({"B?team=0": [Agent(id=1, obs=[[0.0, 0.0]]), bad]}))
    with pytest.raises(NonFiniteValueError) as caught:
        steps_from_proto(infos, vector_spec((2,)), "Walker?team=0")
    text = str(caught.value)
    assert "'Walker?team=0'" in text and kind in text and "[9]" in text
    assert {"obs": "observations", "reward": "rewards", "group_reward": "group rewards"}[
        field
    ] in text
    # catchable like the official RuntimeError and like our observation error
    assert isinstance(caught.value, RuntimeError)
    assert isinstance(caught.value, UnityObservationException)


def test_large_finite_values_are_not_mistaken_for_infinity() -> None:
    infos = infos_of(build_output({"B?team=0": [Agent(id=1, obs=[[3e38, 3e38, 3e38]])]}))
    decision, _ = steps_from_proto(infos, vector_spec((3,)), "B")
    assert decision.obs[0][0, 0] == np.float32(3e38)


def test_observation_size_mismatch_names_agent_and_shapes() -> None:
    infos = infos_of(
        build_output({"B?team=0": [Agent(id=1, obs=[[1, 2, 3]]), Agent(id=2, obs=[[1, 2]])]})
    )
    with pytest.raises(UnityObservationException) as caught:
        steps_from_proto(infos, vector_spec((3,)), "B?team=0")
    text = str(caught.value)
    assert "agent id 2" in text and "expected shape (3,)" in text and "shape (2,)" in text


def test_missing_observation_count_is_reported() -> None:
    infos = infos_of(build_output({"B?team=0": [Agent(id=4, obs=[[1.0]])]}))
    with pytest.raises(UnityObservationException, match="sent 1 observations, expected 2"):
        steps_from_proto(infos, vector_spec((1,), (1,)), "B")


def test_action_masks_split_per_branch_and_unsized_masks_allow_everything() -> None:
    spec = vector_spec((1,), action=ActionSpec.create_discrete((2, 3)))
    agents = [
        Agent(id=0, obs=[[0]], action_mask=[True, False, False, True, True]),
        Agent(id=1, obs=[[0]]),
        Agent(id=2, obs=[[0]], action_mask=[True]),
    ]
    decision, _ = steps_from_proto(infos_of(build_output({"B?team=0": agents})), spec, "B")
    assert decision.action_mask is not None
    first, second = decision.action_mask
    assert first.tolist() == [[True, False], [False, False], [False, False]]
    assert second.tolist() == [[False, True, True], [False, False, False], [False, False, False]]
    assert [m.tolist() for m in decision[0].action_mask or []] == [
        [True, False],
        [False, True, True],
    ]


# --------------------------------------------------------------------------------------------
# PNG observations
# --------------------------------------------------------------------------------------------

RNG = np.random.default_rng(7)
RGB = RNG.integers(0, 256, size=(4, 5, 3), dtype=np.uint8)
RGB2 = RNG.integers(0, 256, size=(4, 5, 3), dtype=np.uint8)


def test_single_rgb_png_decodes_to_chw_in_unit_range() -> None:
    result = decode_png_observation(png(RGB), (3, 4, 5))
    assert result.dtype == np.float32 and result.shape == (3, 4, 5)
    np.testing.assert_array_equal(result, unit(np.moveaxis(RGB, -1, 0)))


def test_concatenated_pngs_keep_first_channels_without_mapping() -> None:
    data = png(RGB) + png(RGB2)
    result = decode_png_observation(data, (4, 4, 5))
    expected = np.concatenate([np.moveaxis(RGB, -1, 0), np.moveaxis(RGB2, -1, 0)])[:4] / 255.0
    np.testing.assert_allclose(result, expected)


def test_channel_mapping_averages_and_drops_channels() -> None:
    data = png(RGB) + png(RGB2)
    result = decode_png_observation(data, (2, 4, 5), [0, 0, 0, 1, 1, -1])
    chw1, chw2 = unit(np.moveaxis(RGB, -1, 0)), unit(np.moveaxis(RGB2, -1, 0))
    np.testing.assert_allclose(result[0], chw1.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(result[1], chw2[:2].mean(axis=0), rtol=1e-6)


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        ([0, 0, 0, 2, 2, 2], "covering 0..max without gaps"),
        ([0, 0, 0, 1, 1, -2], "covering 0..max without gaps"),
        ([-1, -1, -1, -1, -1, -1], "covering 0..max without gaps"),
        ([0, 1, 2, 3], "has 4 entries but the PNG data decoded to 6 channels"),
    ],
)
def test_invalid_channel_mappings_are_rejected(mapping: list[int], message: str) -> None:
    with pytest.raises(UnityObservationException, match=message):
        decode_png_observation(png(RGB) + png(RGB2), (2, 4, 5), mapping)


def test_grayscale_pngs_are_supported() -> None:
    gray = RNG.integers(0, 256, size=(4, 5), dtype=np.uint8)
    one = decode_png_observation(png(gray, "L"), (1, 4, 5))
    np.testing.assert_array_equal(one[0], unit(gray))
    three = decode_png_observation(png(gray, "L"), (3, 4, 5))
    assert np.all(three == one)  # a gray image is an RGB image with equal channels
    mapped = decode_png_observation(png(gray, "L") + png(gray, "L"), (2, 4, 5), [0, 0, 0, 1, 1, 1])
    np.testing.assert_allclose(mapped[1], gray / 255.0, rtol=1e-6)


def test_alpha_channels() -> None:
    rgba = RNG.integers(0, 256, size=(4, 5, 4), dtype=np.uint8)
    four = decode_png_observation(png(rgba, "RGBA"), (4, 4, 5))
    np.testing.assert_array_equal(four[3], unit(rgba[..., 3]))
    gray_mean = decode_png_observation(png(rgba, "RGBA"), (1, 4, 5))
    np.testing.assert_allclose(gray_mean[0], (rgba[..., :3] / 255.0).mean(axis=-1), rtol=1e-6)
    la = RNG.integers(0, 256, size=(4, 5, 2), dtype=np.uint8)
    assert decode_png(png(la, "LA")).shape == (2, 4, 5)
    np.testing.assert_array_equal(
        decode_png_observation(png(la, "LA"), (1, 4, 5))[0], unit(la[..., 0])
    )


def test_decoded_shape_mismatch_gives_expected_and_decoded_shapes() -> None:
    with pytest.raises(
        UnityObservationException, match=r"is 5x4 \(width x height\).*shape \(3, 8, 5\).*needs 5x8"
    ):
        decode_png_observation(png(RGB), (3, 8, 5))
    # a legacy HWC shape is read as CHW (the spec's order) and refused before decoding
    with pytest.raises(UnityObservationException, match=r"shape \(4, 5, 3\) \(channels, height"):
        decode_png_observation(png(RGB), (4, 5, 3))


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def test_png_split_walks_chunks_even_if_the_signature_appears_inside() -> None:
    first = png(RGB)
    # a text chunk holding the PNG signature, inserted after IHDR (8 + 25 bytes)
    tricky = first[:33] + _chunk(b"tEXt", b"k\x00" + PNG_SIGNATURE) + first[33:]
    parts = split_png_stream(tricky + png(RGB2))
    assert [len(p) for p in parts] == [len(tricky), len(png(RGB2))]
    result = decode_png_observation(tricky + png(RGB2), (6, 4, 5))
    np.testing.assert_array_equal(result[3:], unit(np.moveaxis(RGB2, -1, 0)))


@pytest.mark.parametrize("data", [b"not a png", png(RGB)[:-20], PNG_SIGNATURE + b"\x00" * 30])
def test_broken_png_data_is_an_observation_error(data: bytes) -> None:
    with pytest.raises(UnityObservationException):
        decode_png_observation(data, (3, 4, 5))


def test_visual_observations_in_steps_mix_png_and_float_agents() -> None:
    chw = unit(np.moveaxis(RGB, -1, 0))
    agents = [
        Agent(id=0, obs=[[0.0]], png_obs={0: (png(RGB), (3, 4, 5), ())}),
        Agent(id=1, obs=[chw.astype(np.float32)]),
    ]
    spec = BehaviorSpec(
        [ObservationSpec((3, 4, 5), (DimensionProperty.NONE,) * 3, ObservationType.DEFAULT, "C")],
        ActionSpec.create_continuous(1),
    )
    decision, _ = steps_from_proto(infos_of(build_output({"B?team=0": agents})), spec, "B")
    assert decision.obs[0].shape == (2, 3, 4, 5)
    np.testing.assert_allclose(decision.obs[0][0], decision.obs[0][1], rtol=1e-6)
    bad = [Agent(id=3, obs=[[0.0]], png_obs={0: (png(RGB), (3, 8, 5), ())})]
    with pytest.raises(UnityObservationException, match="agent id 3"):
        steps_from_proto(infos_of(build_output({"B?team=0": bad})), spec, "B")


# --------------------------------------------------------------------------------------------
# actions
# --------------------------------------------------------------------------------------------


def _step_input_built_by_protobuf(actions: dict[str, ActionTuple]) -> UnityRLInputProto:
    """The STEP input built field by field with protobuf's own API (the oracle)."""
    rl_input = UnityRLInputProto(command=STEP)
    for name, action in actions.items():
        entries = rl_input.agent_actions[name].value
        for floats, ints in zip(action.continuous, action.discrete, strict=True):
            entries.add(
                vector_actions_deprecated=[*floats.tolist(), *map(float, ints)],
                continuous_actions=floats.tolist(),
                discrete_actions=ints.tolist(),
            )
    return rl_input


@pytest.mark.parametrize(
    ("rows", "continuous", "branches", "top"),
    [
        (12, 2, 0, 0),  # 3DBall
        (1, 0, 1, 4),  # discrete only
        (32, 0, 3, 2),  # SoccerTwos
        (5, 3, 1, 1),  # FoodCollector's hybrid actions
        (3, 39, 0, 0),  # Walker: 156 bytes of floats, two-byte lengths
        (7, 1, 40, 127),  # the largest one-byte discrete value, a two-byte field-7 length
        (4, 2, 2, 128),  # 128 takes two varint bytes: the general path
        (2, 0, 0, 0),  # a behavior without actions: an empty message per agent
    ],
)
def test_step_input_bytes_equal_protobufs_own_encoding(
    rows: int, continuous: int, branches: int, top: int
) -> None:
    rng = np.random.default_rng(rows * 100 + continuous)
    values = rng.uniform(-3.0, 3.0, (rows, continuous)).astype(np.float32)
    if continuous:
        values[0, 0] = -0.0  # the sign of zero is kept
        values[-1, -1] = np.float32(1e-42)  # a subnormal
    discrete = rng.integers(0, top + 1, (rows, branches)).astype(np.int32)
    if branches:
        discrete[0, 0] = top
    actions = {"B?team=0": ActionTuple(values, discrete), "Other": ActionTuple(values[:1])}
    ours = encode_step_input(actions, b"")
    oracle = _step_input_built_by_protobuf(actions)
    assert ours == oracle
    assert ours.SerializeToString(deterministic=True) == oracle.SerializeToString(
        deterministic=True
    )
    first = ours.agent_actions["B?team=0"].value[0]
    if continuous:
        assert np.signbit(first.continuous_actions[0]) and first.continuous_actions[0] == 0.0


def test_step_input_of_actions_given_in_other_dtypes_equals_protobufs_own() -> None:
    # ActionTuple casts them to float32 and int32 (float64 rounded as protobuf's float field).
    actions = {
        "A": ActionTuple(np.array([[0.1, -2.5e38]]), np.array([[3]], dtype=np.int64)),
        "B": ActionTuple(np.zeros((2, 1), np.float32), np.array([[1], [2]], dtype=np.uint8)),
    }
    assert encode_step_input(actions, b"") == _step_input_built_by_protobuf(actions)


def test_step_input_orders_agents_and_fills_the_deprecated_field() -> None:
    actions = {
        "A": ActionTuple(np.array([[0.5, 1.5], [2.5, 3.5]]), np.array([[1, 0], [2, 1]])),
        "Empty": ActionSpec(1, ()).empty_action(0),
        "D": ActionTuple(discrete=np.array([[4]])),
    }
    rl_input = encode_step_input(actions, b"sc")
    assert set(rl_input.agent_actions) == {"A", "D"}  # no entry for zero agents
    first, second = rl_input.agent_actions["A"].value
    assert list(first.continuous_actions) == [0.5, 1.5]
    assert list(second.discrete_actions) == [2, 1]
    assert list(second.vector_actions_deprecated) == [2.5, 3.5, 2.0, 1.0]
    (only,) = rl_input.agent_actions["D"].value
    assert list(only.vector_actions_deprecated) == [4.0] and not only.continuous_actions
    assert rl_input.side_channel == b"sc" and rl_input.command == 0
