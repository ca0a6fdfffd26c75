"""Engine configuration channel: screen size, quality, time scale and frame rates (spec §5.3)."""

from __future__ import annotations

import math
import numbers
import operator
import uuid
from enum import IntEnum
from typing import NamedTuple

from unity_gym.exceptions import UnitySideChannelException
from unity_gym.side_channels.messages import OutgoingMessage
from unity_gym.side_channels.side_channel import OutgoingOnlySideChannel

__all__ = ["EngineConfig", "EngineConfigurationChannel"]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


class EngineConfig(NamedTuple):
    """A full engine configuration; ``None`` fields are left unchanged in the game."""

    width: int | None
    height: int | None
    quality_level: int | None
    time_scale: float | None
    target_frame_rate: int | None
    capture_frame_rate: int | None

    @staticmethod
    def default_config() -> EngineConfig:
        """The official package's defaults: 80x80, quality 1, time scale 20, -1 fps, capture 60."""
        return EngineConfig(80, 80, 1, 20.0, -1, 60)


def _checked_int32(name: str, value: int) -> int:
    try:
        if isinstance(value, bool):
            raise TypeError
        value = operator.index(value)
    except TypeError:
        raise UnitySideChannelException(
            f"Engine setting {name} must be an int, got {value!r} ({type(value).__name__})."
        ) from None
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise UnitySideChannelException(
            f"Engine setting {name}={value} does not fit in a 32-bit signed integer."
        )
    return value


def _checked_float(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise UnitySideChannelException(
            f"Engine setting {name} must be a finite number, got {value!r}."
        )
    return float(value)


class EngineConfigurationChannel(OutgoingOnlySideChannel):
    """Python→game channel changing engine settings; one message per setting.

    The game never sends on this channel; receiving anything raises.
    """

    CHANNEL_ID = uuid.UUID("e951342c-4f7e-11ea-b238-784f4387d1f7")

    class ConfigurationType(IntEnum):
        """The int32 tag that starts each message."""

        SCREEN_RESOLUTION = 0
        QUALITY_LEVEL = 1
        TIME_SCALE = 2
        TARGET_FRAME_RATE = 3
        CAPTURE_FRAME_RATE = 4

    channel_label = "engine configuration"

    def __init__(self) -> None:
        super().__init__(self.CHANNEL_ID)

    def set_configuration_parameters(
        self,
        width: int | None = None,
        height: int | None = None,
        quality_level: int | None = None,
        time_scale: float | None = None,
        target_frame_rate: int | None = None,
        capture_frame_rate: int | None = None,
    ) -> None:
        """Queue one message per given setting, in the order of the parameters.

        Args:
            width: window width in pixels; must come with ``height``.
            height: window height in pixels; must come with ``width``.
            quality_level: index into the game's quality settings.
            time_scale: simulation speed multiplier (Unity clamps it to at least 1).
            target_frame_rate: frames per second the game aims for; -1 = as fast as possible.
            capture_frame_rate: fixed frame rate simulation time advances at, regardless of the
                real frame rate.

        Raises:
            UnitySideChannelException: if only one of width/height is given or a value has the
                wrong type or range. Nothing is queued then.
        """
        if (width is None) != (height is None):
            raise UnitySideChannelException(
                "Screen resolution needs both width and height; "
                f"got width={width!r}, height={height!r}. Pass both or neither."
            )
        messages: list[OutgoingMessage] = []
        kind = self.ConfigurationType
        if width is not None and height is not None:
            msg = OutgoingMessage()
            msg.write_int32(kind.SCREEN_RESOLUTION)
            msg.write_int32(_checked_int32("width", width))
            msg.write_int32(_checked_int32("height", height))
            messages.append(msg)
        if quality_level is not None:
            messages.append(self._int_message(kind.QUALITY_LEVEL, "quality_level", quality_level))
        if time_scale is not None:
            msg = OutgoingMessage()
            msg.write_int32(kind.TIME_SCALE)
            msg.write_float32(_checked_float("time_scale", time_scale))
            messages.append(msg)
        if target_frame_rate is not None:
            messages.append(
                self._int_message(kind.TARGET_FRAME_RATE, "target_frame_rate", target_frame_rate)
            )
        if capture_frame_rate is not None:
            messages.append(
                self._int_message(kind.CAPTURE_FRAME_RATE, "capture_frame_rate", capture_frame_rate)
            )
        for msg in messages:
            self.queue_message_to_send(msg)

    def set_configuration(self, config: EngineConfig) -> None:
        """Queue the non-``None`` settings of ``config`` (same checks as the method above)."""
        self.set_configuration_parameters(**config._asdict())

    @staticmethod
    def _int_message(kind: int, name: str, value: int) -> OutgoingMessage:
        msg = OutgoingMessage()
        msg.write_int32(kind)
        msg.write_int32(_checked_int32(name, value))
        return msg
