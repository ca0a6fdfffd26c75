"""The same channel calls give byte-identical side-channel data here and in mlagents-envs 1.1.0.

One scenario script, written against the official class and method names, runs in this process
(with ``unity_gym`` imports) and in the reference peer venv (with ``mlagents_envs`` imports).
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest
from google.protobuf import any_pb2

from unity_gym.protocol.communicator_objects.training_analytics_pb2 import (
    TrainingEnvironmentInitialized,
)
from unity_gym.side_channels import (
    FloatPropertiesChannel,
    RawBytesChannel,
    SideChannelManager,
    StatsAggregationMethod,
    StatsSideChannel,
    decode_side_channel_records,
)

pytestmark = [pytest.mark.peer, pytest.mark.timeout(120)]

PEER_PYTHON = Path(__file__).resolve().parents[2] / ".peer-venv" / "bin" / "python"

OURS = """
from unity_gym.side_channels import (
    EngineConfigurationChannel, EnvironmentParametersChannel, FloatPropertiesChannel,
    RawBytesChannel, SideChannelManager, StatsSideChannel, EngineConfig,
    DefaultTrainingAnalyticsSideChannel,
)
"""
OFFICIAL = """
from mlagents_envs.side_channel.engine_configuration_channel import (
    EngineConfigurationChannel, EngineConfig)
from mlagents_envs.side_channel.environment_parameters_channel import EnvironmentParametersChannel
from mlagents_envs.side_channel.float_properties_channel import FloatPropertiesChannel
from mlagents_envs.side_channel.raw_bytes_channel import RawBytesChannel
from mlagents_envs.side_channel.side_channel_manager import SideChannelManager
from mlagents_envs.side_channel.stats_side_channel import StatsSideChannel
from mlagents_envs.side_channel import DefaultTrainingAnalyticsSideChannel
"""
SCENARIO = """
import uuid
engine = EngineConfigurationChannel()
params = EnvironmentParametersChannel()
props = FloatPropertiesChannel()
raw = RawBytesChannel(uuid.UUID("00000000-1111-2222-3333-444455556666"))
analytics = DefaultTrainingAnalyticsSideChannel()
manager = SideChannelManager([engine, params, props, raw, analytics])
engine.set_configuration_parameters(width=84, height=84, quality_level=5, time_scale=20.0,
                                    target_frame_rate=-1, capture_frame_rate=60)
engine.set_configuration(EngineConfig.default_config())
params.set_float_parameter("gravity", 9.81)
params.set_uniform_sampler_parameters("mass", 0.5, 2.0, 7)
params.set_gaussian_sampler_parameters("scale", 1.0, 0.1, -5)
params.set_multirangeuniform_sampler_parameters("len", [(1.0, 2.0), (5.0, 7.5)], 42)
props.set_property("speed", 3.25)
raw.send_raw_data(bytearray(b"\\x00\\x01raw"))
analytics.environment_initialized()
first = manager.generate_side_channel_messages()
second = manager.generate_side_channel_messages()
result = {"first": bytes(first).hex(), "second": bytes(second).hex()}
"""
STATS_READER = """
import json, sys
stats = StatsSideChannel()
manager = SideChannelManager([stats])
manager.process_side_channel_message(bytes.fromhex(sys.argv[1]))
print(json.dumps({k: [[v, m.value] for v, m in vals]
                  for k, vals in stats.get_and_reset_stats().items()}))
"""


def run_peer(code: str, *args: str) -> str:
    if not PEER_PYTHON.exists():
        pytest.skip(
            f"reference peer venv missing ({PEER_PYTHON}); build it with "
            "`python benchmarks/peer_venv.py`"
        )
    proc = subprocess.run(
        [str(PEER_PYTHON), "-c", code, *args], capture_output=True, text=True, timeout=100
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def run_ours(code: str) -> dict[str, str]:
    namespace: dict[str, object] = {}
    exec(code, namespace)
    result = namespace["result"]
    assert isinstance(result, dict)
    return result


def analytics_free(data_hex: str) -> list[tuple[uuid.UUID, bytes]]:
    """Records without the analytics one (its version strings differ by design)."""
    analytics_id = uuid.UUID("b664a4a9-d86f-5a5f-95cb-e8353a7e8356")
    return [r for r in decode_side_channel_records(bytes.fromhex(data_hex)) if r[0] != analytics_id]


def test_outgoing_bytes_match_official() -> None:
    printer = "\nimport json\nprint(json.dumps(result))"
    official = json.loads(run_peer(OFFICIAL + SCENARIO + printer))
    ours = run_ours(OURS + SCENARIO)
    assert ours["second"] == official["second"] == ""
    assert analytics_free(ours["first"]) == analytics_free(official["first"])
    assert len(analytics_free(ours["first"])) == 16  # 5 + 5 engine, 4 params, 1 + 1
    # Analytics record: last, same type URL and the same fields apart from version strings.
    ours_any, official_any = any_pb2.Any(), any_pb2.Any()
    ours_any.ParseFromString(decode_side_channel_records(bytes.fromhex(ours["first"]))[-1][1])
    official_any.ParseFromString(
        decode_side_channel_records(bytes.fromhex(official["first"]))[-1][1]
    )
    assert ours_any.type_url == official_any.type_url
    ours_msg, official_msg = TrainingEnvironmentInitialized(), TrainingEnvironmentInitialized()
    ours_msg.ParseFromString(ours_any.value)
    official_msg.ParseFromString(official_any.value)
    for field in ("python_version", "torch_version", "torch_device_type", "num_envs"):
        assert getattr(ours_msg, field) == getattr(official_msg, field), field


def test_official_reader_understands_our_stats_and_properties() -> None:
    """Game-side bytes we frame are read identically by the official Python side."""
    from unity_gym.side_channels import OutgoingMessage, encode_side_channel_records

    payloads = []
    for key, value, method in [("r", 1.5, 0), ("r", 2.5, 3), ("len", 7.0, 1)]:
        msg = OutgoingMessage()
        msg.write_string(key)
        msg.write_float32(value)
        msg.write_int32(method)
        payloads.append(msg.buffer)
    data = encode_side_channel_records([(StatsSideChannel.CHANNEL_ID, p) for p in payloads])
    official = json.loads(run_peer(OFFICIAL + STATS_READER, data.hex()))
    ours_channel = StatsSideChannel()
    SideChannelManager([ours_channel]).process_side_channel_message(data)
    ours = {
        k: [[v, m.value] for v, m in vals] for k, vals in ours_channel.get_and_reset_stats().items()
    }
    assert ours == official == {"r": [[1.5, 0], [2.5, 3]], "len": [[7.0, 1]]}
    assert StatsAggregationMethod(3) is StatsAggregationMethod.HISTOGRAM


def test_round_trip_with_official_float_properties_and_raw_bytes() -> None:
    """Our outgoing bytes, processed by the official manager, and its reply processed by ours."""
    raw_id = "00000000-1111-2222-3333-444455556666"
    props, raw = FloatPropertiesChannel(), RawBytesChannel(uuid.UUID(raw_id))
    manager = SideChannelManager([props, raw])
    props.set_property("speed", 3.25)
    raw.send_raw_data(b"ping")
    echo = f"""
import sys, uuid
props = FloatPropertiesChannel()
raw = RawBytesChannel(uuid.UUID("{raw_id}"))
manager = SideChannelManager([raw, props])
manager.process_side_channel_message(bytes.fromhex(sys.argv[1]))
got = raw.get_and_clear_received_messages()
props.set_property("seen", props.get_property("speed") * 2)
raw.send_raw_data(bytearray(b"pong:" + got[0]))
print(bytes(manager.generate_side_channel_messages()).hex())
"""
    reply = run_peer(OFFICIAL + echo, manager.generate_side_channel_messages().hex()).strip()
    manager.process_side_channel_message(bytes.fromhex(reply))
    assert raw.get_and_clear_received_messages() == [b"pong:ping"]
    assert props.get_property("seen") == 6.5
