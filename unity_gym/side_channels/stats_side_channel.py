"""Stats channel: the game reports ``(key, value, aggregation)`` statistics (spec §5.3)."""

from __future__ import annotations

import uuid
from enum import Enum

from unity_gym.exceptions import UnitySideChannelException
from unity_gym.side_channels.messages import IncomingMessage
from unity_gym.side_channels.side_channel import SideChannel

__all__ = ["EnvironmentStats", "StatList", "StatsAggregationMethod", "StatsSideChannel"]


class StatsAggregationMethod(Enum):
    """How the trainer combines the values a key received during one summary period."""

    AVERAGE = 0
    """Report the mean of the values."""
    MOST_RECENT = 1
    """Report the last value only."""
    SUM = 2
    """Report the sum of the values."""
    HISTOGRAM = 3
    """Report all values as a histogram."""


StatList = list[tuple[float, StatsAggregationMethod]]
EnvironmentStats = dict[str, StatList]


class StatsSideChannel(SideChannel):
    """Game→Python channel accumulating statistics until :meth:`get_and_reset_stats`.

    Payload: string key, float32 value, int32 aggregation method.
    """

    CHANNEL_ID = uuid.UUID("a1d8f7b7-cec8-50f9-b78b-d3e165a78520")
    """``uuid5(NAMESPACE_URL, "com.unity.ml-agents/StatsSideChannel")``."""

    def __init__(self) -> None:
        super().__init__(self.CHANNEL_ID)
        self.stats: EnvironmentStats = {}

    def on_message_received(self, msg: IncomingMessage) -> None:
        """Append the received value to its key's list.

        Raises:
            UnitySideChannelException: if the aggregation method is not one of the four known.
        """
        key = msg.read_string()
        value = msg.read_float32()
        code = msg.read_int32()
        try:
            method = StatsAggregationMethod(code)
        except ValueError:
            known = ", ".join(f"{m.value} {m.name}" for m in StatsAggregationMethod)
            raise UnitySideChannelException(
                f"Stat {key!r} arrived with unknown aggregation method {code} (known: {known}). "
                "The game uses a newer or incompatible StatsRecorder."
            ) from None
        self.stats.setdefault(key, []).append((value, method))

    def get_and_reset_stats(self) -> EnvironmentStats:
        """Return every stat received since the previous call, then start a new collection.

        Returns:
            ``{key: [(value, method), ...]}`` with values in arrival order.
        """
        collected, self.stats = self.stats, {}
        return collected
