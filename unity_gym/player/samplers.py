"""Environment-parameter samplers, drawing like the Unity package does (spec §5.3).

Unity builds every sampler on a seeded ``System.Random``; :class:`DotNetRandom` reproduces that
generator (Knuth's subtractive method, the seeded algorithm of .NET) so that a sampler sent by
Python yields the same sequence here as in a real player. Each read of a sampled parameter draws a
new value.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

__all__ = [
    "DotNetRandom",
    "GaussianSampler",
    "MultiRangeUniformSampler",
    "UniformSampler",
]

_MBIG = 2147483647
_MSEED = 161803398


class DotNetRandom:
    """``System.Random(seed)``: ``next_double()`` matches .NET's ``NextDouble()``."""

    def __init__(self, seed: int) -> None:
        seed = int(seed)
        subtraction = _MBIG if seed == -(2**31) else abs(seed)
        state = [0] * 56
        mj = _MSEED - subtraction
        state[55] = mj
        mk = 1
        for i in range(1, 55):
            ii = (21 * i) % 55
            state[ii] = mk
            mk = mj - mk
            if mk < 0:
                mk += _MBIG
            mj = state[ii]
        for _ in range(4):
            for i in range(1, 56):
                state[i] -= state[1 + (i + 30) % 55]
                if state[i] < 0:
                    state[i] += _MBIG
        self._state = state
        self._inext = 0
        self._inextp = 21

    def next_sample(self) -> int:
        """Next raw sample in ``[0, 2**31 - 1)``."""
        inext = self._inext + 1
        if inext >= 56:
            inext = 1
        inextp = self._inextp + 1
        if inextp >= 56:
            inextp = 1
        value = self._state[inext] - self._state[inextp]
        if value == _MBIG:
            value -= 1
        if value < 0:
            value += _MBIG
        self._state[inext] = value
        self._inext = inext
        self._inextp = inextp
        return value

    def next_double(self) -> float:
        """Uniform double in ``[0, 1)``."""
        return self.next_sample() * (1.0 / _MBIG)


class UniformSampler:
    """``min + NextDouble() * (max - min)`` with ``System.Random(seed)``."""

    def __init__(self, seed: int, minimum: float, maximum: float) -> None:
        self._random = DotNetRandom(seed)
        self._min = minimum
        self._max = maximum

    def __call__(self) -> float:
        """Draw one value."""
        return self._min + self._random.next_double() * (self._max - self._min)


class GaussianSampler:
    """Marsaglia polar method on ``System.Random(seed)``; the second value is cached."""

    def __init__(self, seed: int, mean: float, stddev: float) -> None:
        self._random = DotNetRandom(seed)
        self._mean = mean
        self._stddev = stddev
        self._spare: float | None = None

    def __call__(self) -> float:
        """Draw one value."""
        if self._spare is not None:
            value, self._spare = self._spare, None
            return self._mean + self._stddev * value
        while True:
            u = 2.0 * self._random.next_double() - 1.0
            v = 2.0 * self._random.next_double() - 1.0
            s = u * u + v * v
            if 0.0 < s < 1.0:
                break
        factor = math.sqrt(-2.0 * math.log(s) / s)
        self._spare = v * factor
        return self._mean + self._stddev * u * factor


class MultiRangeUniformSampler:
    """Pick an interval with probability proportional to its length, then uniform inside it.

    Args:
        seed: seeds the in-interval draw (``System.Random(seed)``); the interval choice uses
            ``System.Random(seed + 1)``.
        intervals: flat ``[min0, max0, min1, max1, ...]``.

    Raises:
        ValueError: if ``intervals`` is empty or has an odd length.
    """

    def __init__(self, seed: int, intervals: Sequence[float]) -> None:
        if not intervals or len(intervals) % 2:
            raise ValueError(
                f"a multi-range sampler needs [min0, max0, min1, max1, ...], got {list(intervals)}"
            )
        self._ranges = [(intervals[i], intervals[i + 1]) for i in range(0, len(intervals), 2)]
        cumulative: list[float] = []
        total = 0.0
        for low, high in self._ranges:
            total += high - low
            cumulative.append(total)
        self._cumulative = cumulative
        self._value_random = DotNetRandom(seed)
        self._choice_random = DotNetRandom(seed + 1)

    def __call__(self) -> float:
        """Draw one value."""
        point = self._choice_random.next_double() * self._cumulative[-1]
        index = min(bisect.bisect_right(self._cumulative, point), len(self._ranges) - 1)
        low, high = self._ranges[index]
        return low + self._value_random.next_double() * (high - low)
