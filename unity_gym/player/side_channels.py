"""The game side of side channels (spec §5): the channels a Unity player registers by default.

* :class:`EngineConfigurationChannel` receives engine settings (time scale, frame rates, ...).
* :class:`EnvironmentParameters` receives parameters: constants or samplers that draw anew on
  every read.
* :class:`StatsRecorder` sends statistics to Python.
* :class:`TrainingAnalyticsChannel` accepts the trainer's analytics and ignores them.
* :class:`SideChannelHub` frames and dispatches records like Unity's ``SideChannelManager``.
"""

from __future__ import annotations

import enum
import logging
import struct
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from google.protobuf import any_pb2

from unity_gym.side_channels.messages import IncomingMessage, OutgoingMessage
from unity_gym.side_channels.side_channel import SideChannel

from .samplers import GaussianSampler, MultiRangeUniformSampler, UniformSampler

__all__ = [
    "ENGINE_CONFIGURATION_CHANNEL_ID",
    "ENVIRONMENT_PARAMETERS_CHANNEL_ID",
    "STATS_CHANNEL_ID",
    "TRAINING_ANALYTICS_CHANNEL_ID",
    "EngineConfigurationChannel",
    "EngineSettings",
    "EnvironmentParameters",
    "SideChannelHub",
    "StandardChannels",
    "StatAggregation",
    "StatsRecorder",
    "TrainingAnalyticsChannel",
]

logger = logging.getLogger("unity_gym.player")

ENGINE_CONFIGURATION_CHANNEL_ID = uuid.UUID("e951342c-4f7e-11ea-b238-784f4387d1f7")
ENVIRONMENT_PARAMETERS_CHANNEL_ID = uuid.UUID("534c891e-810f-11ea-a9d0-822485860400")
STATS_CHANNEL_ID = uuid.UUID("a1d8f7b7-cec8-50f9-b78b-d3e165a78520")
TRAINING_ANALYTICS_CHANNEL_ID = uuid.UUID("b664a4a9-d86f-5a5f-95cb-e8353a7e8356")

_HEADER = struct.Struct("<16si")


@dataclass
class EngineSettings:
    """Engine state a Unity player would hold; defaults are a player's without a trainer.

    ``time_scale`` is clamped to ``>= 1`` as in a player build. ``target_frame_rate`` and
    ``capture_frame_rate`` of ``-1``/``0`` mean "unlimited"/"off".
    """

    width: int = 84
    height: int = 84
    quality_level: int = 5
    time_scale: float = 1.0
    target_frame_rate: int = -1
    capture_frame_rate: int = 0


class EngineConfigurationChannel(SideChannel):
    """Receives engine settings: one message per setting, an int32 type then its payload."""

    def __init__(self, settings: EngineSettings | None = None) -> None:
        super().__init__(ENGINE_CONFIGURATION_CHANNEL_ID)
        self.settings = settings if settings is not None else EngineSettings()

    def on_message_received(self, msg: IncomingMessage) -> None:
        """Apply one setting; an unknown type is logged and ignored."""
        kind = msg.read_int32(-1)
        s = self.settings
        if kind == 0:
            s.width, s.height = msg.read_int32(), msg.read_int32()
            logger.info("engine configuration: screen resolution %dx%d", s.width, s.height)
        elif kind == 1:
            s.quality_level = msg.read_int32()
            logger.info("engine configuration: quality_level=%d", s.quality_level)
        elif kind == 2:
            s.time_scale = max(1.0, msg.read_float32(1.0))
            logger.info("engine configuration: time_scale=%g", s.time_scale)
        elif kind == 3:
            s.target_frame_rate = msg.read_int32(-1)
            logger.info("engine configuration: target_frame_rate=%d", s.target_frame_rate)
        elif kind == 4:
            s.capture_frame_rate = msg.read_int32(0)
            logger.info("engine configuration: capture_frame_rate=%d", s.capture_frame_rate)
        else:
            logger.warning("engine configuration: unknown setting type %d ignored", kind)


class EnvironmentParameters(SideChannel):
    """Environment parameters sent by Python: ``get_with_default`` reads one value.

    A constant (FLOAT) parameter always reads the same value; a sampler draws a new value on
    every read. Callbacks registered with :meth:`register_callback` fire only for FLOAT messages,
    when the message is received. Parameters persist until overwritten.
    """

    def __init__(self) -> None:
        super().__init__(ENVIRONMENT_PARAMETERS_CHANNEL_ID)
        self._generators: dict[str, Callable[[], float]] = {}
        self._callbacks: dict[str, list[Callable[[float], None]]] = {}

    def on_message_received(self, msg: IncomingMessage) -> None:
        """Store a constant or a sampler under its key."""
        key = msg.read_string()
        kind = msg.read_int32(-1)
        if kind == 0:
            value = msg.read_float32()
            self._generators[key] = lambda: value
            logger.info("environment parameter %r = %g", key, value)
            for callback in self._callbacks.get(key, []):
                callback(value)
            return
        if kind != 1:
            logger.warning("environment parameter %r: unknown data type %d ignored", key, kind)
            return
        seed = msg.read_int32()
        sampler = msg.read_int32(-1)
        if sampler == 0:
            low, high = msg.read_float32(), msg.read_float32()
            self._generators[key] = UniformSampler(seed, low, high)
            logger.info("environment parameter %r: uniform [%g, %g], seed %d", key, low, high, seed)
        elif sampler == 1:
            mean, std = msg.read_float32(), msg.read_float32()
            self._generators[key] = GaussianSampler(seed, mean, std)
            logger.info("environment parameter %r: gaussian(%g, %g), seed %d", key, mean, std, seed)
        elif sampler == 2:
            intervals = msg.read_float32_list()
            try:
                self._generators[key] = MultiRangeUniformSampler(seed, intervals)
            except ValueError as exc:
                logger.warning("environment parameter %r ignored: %s", key, exc)
                return
            logger.info("environment parameter %r: multi-range %s, seed %d", key, intervals, seed)
        else:
            logger.warning(
                "environment parameter %r: unknown sampler type %d ignored", key, sampler
            )

    def get_with_default(self, key: str, default: float) -> float:
        """Read ``key`` (a sampler draws a new value), or ``default`` if Python never sent it."""
        generator = self._generators.get(key)
        return float(default) if generator is None else float(generator())

    def read_many(self, key: str, default: float, count: int) -> list[float]:
        """``count`` consecutive reads of ``key``, e.g. one per agent beginning an episode."""
        generator = self._generators.get(key)
        if generator is None:
            return [float(default)] * count
        return [float(generator()) for _ in range(count)]

    def keys(self) -> list[str]:
        """Keys received so far."""
        return list(self._generators)

    def register_callback(self, key: str, callback: Callable[[float], None]) -> None:
        """Call ``callback(value)`` whenever a FLOAT value for ``key`` arrives."""
        self._callbacks.setdefault(key, []).append(callback)


class StatAggregation(enum.IntEnum):
    """How Python aggregates a statistic within a summary period."""

    AVERAGE = 0
    MOST_RECENT = 1
    SUM = 2
    HISTOGRAM = 3


class StatsRecorder(SideChannel):
    """Sends ``(key, value, aggregation)`` statistics to Python (Unity's ``StatsRecorder``)."""

    def __init__(self) -> None:
        super().__init__(STATS_CHANNEL_ID)

    def add(
        self, key: str, value: float, aggregation: StatAggregation = StatAggregation.AVERAGE
    ) -> None:
        """Queue one statistic for the next message to Python."""
        msg = OutgoingMessage()
        msg.write_string(key)
        msg.write_float32(float(value))
        msg.write_int32(int(aggregation))
        self.queue_message_to_send(msg)

    def on_message_received(self, msg: IncomingMessage) -> None:
        """Python never sends on this channel; Unity would throw, log it instead."""
        logger.error("stats channel: unexpected message from Python ignored")


class TrainingAnalyticsChannel(SideChannel):
    """Accepts the trainer's analytics (a ``google.protobuf.Any``) and ignores them."""

    def __init__(self) -> None:
        super().__init__(TRAINING_ANALYTICS_CHANNEL_ID)
        self.received_types: list[str] = []

    def on_message_received(self, msg: IncomingMessage) -> None:
        """Record the payload's type URL; unparsable payloads are ignored."""
        payload = any_pb2.Any()
        try:
            payload.ParseFromString(msg.get_raw_bytes())
        except Exception:  # a malformed payload is ignored like Unity does
            logger.debug("training analytics: unparsable payload ignored")
            return
        self.received_types.append(payload.type_url)
        logger.debug("training analytics received: %s", payload.type_url)


class SideChannelHub:
    """Frames, dispatches and collects side-channel records (Unity's ``SideChannelManager``).

    Records for an unknown GUID are kept until the next incoming message and delivered if a
    matching channel registers meanwhile; otherwise they are logged and dropped.
    """

    def __init__(self, channels: Iterable[SideChannel] = ()) -> None:
        self._channels: dict[uuid.UUID, SideChannel] = {}
        self._pending_unknown: list[tuple[uuid.UUID, bytes]] = []
        for channel in channels:
            self.register(channel)

    def register(self, channel: SideChannel) -> None:
        """Add ``channel``; deliver any cached data that was waiting for its GUID.

        Raises:
            ValueError: if a channel with the same GUID is already registered.
        """
        if channel.channel_id in self._channels:
            raise ValueError(f"a side channel with id {channel.channel_id} is already registered")
        self._channels[channel.channel_id] = channel
        waiting = [p for guid, p in self._pending_unknown if guid == channel.channel_id]
        self._pending_unknown = [
            (g, p) for g, p in self._pending_unknown if g != channel.channel_id
        ]
        for payload in waiting:
            self._deliver(channel, payload)

    def channel(self, channel_id: uuid.UUID) -> SideChannel | None:
        """The registered channel with ``channel_id``, if any."""
        return self._channels.get(channel_id)

    def process_incoming(self, data: bytes) -> None:
        """Dispatch every record of ``data`` to its channel, in order."""
        for guid, _payload in self._pending_unknown:
            logger.warning("Unknown side channel data received (channel id %s), dropped", guid)
        self._pending_unknown = []
        offset = 0
        while offset < len(data):
            if offset + _HEADER.size > len(data):
                logger.error("side channel data truncated (%d stray bytes), dropped", len(data))
                return
            guid_bytes, size = _HEADER.unpack_from(data, offset)
            offset += _HEADER.size
            if size < 0 or offset + size > len(data):
                logger.error("side channel record of %d bytes exceeds the message, dropped", size)
                return
            payload = bytes(data[offset : offset + size])
            offset += size
            guid = uuid.UUID(bytes_le=guid_bytes)
            channel = self._channels.get(guid)
            if channel is None:
                self._pending_unknown.append((guid, payload))
            else:
                self._deliver(channel, payload)

    @staticmethod
    def _deliver(channel: SideChannel, payload: bytes) -> None:
        try:
            channel.on_message_received(IncomingMessage(payload))
        except Exception:  # a faulty handler must not stop the game, as in Unity
            logger.exception("side channel %s failed to handle a message", channel.channel_id)

    def collect_outgoing(self) -> bytes:
        """Frame and return every queued message (channels in registration order), then clear."""
        parts: list[bytes] = []
        for channel in self._channels.values():
            for payload in channel.message_queue:
                parts.append(_HEADER.pack(channel.channel_id.bytes_le, len(payload)))
                parts.append(payload)
            channel.message_queue.clear()
        return b"".join(parts)

    def discard_outgoing(self) -> None:
        """Drop queued messages (no trainer to send them to)."""
        for channel in self._channels.values():
            channel.message_queue.clear()


@dataclass
class StandardChannels:
    """The channels a Unity player registers by default."""

    engine: EngineConfigurationChannel
    analytics: TrainingAnalyticsChannel
    parameters: EnvironmentParameters
    stats: StatsRecorder

    @classmethod
    def create(cls) -> StandardChannels:
        """Fresh channels with default state."""
        return cls(
            EngineConfigurationChannel(),
            TrainingAnalyticsChannel(),
            EnvironmentParameters(),
            StatsRecorder(),
        )

    def in_registration_order(self) -> tuple[SideChannel, ...]:
        """Unity's order: engine configuration, analytics, parameters, stats."""
        return (self.engine, self.analytics, self.parameters, self.stats)
