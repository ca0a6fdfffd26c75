"""Hand-written protobuf wire encoding for the hot path (agent reports), vectorized with numpy.

Building one ``AgentInfoProto`` object per agent per step costs several microseconds; the
player instead writes the serialized bytes directly. The bytes are exactly what the protobuf
runtime produces for the same message (fields in ascending number order, proto3 defaults
omitted), which ``tests/player`` checks against the spec's test vectors.
"""

from __future__ import annotations

import numpy as np

from unity_gym.protocol.wire_format import encode_varint

__all__ = [
    "float32_bytes",
    "key",
    "length_delimited",
    "packed_int32",
    "varint",
]

_WIRE_VARINT = 0
_WIRE_FIXED32 = 5
_WIRE_LENGTH = 2


_SMALL_VARINTS = [encode_varint(v) for v in range(1 << 14)]


def varint(value: int) -> bytes:
    """Base-128 varint of an int (negative int32 use the 10-byte two's complement)."""
    if 0 <= value < 16384:
        return _SMALL_VARINTS[value]
    return encode_varint(value)


def key(field: int, wire_type: int) -> bytes:
    """The tag of ``field`` with ``wire_type``."""
    return varint((field << 3) | wire_type)


def length_delimited(field: int, payload: bytes) -> bytes:
    """A length-delimited field (message, string, bytes or packed repeated)."""
    return key(field, _WIRE_LENGTH) + varint(len(payload)) + payload


def packed_int32(field: int, values: list[int]) -> bytes:
    """A packed repeated int32 field; empty lists are omitted, as proto3 does."""
    if not values:
        return b""
    return length_delimited(field, b"".join(varint(v) for v in values))


def float32_bytes(values: np.ndarray) -> bytes:
    """Little-endian float32 bytes of ``values``."""
    return np.ascontiguousarray(values, dtype="<f4").tobytes()


def varint_tag(field: int) -> bytes:
    """Tag of a varint field."""
    return key(field, _WIRE_VARINT)


def fixed32_tag(field: int) -> bytes:
    """Tag of a fixed32/float field."""
    return key(field, _WIRE_FIXED32)
