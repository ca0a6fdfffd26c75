"""Payload primitives of side channels (spec §5.2): little-endian, no alignment, no type tags.

Reading past the end of a message returns the caller's default, as both official sides do.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

__all__ = ["IncomingMessage", "OutgoingMessage"]

_INT32 = struct.Struct("<i")
_FLOAT32 = struct.Struct("<f")


class OutgoingMessage:
    """Builds a side-channel payload by appending primitives."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    @property
    def buffer(self) -> bytes:
        """The payload written so far."""
        return bytes(self._buffer)

    def write_bool(self, b: bool) -> None:
        """Append one byte, 1 for ``True`` and 0 for ``False`` (keyword ``b`` as officially)."""
        self._buffer.append(1 if b else 0)

    def write_int32(self, i: int) -> None:
        """Append a 4-byte two's complement integer (keyword ``i`` as officially)."""
        self._buffer += _INT32.pack(i)

    def write_float32(self, f: float) -> None:
        """Append an IEEE-754 float32 (keyword ``f`` as officially)."""
        self._buffer += _FLOAT32.pack(f)

    def write_float32_list(self, float_list: Iterable[float]) -> None:
        """Append an int32 count followed by that many float32 values (keyword ``float_list``)."""
        items = [float(v) for v in float_list]
        self.write_int32(len(items))
        self._buffer += struct.pack(f"<{len(items)}f", *items)

    def write_string(self, s: str) -> None:
        """Append an int32 byte length and the ASCII bytes of ``s`` (keyword ``s`` as officially).

        Raises:
            UnicodeEncodeError: if ``s`` is not ASCII (Unity only reads ASCII).
        """
        encoded = s.encode("ascii")
        self.write_int32(len(encoded))
        self._buffer += encoded

    def set_raw_bytes(self, buffer: bytes | bytearray) -> None:
        """Replace the whole payload with ``buffer`` (keyword ``buffer`` as officially)."""
        self._buffer = bytearray(buffer)


class IncomingMessage:
    """Reads primitives from a received side-channel payload, front to back."""

    def __init__(self, buffer: bytes, offset: int = 0) -> None:
        self._buffer = bytes(buffer)
        self._offset = offset

    @property
    def remaining(self) -> int:
        """Number of unread bytes."""
        return max(0, len(self._buffer) - self._offset)

    def _take(self, size: int) -> bytes | None:
        if self._offset + size > len(self._buffer):
            self._offset = len(self._buffer)
            return None
        chunk = self._buffer[self._offset : self._offset + size]
        self._offset += size
        return chunk

    def read_bool(self, default_value: bool = False) -> bool:
        """Read one byte as a bool."""
        chunk = self._take(1)
        return default_value if chunk is None else chunk != b"\x00"

    def read_int32(self, default_value: int = 0) -> int:
        """Read a little-endian int32."""
        chunk = self._take(4)
        return default_value if chunk is None else int(_INT32.unpack(chunk)[0])

    def read_float32(self, default_value: float = 0.0) -> float:
        """Read a little-endian float32."""
        chunk = self._take(4)
        return default_value if chunk is None else float(_FLOAT32.unpack(chunk)[0])

    def read_float32_list(self, default_value: list[float] | None = None) -> list[float]:
        """Read an int32 count and that many float32 values."""
        count = self.read_int32(-1)
        chunk = None if count < 0 else self._take(4 * count)
        if chunk is None:
            return [] if default_value is None else default_value
        return list(struct.unpack(f"<{count}f", chunk))

    def read_string(self, default_value: str = "") -> str:
        """Read an int32 byte length and that many ASCII bytes."""
        length = self.read_int32(-1)
        chunk = None if length < 0 else self._take(length)
        if chunk is None:
            return default_value
        return chunk.decode("ascii", errors="replace")

    def get_raw_bytes(self) -> bytes:
        """Return the whole payload, regardless of what was read."""
        return self._buffer
