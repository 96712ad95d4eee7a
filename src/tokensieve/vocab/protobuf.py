"""A minimal reader of the protobuf wire format (enough for SentencePiece models).

Only what decoding a known message needs: varints, fixed 32/64-bit values and
length-delimited fields; deprecated groups are rejected. Malformed input raises
:class:`ProtobufError`, never an ``IndexError``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

__all__ = [
    "VARINT",
    "FIXED64",
    "LENGTH_DELIMITED",
    "FIXED32",
    "ProtobufError",
    "iter_fields",
    "as_int32",
    "as_float",
]

VARINT = 0
FIXED64 = 1
LENGTH_DELIMITED = 2
FIXED32 = 5

_MAX_VARINT_BYTES = 10


class ProtobufError(ValueError):
    """Bytes that are not a well-formed protobuf message."""


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    for _ in range(_MAX_VARINT_BYTES):
        if pos >= end:
            raise ProtobufError(f"truncated varint at offset {pos}")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
    raise ProtobufError(f"varint longer than {_MAX_VARINT_BYTES} bytes at offset {pos}")


def iter_fields(buf: bytes, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int, int, int]]:
    """Iterate over the fields of one message.

    Parameters
    ----------
    buf
        The serialized bytes.
    start, end
        The message's byte range within ``buf`` (default: all of it).

    Yields
    ------
    tuple of int
        ``(field_number, wire_type, a, b)``: for varints and fixed-width
        values ``a`` is the raw unsigned value and ``b`` is 0; for
        length-delimited fields ``[a, b)`` is the payload's byte range.

    Raises
    ------
    ProtobufError
        On truncation, an invalid field number, or an unsupported wire type.
    """
    pos = start
    stop = len(buf) if end is None else end
    while pos < stop:
        key, pos = _varint(buf, pos, stop)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ProtobufError(f"invalid field number 0 at offset {pos}")
        if wire == VARINT:
            value, pos = _varint(buf, pos, stop)
            yield number, wire, value, 0
        elif wire == LENGTH_DELIMITED:
            length, pos = _varint(buf, pos, stop)
            if length > stop - pos:
                raise ProtobufError(
                    f"field {number} claims {length} bytes at offset {pos}, only {stop - pos} left"
                )
            yield number, wire, pos, pos + length
            pos += length
        elif wire == FIXED32 or wire == FIXED64:
            size = 4 if wire == FIXED32 else 8
            if size > stop - pos:
                raise ProtobufError(f"truncated fixed-width field {number} at offset {pos}")
            value = int.from_bytes(buf[pos : pos + size], "little")
            yield number, wire, value, 0
            pos += size
        else:
            raise ProtobufError(f"unsupported wire type {wire} for field {number} at offset {pos}")


def as_int32(value: int) -> int:
    """Interpret a raw varint as a signed ``int32``/``int64`` field (two's complement)."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def as_float(raw: int) -> float:
    """Interpret a raw fixed 32-bit value as a ``float`` field."""
    result: float = struct.unpack("<f", raw.to_bytes(4, "little"))[0]
    return result
