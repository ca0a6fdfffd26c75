"""The player's building blocks, in process: side channels, samplers, observation encoding and
message assembly (byte-exact against the spec's test vectors)."""

from __future__ import annotations

import io
import logging
import uuid

import numpy as np
import pytest
from PIL import Image

from unity_gym.player.capabilities import Capabilities
from unity_gym.player.connection import frame_output
from unity_gym.player.observations import (
    ObservationEncoder,
    default_channel_mapping,
    stacked_channel_mapping,
)
from unity_gym.player.samplers import DotNetRandom, MultiRangeUniformSampler
from unity_gym.player.side_channels import (
    ENGINE_CONFIGURATION_CHANNEL_ID,
    ENVIRONMENT_PARAMETERS_CHANNEL_ID,
    STATS_CHANNEL_ID,
    EngineConfigurationChannel,
    EnvironmentParameters,
    SideChannelHub,
    StandardChannels,
    StatAggregation,
)
from unity_gym.player.specs import (
    ActionSpec,
    BehaviorSpec,
    Compression,
    ObservationType,
    SensorSpec,
)
from unity_gym.player.stacking import ObservationStack
from unity_gym.player.wire import AgentReports, OutputBuilder, read_actions
from unity_gym.protocol.communicator_objects.agent_action_pb2 import AgentActionProto
from unity_gym.protocol.communicator_objects.agent_info_pb2 import AgentInfoProto
from unity_gym.protocol.communicator_objects.unity_output_pb2 import UnityOutputProto
from unity_gym.side_channels.messages import IncomingMessage, OutgoingMessage

GRAVITY_PAYLOAD = bytes.fromhex("07000000 67726176697479 00000000 c3f51c41")
UNIFORM_MASS_PAYLOAD = bytes.fromhex(
    "04000000 6d617373 01000000 07000000 00000000 0000003f 00000040"
)
UNITY_OUTPUT_VECTOR = bytes.fromhex(
    "0a0308c80112410a3f123d0a08423f7465616d3d3012310a2f3dcdcccc3d50036a260a0102220a0a0800"
    "00803f000080bf3201014212566563746f7253656e736f725f73697a6532"
)


def _record(channel_id: uuid.UUID, payload: bytes) -> bytes:
    return channel_id.bytes_le + len(payload).to_bytes(4, "little") + payload


def test_dotnet_random_matches_system_random() -> None:
    assert DotNetRandom(0).next_sample() == 1559595546
    rng = DotNetRandom(42)
    assert [rng.next_sample() for _ in range(3)] == [1434747710, 302596119, 269548474]
    assert DotNetRandom(0).next_double() == pytest.approx(0.7262432699679598, abs=1e-15)


def test_float_parameter_and_callback_from_spec_bytes() -> None:
    params = EnvironmentParameters()
    seen: list[float] = []
    params.register_callback("gravity", seen.append)
    hub = SideChannelHub([params])
    hub.process_incoming(_record(ENVIRONMENT_PARAMETERS_CHANNEL_ID, GRAVITY_PAYLOAD))
    assert params.get_with_default("gravity", 1.0) == pytest.approx(9.81, rel=1e-6)
    assert seen == [pytest.approx(9.81, rel=1e-6)]
    assert params.get_with_default("other", 3.0) == 3.0


def test_sampler_draws_anew_on_every_read_and_is_seeded() -> None:
    first, second = EnvironmentParameters(), EnvironmentParameters()
    for params in (first, second):
        params.on_message_received(IncomingMessage(UNIFORM_MASS_PAYLOAD))
    draws = first.read_many("mass", 1.0, 50)
    assert len(set(draws)) == 50 and all(0.5 <= d <= 2.0 for d in draws)
    assert second.read_many("mass", 1.0, 50) == draws
    assert draws[0] == pytest.approx(0.5 + DotNetRandom(7).next_double() * 1.5)


def test_gaussian_and_multirange_samplers() -> None:
    params = EnvironmentParameters()
    msg = OutgoingMessage()
    msg.write_string("g")
    msg.write_int32(1)
    msg.write_int32(3)
    msg.write_int32(1)
    msg.write_float32(10.0)
    msg.write_float32(2.0)
    params.on_message_received(IncomingMessage(msg.buffer))
    values = np.array(params.read_many("g", 0.0, 4000))
    assert abs(values.mean() - 10.0) < 0.15 and abs(values.std() - 2.0) < 0.15
    sampler = MultiRangeUniformSampler(5, [0.0, 1.0, 10.0, 13.0])
    drawn = np.array([sampler() for _ in range(4000)])
    assert np.all(((drawn >= 0) & (drawn <= 1)) | ((drawn >= 10) & (drawn <= 13)))
    assert 0.65 < np.mean(drawn >= 10) < 0.85, "intervals chosen in proportion to length"


def test_engine_configuration_clamps_time_scale(caplog: pytest.LogCaptureFixture) -> None:
    engine = EngineConfigurationChannel()
    hub = SideChannelHub([engine])
    messages = b""
    for kind, write in ((2, lambda m: m.write_float32(0.5)), (3, lambda m: m.write_int32(60)),
                        (9, lambda m: m.write_int32(1))):  # fmt: skip
        msg = OutgoingMessage()
        msg.write_int32(kind)
        write(msg)
        messages += _record(ENGINE_CONFIGURATION_CHANNEL_ID, msg.buffer)
    with caplog.at_level(logging.WARNING, logger="unity_gym.player"):
        hub.process_incoming(messages)
    assert engine.settings.time_scale == 1.0
    assert engine.settings.target_frame_rate == 60
    assert "unknown setting type 9" in caplog.text


def test_unknown_channel_data_waits_for_one_message(caplog: pytest.LogCaptureFixture) -> None:
    hub = SideChannelHub()
    params = EnvironmentParameters()
    hub.process_incoming(_record(ENVIRONMENT_PARAMETERS_CHANNEL_ID, GRAVITY_PAYLOAD))
    hub.register(params)  # registered before the next message: the cached data is delivered
    assert params.get_with_default("gravity", 0.0) == pytest.approx(9.81, rel=1e-6)
    stranger = uuid.uuid4()
    hub.process_incoming(_record(stranger, b"abc"))
    with caplog.at_level(logging.WARNING, logger="unity_gym.player"):
        hub.process_incoming(b"")
        hub.process_incoming(_record(stranger, b"abc")[:10])  # truncated: dropped, no crash
    assert f"Unknown side channel data received (channel id {stranger})" in caplog.text
    assert "truncated" in caplog.text


def test_outgoing_stats_are_framed_and_cleared() -> None:
    channels = StandardChannels.create()
    hub = SideChannelHub(channels.in_registration_order())
    channels.stats.add("Player/x", 2.5, StatAggregation.SUM)
    data = hub.collect_outgoing()
    assert data[:16] == STATS_CHANNEL_ID.bytes_le
    payload = IncomingMessage(data[20:])
    assert (payload.read_string(), payload.read_float32(), payload.read_int32()) == (
        "Player/x", 2.5, 2,
    )  # fmt: skip
    assert hub.collect_outgoing() == b""


def test_channel_mappings_from_the_spec() -> None:
    assert stacked_channel_mapping(default_channel_mapping(1), 1, 2) == [0, 0, 0, 1, 1, 1]
    assert stacked_channel_mapping(default_channel_mapping(4), 4, 1) == [0, 1, 2, 3, -1, -1]


def _decode_pngs(data: bytes) -> list[np.ndarray]:
    images, start = [], 0
    signature = b"\x89PNG\r\n\x1a\n"
    while start < len(data):
        end = data.find(signature, start + 1)
        end = len(data) if end < 0 else end
        image = Image.open(io.BytesIO(data[start:end]))
        assert image.mode == "RGB"
        images.append(np.asarray(image).transpose(2, 0, 1))
        start = end
    return images


def test_png_encoder_concatenates_rgb_images_with_mapping() -> None:
    sensor = SensorSpec("Cam", (1, 3, 4), Compression.PNG, stack_size=2)
    encoder = ObservationEncoder(sensor, Capabilities())
    batch = np.stack([np.full((1, 3, 4), 10 / 255.0), np.full((1, 3, 4), 20 / 255.0)], 1)
    obs = AgentInfoProto.FromString(encoder.encode(batch.astype(np.float32))[0]).observations[0]
    assert list(obs.shape) == [2, 3, 4] and obs.compression_type == 1
    assert list(obs.compressed_channel_mapping) == [0, 0, 0, 1, 1, 1]
    images = _decode_pngs(obs.compressed_data)
    assert [int(i.max()) for i in images] == [10, 20] and images[0].shape == (3, 3, 4)


def test_png_falls_back_to_floats_without_the_capabilities() -> None:
    five = SensorSpec("Cam", (5, 2, 2), Compression.PNG)
    no_concat = Capabilities(concatenated_png_observations=False)
    assert not ObservationEncoder(five, no_concat).uses_png
    stacked = SensorSpec("Cam", (1, 2, 2), Compression.PNG, stack_size=2)
    assert not ObservationEncoder(stacked, Capabilities(compressed_channel_mapping=False)).uses_png
    assert ObservationEncoder(SensorSpec("Cam", (3, 2, 2), Compression.PNG), no_concat).uses_png


def test_output_builder_matches_the_spec_vector() -> None:
    spec = BehaviorSpec("B", (SensorSpec("VectorSensor_size2", (2,)),), ActionSpec(1))
    builder = OutputBuilder([spec], Capabilities())
    reports = AgentReports(
        slots=np.array([0]),
        ids=np.array([3], np.int32),
        rewards=np.array([0.1], np.float32),
        group_ids=np.zeros(1, np.int32),
        group_rewards=np.zeros(1, np.float32),
        observations=[np.array([[1.0, -1.0]], np.float32)],
    )
    first = UnityOutputProto.FromString(builder.build({"B?team=0": [reports]}, b""))
    assert [b.brain_name for b in first.rl_initialization_output.brain_parameters] == ["B?team=0"]
    second = builder.build({"B?team=0": [reports]}, b"")  # parameters are sent only once
    assert frame_output(second) == UNITY_OUTPUT_VECTOR


def test_hand_encoding_equals_the_protobuf_runtime() -> None:
    spec = BehaviorSpec(
        "S",
        (
            SensorSpec("Goal", (2,), observation_type=ObservationType.GOAL_SIGNAL),
            SensorSpec("Cam", (4, 3, 2), Compression.PNG),
            SensorSpec("Grid", (2, 3)),
        ),
        ActionSpec(1, (2, 3)),
        uses_action_mask=True,
    )
    empty = BehaviorSpec("E", (SensorSpec("v", (1,)),), ActionSpec(1))
    # Behaviors in key order, so that the map order matches deterministic serialization.
    builder = OutputBuilder([empty, spec], Capabilities())
    rng = np.random.default_rng(0)
    k = 3
    reports = AgentReports(
        slots=np.arange(k),
        ids=np.array([0, 5, 300], np.int32),
        rewards=np.array([0.0, -0.0, 1.5], np.float32),
        group_ids=np.array([0, 2, 200], np.int32),
        group_rewards=np.array([0.0, 2.0, -1.0], np.float32),
        observations=[  # wire order: sorted by sensor name
            rng.random((k, 4, 3, 2), np.float32),
            rng.random((k, 2), np.float32),
            rng.random((k, 2, 3), np.float32),
        ],
        done=True,
        interrupted=np.array([True, False, True]),
        action_masks=rng.random((k, 5)) > 0.5,
    )
    data = builder.build({"S?team=0": [reports]}, b"side")
    parsed = UnityOutputProto.FromString(data)
    assert parsed.SerializeToString(deterministic=True) == data, "as the protobuf runtime"
    infos = parsed.rl_output.agentInfos["S?team=0"].value
    assert [i.id for i in infos] == [0, 5, 300]
    assert [i.max_step_reached for i in infos] == [True, False, True]
    assert [i.group_id for i in infos] == [0, 2, 200]
    assert [list(i.action_mask) for i in infos] == reports.action_masks.tolist()  # type: ignore[union-attr]
    assert [o.name for o in infos[0].observations] == ["Cam", "Goal", "Grid"]
    assert infos[0].observations[1].observation_type == 1
    assert list(infos[2].observations[2].float_data.data) == pytest.approx(
        reports.observations[2][2].ravel().tolist()
    )
    assert len(parsed.rl_output.agentInfos["E?team=0"].value) == 0
    assert parsed.rl_output.side_channel == b"side"


def test_read_actions_pads_and_reports_mismatches() -> None:
    spec = ActionSpec(2, (3,))
    good = [AgentActionProto(continuous_actions=[0.5, -0.5], discrete_actions=[2])] * 2
    continuous, discrete, problem = read_actions(good, 2, spec)
    assert continuous.tolist() == [[0.5, -0.5]] * 2 and discrete.tolist() == [[2]] * 2
    assert problem is None
    short = [AgentActionProto(continuous_actions=[1.0])]
    continuous, discrete, problem = read_actions(short, 2, spec)
    assert continuous.tolist() == [[1.0, 0.0], [0.0, 0.0]] and discrete.tolist() == [[0], [0]]
    assert problem == "1 actions for 2 agents that requested a decision"


def test_observation_stack_keeps_oldest_first() -> None:
    stack = ObservationStack(2, (2,), 3)
    slots = np.array([1])
    stack.push(slots, np.array([[1.0, 1.0]]))
    out = stack.push(slots, np.array([[2.0, 2.0]]))
    assert out.tolist() == [[0.0, 0.0, 1.0, 1.0, 2.0, 2.0]]
    stack.reset(slots)
    assert stack.push(slots, np.array([[3.0, 3.0]])).tolist() == [[0, 0, 0, 0, 3, 3]]


def test_specs_reject_bad_declarations() -> None:
    with pytest.raises(ValueError, match="PNG compression needs"):
        SensorSpec("v", (3,), Compression.PNG)
    with pytest.raises(ValueError, match="duplicate sensor names"):
        BehaviorSpec("B", (SensorSpec("a", (1,)), SensorSpec("a", (2,))), ActionSpec(1))
    with pytest.raises(ValueError, match="action masks need discrete"):
        BehaviorSpec("B", (SensorSpec("a", (1,)),), ActionSpec(1), uses_action_mask=True)
    spec = BehaviorSpec(
        "B", (SensorSpec("b", (1,)), SensorSpec("A", (1,)), SensorSpec("a", (1,))), ActionSpec(1)
    )
    assert [spec.sensors[i].name for i in spec.wire_sensor_order()] == ["a", "A", "b"]
