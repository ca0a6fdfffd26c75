"""Float properties channel: a ``str → float`` dict kept in sync in both directions (spec §5.3)."""

from __future__ import annotations

import uuid

from unity_gym.exceptions import UnitySideChannelException
from unity_gym.side_channels.messages import IncomingMessage, OutgoingMessage
from unity_gym.side_channels.side_channel import SideChannel

__all__ = ["FloatPropertiesChannel"]


class FloatPropertiesChannel(SideChannel):
    """Shares float properties with the game; payload is string key then float32 value.

    Values set here are sent to the game and recorded locally; values the game sends overwrite the
    local copy.

    Args:
        channel_id: channel GUID, the official default when ``None``.
    """

    DEFAULT_CHANNEL_ID = uuid.UUID("60ccf7d0-4f7e-11ea-b238-784f4387d1f7")

    def __init__(self, channel_id: uuid.UUID | None = None) -> None:
        super().__init__(self.DEFAULT_CHANNEL_ID if channel_id is None else channel_id)
        self._properties: dict[str, float] = {}

    def on_message_received(self, msg: IncomingMessage) -> None:
        """Store the property the game sent."""
        key = msg.read_string()
        self._properties[key] = msg.read_float32()

    def set_property(self, key: str, value: float) -> None:
        """Record ``key = value`` and queue it for the game.

        Raises:
            UnitySideChannelException: if ``key`` is not an ASCII string.
        """
        if not isinstance(key, str) or not key.isascii():
            raise UnitySideChannelException(
                f"Float property key must be an ASCII string (the game reads ASCII), got {key!r}."
            )
        msg = OutgoingMessage()
        msg.write_string(key)
        msg.write_float32(value)
        self._properties[key] = float(value)
        self.queue_message_to_send(msg)

    def get_property(self, key: str) -> float | None:
        """The last known value of ``key``, or ``None`` if it was never set by either side."""
        return self._properties.get(key)

    def list_properties(self) -> list[str]:
        """Names of all known properties, in first-set order."""
        return list(self._properties)

    def get_property_dict_copy(self) -> dict[str, float]:
        """A copy of all known properties."""
        return dict(self._properties)
