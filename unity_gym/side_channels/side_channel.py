"""Base class of side channels: user channels subclass :class:`SideChannel` (spec §5)."""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod

from unity_gym.side_channels.messages import IncomingMessage, OutgoingMessage

__all__ = ["SideChannel"]


class SideChannel(ABC):
    """A typed channel multiplexed inside the ``side_channel`` bytes of each message.

    Subclasses implement :meth:`on_message_received` and call :meth:`queue_message_to_send`;
    queued messages travel with the next message to the game, in FIFO order.

    Args:
        channel_id: the channel GUID, shared with the game-side channel.
    """

    def __init__(self, channel_id: uuid.UUID) -> None:
        self._channel_id = channel_id
        self.message_queue: list[bytes] = []

    @property
    def channel_id(self) -> uuid.UUID:
        """The GUID identifying this channel on the wire."""
        return self._channel_id

    def queue_message_to_send(self, msg: OutgoingMessage) -> None:
        """Queue ``msg`` for the next message to the game."""
        self.message_queue.append(msg.buffer)

    @abstractmethod
    def on_message_received(self, msg: IncomingMessage) -> None:
        """Handle one payload the game sent on this channel."""
