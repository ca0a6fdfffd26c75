"""Raw bytes channel: opaque payloads in both directions, for custom protocols (spec §5.3)."""

from __future__ import annotations

import uuid

from unity_gym.side_channels.messages import IncomingMessage, OutgoingMessage
from unity_gym.side_channels.side_channel import SideChannel

__all__ = ["RawBytesChannel"]


class RawBytesChannel(SideChannel):
    """Sends and collects uninterpreted byte payloads on a user-chosen channel id."""

    def __init__(self, channel_id: uuid.UUID) -> None:
        super().__init__(channel_id)
        self._received: list[bytes] = []

    def on_message_received(self, msg: IncomingMessage) -> None:
        """Keep the payload for :meth:`get_and_clear_received_messages`."""
        self._received.append(msg.get_raw_bytes())

    def get_and_clear_received_messages(self) -> list[bytes]:
        """Payloads received since the previous call, oldest first."""
        received, self._received = self._received, []
        return received

    def send_raw_data(self, data: bytes | bytearray | memoryview) -> None:
        """Queue ``data`` unchanged as one message for the game."""
        msg = OutgoingMessage()
        msg.set_raw_bytes(bytes(data))
        self.queue_message_to_send(msg)
