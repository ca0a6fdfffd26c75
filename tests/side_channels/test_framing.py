"""Record framing of the ``side_channel`` bytes and the manager that routes records (spec §5.1)."""

from __future__ import annotations

import logging
import uuid

import pytest

from unity_gym.exceptions import UnityEnvironmentException, UnitySideChannelException
from unity_gym.side_channels import (
    EngineConfigurationChannel,
    FloatPropertiesChannel,
    IncomingMessage,
    OutgoingMessage,
    RawBytesChannel,
    SideChannel,
    SideChannelFramingError,
    SideChannelManager,
    decode_side_channel_records,
    encode_side_channel_records,
)

ENGINE_ID = uuid.UUID("e951342c-4f7e-11ea-b238-784f4387d1f7")


class RecordingChannel(SideChannel):
    """A user channel that keeps what it receives."""

    def __init__(self, channel_id: uuid.UUID) -> None:
        super().__init__(channel_id)
        self.received: list[bytes] = []

    def on_message_received(self, msg: IncomingMessage) -> None:
        self.received.append(msg.get_raw_bytes())

    def send(self, payload: bytes) -> None:
        msg = OutgoingMessage()
        msg.set_raw_bytes(payload)
        self.queue_message_to_send(msg)


def test_guid_is_written_in_dotnet_byte_order() -> None:
    data = encode_side_channel_records([(ENGINE_ID, b"")])
    assert data.hex(" ") == "2c 34 51 e9 7e 4f ea 11 b2 38 78 4f 43 87 d1 f7 00 00 00 00"


def test_record_layout_guid_length_payload() -> None:
    data = encode_side_channel_records([(ENGINE_ID, b"\x01\x02\x03")])
    assert data[16:20] == (3).to_bytes(4, "little")
    assert data[20:] == b"\x01\x02\x03"
    assert len(data) == 23


def test_encode_decode_round_trip_keeps_order_and_empty_payloads() -> None:
    a, b = uuid.uuid4(), uuid.uuid4()
    records = [(a, b"first"), (b, b""), (a, b"second" * 100)]
    assert decode_side_channel_records(encode_side_channel_records(records)) == records


def test_empty_data_has_no_records() -> None:
    assert encode_side_channel_records([]) == b""
    assert decode_side_channel_records(b"") == []


@pytest.mark.parametrize("cut", [1, 15, 16, 19, 21, 24])
def test_truncated_data_raises_clear_error(cut: int) -> None:
    data = encode_side_channel_records([(ENGINE_ID, b"12345")])  # 25 bytes
    with pytest.raises(SideChannelFramingError, match=r"truncated|announces") as info:
        decode_side_channel_records(data[:cut])
    # Catchable both as the side-channel error and as the official package's exception type.
    assert isinstance(info.value, UnitySideChannelException)
    assert isinstance(info.value, UnityEnvironmentException)
    assert "protocol version" in str(info.value)


def test_negative_length_is_rejected() -> None:
    data = ENGINE_ID.bytes_le + (-1).to_bytes(4, "little", signed=True)
    with pytest.raises(SideChannelFramingError, match="-1 payload"):
        decode_side_channel_records(data)


def test_manager_rejects_duplicate_ids_naming_the_id() -> None:
    with pytest.raises(UnitySideChannelException, match=str(ENGINE_ID)):
        SideChannelManager([EngineConfigurationChannel(), RecordingChannel(ENGINE_ID)])


def test_manager_routes_records_to_channels_in_order() -> None:
    first, second = RecordingChannel(uuid.uuid4()), RecordingChannel(uuid.uuid4())
    manager = SideChannelManager([first, second])
    data = encode_side_channel_records(
        [(second.channel_id, b"s1"), (first.channel_id, b"f1"), (second.channel_id, b"s2")]
    )
    manager.process_side_channel_message(data)
    assert first.received == [b"f1"]
    assert second.received == [b"s1", b"s2"]


def test_manager_drops_unknown_channel_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    known = RecordingChannel(uuid.uuid4())
    unknown_id = uuid.uuid4()
    manager = SideChannelManager([known])
    data = encode_side_channel_records(
        [(unknown_id, b"x"), (known.channel_id, b"k"), (unknown_id, b"y")]
    )
    with caplog.at_level(logging.WARNING):
        manager.process_side_channel_message(data)
        manager.process_side_channel_message(data)
    assert known.received == [b"k", b"k"]
    warnings = [r for r in caplog.records if str(unknown_id) in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].levelno == logging.WARNING


def test_manager_malformed_data_delivers_nothing() -> None:
    known = RecordingChannel(uuid.uuid4())
    manager = SideChannelManager([known])
    good = encode_side_channel_records([(known.channel_id, b"ok")])
    with pytest.raises(SideChannelFramingError):
        manager.process_side_channel_message(good + good[:10])
    assert known.received == []


def test_generate_orders_by_registration_then_fifo_and_clears_queues() -> None:
    first, second = RecordingChannel(uuid.uuid4()), RecordingChannel(uuid.uuid4())
    manager = SideChannelManager([first, second])
    second.send(b"s1")
    first.send(b"f1")
    second.send(b"s2")
    first.send(b"f2")
    data = manager.generate_side_channel_messages()
    assert decode_side_channel_records(data) == [
        (first.channel_id, b"f1"),
        (first.channel_id, b"f2"),
        (second.channel_id, b"s1"),
        (second.channel_id, b"s2"),
    ]
    assert first.message_queue == [] and second.message_queue == []
    assert manager.generate_side_channel_messages() == b""


def test_manager_without_channels() -> None:
    manager = SideChannelManager(None)
    assert manager.generate_side_channel_messages() == b""
    manager.process_side_channel_message(b"")
    assert manager.side_channels == {}


def test_two_managers_talk_through_the_framing() -> None:
    """Python-side manager → bytes → "game-side" manager, and back."""
    channel_id = uuid.uuid4()
    python_raw, game_raw = RawBytesChannel(channel_id), RawBytesChannel(channel_id)
    python_props, game_props = FloatPropertiesChannel(), FloatPropertiesChannel()
    python_side = SideChannelManager([python_raw, python_props])
    game_side = SideChannelManager([game_props, game_raw])

    python_raw.send_raw_data(b"\x00\xffhello")
    python_props.set_property("speed", 2.5)
    game_side.process_side_channel_message(python_side.generate_side_channel_messages())
    assert game_raw.get_and_clear_received_messages() == [b"\x00\xffhello"]
    assert game_props.get_property("speed") == 2.5

    game_props.set_property("score", -1.0)
    game_raw.send_raw_data(bytearray(b"back"))
    python_side.process_side_channel_message(game_side.generate_side_channel_messages())
    assert python_raw.get_and_clear_received_messages() == [b"back"]
    assert python_props.get_property_dict_copy() == {"speed": 2.5, "score": -1.0}
