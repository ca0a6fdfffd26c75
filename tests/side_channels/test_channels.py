"""Standard channels: exact payload bytes (spec §5.3), validation, and behavior on receipt."""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
import sys
import uuid

import pytest
from google.protobuf import any_pb2

import unity_gym
from unity_gym.exceptions import UnityCommunicationException, UnitySideChannelException
from unity_gym.protocol.communicator_objects.training_analytics_pb2 import (
    TrainingBehaviorInitialized,
    TrainingEnvironmentInitialized,
)
from unity_gym.side_channels import (
    DefaultTrainingAnalyticsSideChannel,
    EngineConfig,
    EngineConfigurationChannel,
    EnvironmentParametersChannel,
    FloatPropertiesChannel,
    IncomingMessage,
    OutgoingMessage,
    RawBytesChannel,
    SideChannel,
    SideChannelManager,
    StatsAggregationMethod,
    StatsSideChannel,
    TrainingAnalyticsSideChannel,
    decode_side_channel_records,
    encode_side_channel_records,
)


def sent_payloads(channel: SideChannel) -> list[bytes]:
    """Payloads ``channel`` queued, as the game receives them after framing."""
    data = SideChannelManager([channel]).generate_side_channel_messages()
    records = decode_side_channel_records(data)
    assert all(channel_id == channel.channel_id for channel_id, _ in records)
    return [payload for _, payload in records]


def deliver(channel: SideChannel, *payloads: bytes) -> None:
    """Deliver ``payloads`` to ``channel`` through the framing, as the game would send them."""
    data = encode_side_channel_records([(channel.channel_id, p) for p in payloads])
    SideChannelManager([channel]).process_side_channel_message(data)


def i32(value: int) -> bytes:
    return struct.pack("<i", value)


def f32(value: float) -> bytes:
    return struct.pack("<f", value)


# ----------------------------------------------------------------------------- channel ids


@pytest.mark.parametrize(
    ("channel", "expected"),
    [
        (EngineConfigurationChannel(), "e951342c-4f7e-11ea-b238-784f4387d1f7"),
        (EnvironmentParametersChannel(), "534c891e-810f-11ea-a9d0-822485860400"),
        (StatsSideChannel(), "a1d8f7b7-cec8-50f9-b78b-d3e165a78520"),
        (TrainingAnalyticsSideChannel(), "b664a4a9-d86f-5a5f-95cb-e8353a7e8356"),
        (FloatPropertiesChannel(), "60ccf7d0-4f7e-11ea-b238-784f4387d1f7"),
    ],
)
def test_standard_channel_ids(channel: SideChannel, expected: str) -> None:
    assert channel.channel_id == uuid.UUID(expected)


def test_uuid5_derived_ids() -> None:
    url = uuid.NAMESPACE_URL
    assert uuid.uuid5(url, "com.unity.ml-agents/StatsSideChannel") == StatsSideChannel.CHANNEL_ID
    assert (
        uuid.uuid5(url, "com.unity.ml-agents/TrainingAnalyticsSideChannel")
        == TrainingAnalyticsSideChannel.CHANNEL_ID
    )


# ----------------------------------------------------------------------------- engine


def test_engine_configuration_messages_in_spec_order() -> None:
    channel = EngineConfigurationChannel()
    channel.set_configuration_parameters(
        capture_frame_rate=60,
        target_frame_rate=-1,
        time_scale=20.0,
        quality_level=5,
        height=84,
        width=100,
    )
    assert sent_payloads(channel) == [
        i32(0) + i32(100) + i32(84),
        i32(1) + i32(5),
        i32(2) + f32(20.0),
        i32(3) + i32(-1),
        i32(4) + i32(60),
    ]


def test_engine_configuration_only_given_settings() -> None:
    channel = EngineConfigurationChannel()
    channel.set_configuration_parameters(time_scale=1.5)
    assert sent_payloads(channel) == [bytes.fromhex("02000000 0000c03f")]
    channel.set_configuration_parameters()
    assert sent_payloads(channel) == []


def test_engine_config_default_and_set_configuration() -> None:
    default = EngineConfig.default_config()
    assert default == EngineConfig(80, 80, 1, 20.0, -1, 60)
    channel = EngineConfigurationChannel()
    channel.set_configuration(default._replace(quality_level=None))
    payloads = sent_payloads(channel)
    assert [struct.unpack_from("<i", p)[0] for p in payloads] == [0, 2, 3, 4]
    assert payloads[0] == i32(0) + i32(80) + i32(80)


@pytest.mark.parametrize(("width", "height"), [(84, None), (None, 84)])
def test_engine_width_and_height_go_together(width: int | None, height: int | None) -> None:
    channel = EngineConfigurationChannel()
    with pytest.raises(UnitySideChannelException, match="both width and height"):
        channel.set_configuration_parameters(width=width, height=height, time_scale=2.0)
    assert channel.message_queue == []


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"quality_level": 1.5}, "quality_level must be an int"),
        ({"target_frame_rate": True}, "target_frame_rate must be an int"),
        ({"capture_frame_rate": 2**31}, "32-bit"),
        ({"time_scale": float("nan")}, "time_scale must be a finite number"),
        ({"time_scale": "fast"}, "time_scale must be a finite number"),
    ],
)
def test_engine_rejects_bad_values(kwargs: dict[str, object], match: str) -> None:
    channel = EngineConfigurationChannel()
    with pytest.raises(UnitySideChannelException, match=match):
        channel.set_configuration_parameters(width=8, height=8, **kwargs)  # type: ignore[arg-type]
    assert channel.message_queue == []


def test_engine_channel_rejects_incoming() -> None:
    with pytest.raises(UnityCommunicationException, match="engine configuration"):
        deliver(EngineConfigurationChannel(), i32(0))


# ----------------------------------------------------------------------------- env parameters


def test_float_parameter_spec_bytes() -> None:
    channel = EnvironmentParametersChannel()
    channel.set_float_parameter("gravity", 9.81)
    assert sent_payloads(channel) == [bytes.fromhex("07000000 67726176697479 00000000 c3f51c41")]


def test_uniform_sampler_spec_bytes() -> None:
    channel = EnvironmentParametersChannel()
    channel.set_uniform_sampler_parameters("mass", 0.5, 2.0, 7)
    assert sent_payloads(channel) == [
        bytes.fromhex("04000000 6d617373 01000000 07000000 00000000 0000003f 00000040")
    ]


def test_gaussian_sampler_bytes() -> None:
    channel = EnvironmentParametersChannel()
    channel.set_gaussian_sampler_parameters("size", 1.0, 0.25, -3)
    assert sent_payloads(channel) == [
        i32(4) + b"size" + i32(1) + i32(-3) + i32(1) + f32(1.0) + f32(0.25)
    ]


def test_multirange_sampler_bytes() -> None:
    channel = EnvironmentParametersChannel()
    channel.set_multirangeuniform_sampler_parameters("len", [(1.0, 2.0), (4, 8.5)], 11)
    expected = i32(3) + b"len" + i32(1) + i32(11) + i32(2) + i32(4)
    expected += f32(1.0) + f32(2.0) + f32(4.0) + f32(8.5)
    assert sent_payloads(channel) == [expected]


def test_parameters_read_back_with_incoming_message() -> None:
    """The payload decodes with the same primitives the game side uses."""
    channel = EnvironmentParametersChannel()
    channel.set_multirangeuniform_sampler_parameters("p", [(0.0, 1.0)], 5)
    (payload,) = sent_payloads(channel)
    msg = IncomingMessage(payload)
    assert msg.read_string() == "p"
    assert msg.read_int32() == EnvironmentParametersChannel.EnvironmentDataTypes.SAMPLER
    assert msg.read_int32() == 5
    assert msg.read_int32() == EnvironmentParametersChannel.SamplerTypes.MULTIRANGEUNIFORM
    assert msg.read_float32_list() == [0.0, 1.0]
    assert msg.remaining == 0


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda c: c.set_uniform_sampler_parameters("m", 2.0, 1.0, 0), "greater than max_value"),
        (lambda c: c.set_uniform_sampler_parameters("m", 0.0, float("inf"), 0), "finite"),
        (lambda c: c.set_uniform_sampler_parameters("m", 0.0, 1.0, 1.5), "seed must be an int"),
        (lambda c: c.set_uniform_sampler_parameters("m", 0.0, 1.0, 2**40), "32-bit"),
        (lambda c: c.set_gaussian_sampler_parameters("m", 0.0, -0.1, 0), "st_dev must be >= 0"),
        (lambda c: c.set_multirangeuniform_sampler_parameters("m", [], 0), "empty"),
        (lambda c: c.set_multirangeuniform_sampler_parameters("m", [(1, 2, 3)], 0), "interval 0"),
        (lambda c: c.set_multirangeuniform_sampler_parameters("m", [(0, 1), 5], 0), "interval 1"),
        (lambda c: c.set_multirangeuniform_sampler_parameters("m", [(3, 1)], 0), "Swap"),
        (lambda c: c.set_multirangeuniform_sampler_parameters("m", "ab", 0), "list of"),
        (lambda c: c.set_float_parameter("", 1.0), "non-empty string"),
        (lambda c: c.set_float_parameter("grävity", 1.0), "not ASCII"),
        (lambda c: c.set_float_parameter("g", float("nan")), "finite"),
    ],
)
def test_parameter_validation(call: object, match: str) -> None:
    channel = EnvironmentParametersChannel()
    with pytest.raises(UnitySideChannelException, match=match):
        call(channel)  # type: ignore[operator]
    assert channel.message_queue == []


def test_degenerate_but_valid_parameters_are_accepted() -> None:
    channel = EnvironmentParametersChannel()
    channel.set_uniform_sampler_parameters("a", 1.0, 1.0, 0)
    channel.set_gaussian_sampler_parameters("b", 0.0, 0.0, 0)
    channel.set_multirangeuniform_sampler_parameters("c", [[2.0, 2.0]], 0)  # type: ignore[list-item]
    assert len(sent_payloads(channel)) == 3


def test_parameters_channel_rejects_incoming() -> None:
    with pytest.raises(UnityCommunicationException, match="environment parameters"):
        deliver(EnvironmentParametersChannel(), b"\x00")


# ----------------------------------------------------------------------------- stats


def stat(key: str, value: float, method: int) -> bytes:
    msg = OutgoingMessage()
    msg.write_string(key)
    msg.write_float32(value)
    msg.write_int32(method)
    return msg.buffer


def test_stats_accumulate_until_reset() -> None:
    channel = StatsSideChannel()
    deliver(channel, stat("reward", 1.5, 0), stat("reward", -0.5, 0), stat("len", 30.0, 1))
    deliver(channel, stat("hist", 2.0, 3), stat("sum", 4.0, 2))
    assert channel.get_and_reset_stats() == {
        "reward": [(1.5, StatsAggregationMethod.AVERAGE), (-0.5, StatsAggregationMethod.AVERAGE)],
        "len": [(30.0, StatsAggregationMethod.MOST_RECENT)],
        "hist": [(2.0, StatsAggregationMethod.HISTOGRAM)],
        "sum": [(4.0, StatsAggregationMethod.SUM)],
    }
    assert channel.get_and_reset_stats() == {}


def test_stats_aggregation_values() -> None:
    assert [(m.name, m.value) for m in StatsAggregationMethod] == [
        ("AVERAGE", 0),
        ("MOST_RECENT", 1),
        ("SUM", 2),
        ("HISTOGRAM", 3),
    ]


def test_stats_unknown_aggregation_is_reported() -> None:
    with pytest.raises(UnitySideChannelException, match="unknown aggregation method 9"):
        deliver(StatsSideChannel(), stat("k", 1.0, 9))


# ----------------------------------------------------------------------------- float properties


def test_float_properties_both_directions() -> None:
    channel = FloatPropertiesChannel()
    channel.set_property("a", 1.25)
    assert sent_payloads(channel) == [i32(1) + b"a" + f32(1.25)]
    deliver(channel, i32(1) + b"b" + f32(-2.0), i32(1) + b"a" + f32(3.0))
    assert channel.get_property("a") == 3.0
    assert channel.get_property("b") == -2.0
    assert channel.get_property("missing") is None
    assert channel.list_properties() == ["a", "b"]
    copy = channel.get_property_dict_copy()
    copy["a"] = 99.0
    assert channel.get_property("a") == 3.0


def test_float_properties_custom_id_and_ascii_keys() -> None:
    custom = uuid.uuid4()
    channel = FloatPropertiesChannel(custom)
    assert channel.channel_id == custom
    with pytest.raises(UnitySideChannelException, match="ASCII"):
        channel.set_property("ünit", 1.0)
    assert channel.message_queue == [] and channel.list_properties() == []


# ----------------------------------------------------------------------------- raw bytes


def test_raw_bytes_both_directions() -> None:
    channel = RawBytesChannel(uuid.uuid4())
    channel.send_raw_data(b"\x00\x01")
    channel.send_raw_data(bytearray(b""))
    assert sent_payloads(channel) == [b"\x00\x01", b""]
    deliver(channel, b"one", b"two")
    assert channel.get_and_clear_received_messages() == [b"one", b"two"]
    assert channel.get_and_clear_received_messages() == []


# ----------------------------------------------------------------------------- analytics

ENV_URL = "type.googleapis.com/communicator_objects.TrainingEnvironmentInitialized"
BEHAVIOR_URL = "type.googleapis.com/communicator_objects.TrainingBehaviorInitialized"


def unpack(payload: bytes) -> any_pb2.Any:
    wrapper = any_pb2.Any()
    wrapper.ParseFromString(payload)
    return wrapper


def reference_hash(text: str) -> str:
    return hmac.new(b"unity.ml-agents", text.encode(), hashlib.sha256).hexdigest()


def test_environment_initialized_defaults() -> None:
    channel = TrainingAnalyticsSideChannel()
    channel.environment_initialized()
    (payload,) = sent_payloads(channel)
    wrapper = unpack(payload)
    assert wrapper.type_url == ENV_URL
    message = TrainingEnvironmentInitialized()
    message.ParseFromString(wrapper.value)
    info = sys.version_info
    assert message.python_version == f"{info.major}.{info.minor}.{info.micro}"
    assert message.mlagents_version == f"unity-gym {unity_gym.__version__}"
    assert message.mlagents_envs_version == unity_gym.__version__
    assert message.torch_version == "Unknown"
    assert message.torch_device_type == "Unknown"
    assert message.num_envs == 0 and message.run_options == ""


def test_environment_initialized_with_run_options_hashes_names() -> None:
    channel = TrainingAnalyticsSideChannel()
    run_options = {
        "behaviors": {"3DBall": {"trainer_type": "ppo", "init_path": "/home/me/model.pt"}},
        "environment_parameters": {
            "gravity": {
                "curriculum": [
                    {"name": "Lesson0", "completion_criteria": {"behavior": "3DBall"}},
                ]
            }
        },
        "env_settings": {"num_envs": 4},
        "checkpoint_settings": {"results_dir": "/home/me/results", "run_id": "r1"},
    }
    channel.environment_initialized(run_options, torch_version="2.13.0", torch_device_type="cpu")
    message = TrainingEnvironmentInitialized()
    message.ParseFromString(unpack(sent_payloads(channel)[0]).value)
    assert (message.torch_version, message.torch_device_type) == ("2.13.0", "cpu")
    assert message.num_envs == 4
    assert message.num_environment_parameters == 1
    sent = json.loads(message.run_options)
    ball = reference_hash("3DBall")
    assert list(sent["behaviors"]) == [ball]
    assert sent["behaviors"][ball]["init_path"] == reference_hash("/home/me/model.pt")
    lesson = sent["environment_parameters"][reference_hash("gravity")]["curriculum"][0]
    assert lesson["name"] == reference_hash("Lesson0")
    assert lesson["completion_criteria"]["behavior"] == ball
    assert sent["checkpoint_settings"] == {
        "results_dir": reference_hash("/home/me/results"),
        "run_id": "r1",
    }
    assert "3DBall" not in message.run_options
    # The caller's dict is left untouched.
    assert run_options["behaviors"]["3DBall"]["init_path"] == "/home/me/model.pt"  # type: ignore[index]


def test_training_started_message() -> None:
    channel = TrainingAnalyticsSideChannel()
    channel.environment_initialized(
        {
            "environment_parameters": {
                "p": {"curriculum": [{"completion_criteria": {"behavior": "Walker?team=0"}}]}
            }
        }
    )
    channel.message_queue.clear()
    config = {
        "trainer_type": "sac",
        "reward_signals": {"extrinsic": {}, "curiosity": {}},
        "network_settings": {"num_layers": 3, "hidden_units": 256, "memory": {"memory_size": 8}},
        "behavioral_cloning": {"demo_path": "/data/expert.demo"},
        "threaded": True,
    }
    channel.training_started("Walker?team=0", config)
    wrapper = unpack(sent_payloads(channel)[0])
    assert wrapper.type_url == BEHAVIOR_URL
    message = TrainingBehaviorInitialized()
    message.ParseFromString(wrapper.value)
    assert message.behavior_name == reference_hash("Walker?team=0")
    assert len(message.behavior_name) == 64
    assert message.trainer_type == "sac"
    assert message.extrinsic_reward_enabled and message.curiosity_reward_enabled
    assert not message.gail_reward_enabled and not message.rnd_reward_enabled
    assert message.behavioral_cloning_enabled and message.recurrent_enabled
    assert message.visual_encoder == "simple"
    assert (message.num_network_layers, message.num_network_hidden_units) == (3, 256)
    assert message.trainer_threaded and not message.self_play_enabled
    assert message.curriculum_enabled
    sent_config = json.loads(message.config)
    assert sent_config["behavioral_cloning"]["demo_path"] == reference_hash("/data/expert.demo")
    assert "/data/expert.demo" not in message.config
    assert sent_config["trainer_type"] == "sac"


def test_training_started_defaults_and_no_curriculum() -> None:
    channel = TrainingAnalyticsSideChannel()
    channel.training_started("B", {"trainer_type": "ppo", "init_path": "/x/y.pt"})
    message = TrainingBehaviorInitialized()
    message.ParseFromString(unpack(sent_payloads(channel)[0]).value)
    assert (message.num_network_layers, message.num_network_hidden_units) == (2, 128)
    assert not message.curriculum_enabled and not message.recurrent_enabled
    assert json.loads(message.config)["init_path"] == reference_hash("/x/y.pt")


def test_analytics_channel_rejects_incoming_and_has_official_alias() -> None:
    assert DefaultTrainingAnalyticsSideChannel is TrainingAnalyticsSideChannel
    with pytest.raises(UnityCommunicationException, match="training analytics"):
        deliver(TrainingAnalyticsSideChannel(), b"")
