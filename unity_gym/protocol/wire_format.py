"""Pieces of protobuf's wire format that unity_gym writes by hand (where building messages field
by field costs more than the bytes): varints."""

from __future__ import annotations

__all__ = ["encode_varint"]


def encode_varint(value: int) -> bytes:
    """``value`` as a protobuf base-128 varint.

    A negative value is written as its 64-bit two's complement (10 bytes), as protobuf writes a
    negative ``int32`` or ``int64``.
    """
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
