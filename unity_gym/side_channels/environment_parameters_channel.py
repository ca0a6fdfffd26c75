"""Environment parameters channel: constants and samplers the game reads by key (spec §5.3).

Payload: string key, int32 data type, then a float32 (FLOAT) or ``int32 seed, int32 sampler type``
followed by the sampler's arguments (SAMPLER). For a sampler, the game draws a new value every time
it reads the key.
"""

from __future__ import annotations

import math
import numbers
import operator
import uuid
from collections.abc import Iterable, Sequence
from enum import IntEnum
from typing import Any

from unity_gym.exceptions import UnitySideChannelException
from unity_gym.side_channels.messages import OutgoingMessage
from unity_gym.side_channels.side_channel import OutgoingOnlySideChannel

__all__ = ["EnvironmentParametersChannel"]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _finite(what: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise UnitySideChannelException(f"{what} must be a finite number, got {value!r}.")
    return float(value)


def _seed(value: int) -> int:
    try:
        if isinstance(value, bool):
            raise TypeError
        seed = operator.index(value)
    except TypeError:
        raise UnitySideChannelException(
            f"Sampler seed must be an int, got {value!r} ({type(value).__name__})."
        ) from None
    if not _INT32_MIN <= seed <= _INT32_MAX:
        raise UnitySideChannelException(
            f"Sampler seed {seed} does not fit in a 32-bit signed integer."
        )
    return seed


def _as_list(value: object) -> list[Any] | None:
    """``value`` as a list if it is a non-string iterable, else ``None``."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        return None
    return list(value)


class EnvironmentParametersChannel(OutgoingOnlySideChannel):
    """Python→game channel setting named parameters (``Academy.EnvironmentParameters``).

    Every setter validates its arguments and queues nothing when they are invalid. The game never
    sends on this channel; receiving anything raises.
    """

    CHANNEL_ID = uuid.UUID("534c891e-810f-11ea-a9d0-822485860400")

    class EnvironmentDataTypes(IntEnum):
        """The int32 that follows the key."""

        FLOAT = 0
        SAMPLER = 1

    class SamplerTypes(IntEnum):
        """The int32 that follows the seed of a SAMPLER message."""

        UNIFORM = 0
        GAUSSIAN = 1
        MULTIRANGEUNIFORM = 2

    channel_label = "environment parameters"

    def __init__(self) -> None:
        super().__init__(self.CHANNEL_ID)

    def set_float_parameter(self, key: str, value: float) -> None:
        """Make the game read the constant ``value`` for ``key``.

        Raises:
            UnitySideChannelException: if ``key`` is not a non-empty ASCII string or ``value`` is
                not finite.
        """
        msg = self._start(key, self.EnvironmentDataTypes.FLOAT)
        msg.write_float32(_finite(f"Value of parameter {key!r}", value))
        self.queue_message_to_send(msg)

    def set_uniform_sampler_parameters(
        self, key: str, min_value: float, max_value: float, seed: int
    ) -> None:
        """Make the game sample ``key`` uniformly from ``[min_value, max_value)``.

        Raises:
            UnitySideChannelException: if ``min_value > max_value``, a bound is not finite, the
                seed is not an int32 or the key is invalid.
        """
        low = _finite(f"min_value of parameter {key!r}", min_value)
        high = _finite(f"max_value of parameter {key!r}", max_value)
        if low > high:
            raise UnitySideChannelException(
                f"Uniform sampler for {key!r}: min_value {low} is greater than max_value {high}. "
                "Swap them."
            )
        msg = self._start_sampler(key, seed, self.SamplerTypes.UNIFORM)
        msg.write_float32(low)
        msg.write_float32(high)
        self.queue_message_to_send(msg)

    def set_gaussian_sampler_parameters(
        self, key: str, mean: float, st_dev: float, seed: int
    ) -> None:
        """Make the game sample ``key`` from a normal distribution.

        Raises:
            UnitySideChannelException: if ``st_dev`` is negative, a value is not finite, the seed
                is not an int32 or the key is invalid.
        """
        mu = _finite(f"mean of parameter {key!r}", mean)
        sigma = _finite(f"st_dev of parameter {key!r}", st_dev)
        if sigma < 0:
            raise UnitySideChannelException(
                f"Gaussian sampler for {key!r}: st_dev must be >= 0, got {sigma}."
            )
        msg = self._start_sampler(key, seed, self.SamplerTypes.GAUSSIAN)
        msg.write_float32(mu)
        msg.write_float32(sigma)
        self.queue_message_to_send(msg)

    def set_multirangeuniform_sampler_parameters(
        self, key: str, intervals: Sequence[tuple[float, float]], seed: int
    ) -> None:
        """Make the game pick an interval (weighted by its length) and sample uniformly in it.

        Args:
            key: parameter name.
            intervals: ``[(min0, max0), (min1, max1), ...]``, at least one, each ``min <= max``.
            seed: int32 seed of the game-side random generators.

        Raises:
            UnitySideChannelException: if ``intervals`` is empty or an interval is not a pair of
                finite numbers with ``min <= max``, or the seed or key is invalid.
        """
        pairs = _as_list(intervals)
        if pairs is None:
            raise UnitySideChannelException(
                f"Multi-range sampler for {key!r}: intervals must be a list of (min, max) pairs, "
                f"got {intervals!r}."
            )
        if not pairs:
            raise UnitySideChannelException(
                f"Multi-range sampler for {key!r}: intervals is empty; "
                "give at least one (min, max) pair."
            )
        flat: list[float] = []
        for index, item in enumerate(pairs):
            interval = _as_list(item)
            if interval is None or len(interval) != 2:
                raise UnitySideChannelException(
                    f"Multi-range sampler for {key!r}: interval {index} must be a (min, max) "
                    f"pair, got {item!r}."
                )
            low = _finite(f"Interval {index} min of parameter {key!r}", interval[0])
            high = _finite(f"Interval {index} max of parameter {key!r}", interval[1])
            if low > high:
                raise UnitySideChannelException(
                    f"Multi-range sampler for {key!r}: interval {index} has min {low} greater "
                    f"than max {high}. Swap them."
                )
            flat += (low, high)
        msg = self._start_sampler(key, seed, self.SamplerTypes.MULTIRANGEUNIFORM)
        msg.write_float32_list(flat)
        self.queue_message_to_send(msg)

    def _start(self, key: str, data_type: int) -> OutgoingMessage:
        if not isinstance(key, str) or not key:
            raise UnitySideChannelException(
                f"Environment parameter key must be a non-empty string, got {key!r}."
            )
        if not key.isascii():
            raise UnitySideChannelException(
                f"Environment parameter key {key!r} is not ASCII; the game can only read ASCII "
                "keys. Rename the parameter."
            )
        msg = OutgoingMessage()
        msg.write_string(key)
        msg.write_int32(data_type)
        return msg

    def _start_sampler(self, key: str, seed: int, sampler: int) -> OutgoingMessage:
        checked_seed = _seed(seed)
        msg = self._start(key, self.EnvironmentDataTypes.SAMPLER)
        msg.write_int32(checked_seed)
        msg.write_int32(sampler)
        return msg
