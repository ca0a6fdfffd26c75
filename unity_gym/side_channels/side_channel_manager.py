"""Multiplexing of side channels inside the ``side_channel`` bytes of each message (spec §5.1).

The field is a concatenation of records ``GUID (16 bytes, .NET order) | int32 LE length | payload``.
The two framing functions are shared by the Python side (:class:`SideChannelManager`) and by the
headless player's Unity side, so both ends agree on the format by construction.
"""

from __future__ import annotations

import logging
import struct
import uuid
from collections.abc import Iterable, Sequence

from unity_gym.exceptions import UnityEnvironmentException, UnitySideChannelException
from unity_gym.side_channels.messages import IncomingMessage
from unity_gym.side_channels.side_channel import SideChannel

__all__ = [
    "SideChannelFramingError",
    "SideChannelManager",
    "decode_side_channel_records",
    "encode_side_channel_records",
]

logger = logging.getLogger(__name__)

_GUID_SIZE = 16
_HEADER = struct.Struct("<16si")


class SideChannelFramingError(UnitySideChannelException, UnityEnvironmentException):
    """The ``side_channel`` bytes are not a well-formed sequence of records.

    It is both a :class:`UnitySideChannelException` and, like the official package raises for the
    same fault, a :class:`UnityEnvironmentException`, so either ``except`` clause catches it.
    """


def encode_side_channel_records(records: Iterable[tuple[uuid.UUID, bytes]]) -> bytes:
    """Frame ``(channel_id, payload)`` pairs into the wire format, in the given order.

    Args:
        records: channel GUIDs with their payloads; payloads may be empty.

    Returns:
        The concatenated records (empty bytes for no records).
    """
    out = bytearray()
    for channel_id, payload in records:
        out += _HEADER.pack(channel_id.bytes_le, len(payload))
        out += payload
    return bytes(out)


def decode_side_channel_records(data: bytes) -> list[tuple[uuid.UUID, bytes]]:
    """Split wire-format side-channel bytes into ``(channel_id, payload)`` pairs, in order.

    Raises:
        SideChannelFramingError: if a record header or payload is cut short or has a negative
            length (usually a peer speaking another protocol version).
    """
    view = memoryview(data)
    records: list[tuple[uuid.UUID, bytes]] = []
    offset = 0
    total = len(view)
    while offset < total:
        if total - offset < _HEADER.size:
            raise SideChannelFramingError(
                f"Side-channel data is truncated: {total - offset} byte(s) left at offset "
                f"{offset}, "
                f"but a record header needs {_HEADER.size} (16-byte GUID + int32 length). "
                "Check that both sides use the same ML-Agents protocol version (1.5.0)."
            )
        guid_bytes, length = _HEADER.unpack_from(view, offset)
        channel_id = uuid.UUID(bytes_le=guid_bytes)
        offset += _HEADER.size
        if length < 0 or offset + length > total:
            raise SideChannelFramingError(
                f"Side-channel record for channel {channel_id} announces {length} payload byte(s) "
                f"but only {total - offset} remain. The sender wrote a malformed message; check "
                "that both sides use the same ML-Agents protocol version (1.5.0)."
            )
        records.append((channel_id, bytes(view[offset : offset + length])))
        offset += length
    return records


class SideChannelManager:
    """Routes received records to their channels and gathers the channels' queued messages.

    Args:
        side_channels: the channels to serve; their order is the order in which their messages are
            sent. ``None`` means no channel.

    Raises:
        UnitySideChannelException: if two channels share a channel id.
    """

    def __init__(self, side_channels: Sequence[SideChannel] | None = None) -> None:
        self._channels: dict[uuid.UUID, SideChannel] = {}
        for channel in side_channels or ():
            if channel.channel_id in self._channels:
                raise UnitySideChannelException(
                    f"Two side channels use the same channel id {channel.channel_id} "
                    f"({type(self._channels[channel.channel_id]).__name__} and "
                    f"{type(channel).__name__}). Give each channel a distinct id."
                )
            self._channels[channel.channel_id] = channel
        self._warned_unknown: set[uuid.UUID] = set()

    @property
    def side_channels(self) -> dict[uuid.UUID, SideChannel]:
        """The registered channels by id, in registration order (a copy)."""
        return dict(self._channels)

    def process_side_channel_message(self, data: bytes) -> None:
        """Deliver every record of ``data`` to its channel's ``on_message_received``.

        Records for an unregistered channel id are dropped, with one warning per id.

        Raises:
            SideChannelFramingError: if ``data`` is malformed (nothing is delivered then).
        """
        for channel_id, payload in decode_side_channel_records(data):
            channel = self._channels.get(channel_id)
            if channel is None:
                if channel_id not in self._warned_unknown:
                    self._warned_unknown.add(channel_id)
                    logger.warning(
                        "Unknown side channel data received for channel id %s; dropping it. "
                        "Pass a SideChannel with this id to the environment to receive it.",
                        channel_id,
                    )
                continue
            channel.on_message_received(IncomingMessage(payload))

    def generate_side_channel_messages(self) -> bytes:
        """Frame every queued message, channels in registration order, each queue FIFO.

        The channels' queues are emptied.
        """
        records: list[tuple[uuid.UUID, bytes]] = []
        for channel_id, channel in self._channels.items():
            queued = channel.message_queue
            if queued:
                channel.message_queue = []
                records.extend((channel_id, payload) for payload in queued)
        return encode_side_channel_records(records)
