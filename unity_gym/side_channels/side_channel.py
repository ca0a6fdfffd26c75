"""Base class of side channels: user channels subclass :class:`SideChannel` (spec §5)."""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from typing import ClassVar

from unity_gym.exceptions import UnityCommunicationException
from unity_gym.side_channels.messages import IncomingMessage, OutgoingMessage

__all__ = ["OutgoingOnlySideChannel", "SideChannel"]


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


class OutgoingOnlySideChannel(SideChannel):
    """A channel whose messages go from Python to the game only.

    Subclasses name the channel in :attr:`channel_label`; a message from the game on it is a
    protocol violation.
    """

    channel_label: ClassVar[str] = "an outgoing-only"

    def on_message_received(self, msg: IncomingMessage) -> None:
        """Reject the message: the game must not send on this channel.

        Raises:
            UnityCommunicationException: always.
        """
        raise UnityCommunicationException(
            f"The game sent a message on the {self.channel_label} side channel, which only goes "
            "from Python to the game. The game is not speaking the ML-Agents protocol correctly."
        )
