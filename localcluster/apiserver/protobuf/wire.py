"""The protobuf wire format, read by hand: varints and tagged fields are all Kubernetes needs.

A hand-written reader keeps the schema as plain tables (schema_*.py) instead of generated
descriptor code, and lets the decoder report exactly which field of which message it could
not read.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

VARINT, FIXED64, BYTES, FIXED32 = 0, 1, 2, 5


class ProtobufError(ValueError):
    """A body that is not valid Kubernetes protobuf, or holds something we do not decode."""


@dataclass(frozen=True)
class Field:
    number: int
    wire_type: int
    value: int | bytes


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result, shift = 0, 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ProtobufError("varint longer than 10 bytes")


def fields(data: bytes) -> Iterator[Field]:
    """Yield the fields of one message in wire order."""
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise ProtobufError("field number 0 is not allowed")
        if wire_type == VARINT:
            value, pos = read_varint(data, pos)
            yield Field(number, wire_type, value)
        elif wire_type == BYTES:
            length, pos = read_varint(data, pos)
            if pos + length > len(data):
                raise ProtobufError(f"field {number} claims {length} bytes past the end of the message")
            yield Field(number, wire_type, data[pos:pos + length])
            pos += length
        elif wire_type in (FIXED64, FIXED32):
            size = 8 if wire_type == FIXED64 else 4
            if pos + size > len(data):
                raise ProtobufError(f"field {number} is truncated")
            yield Field(number, wire_type, data[pos:pos + size])
            pos += size
        else:
            raise ProtobufError(f"field {number} has unsupported wire type {wire_type}")


def signed64(value: int) -> int:
    """Go's int64/int32 fields are plain varints of the two's-complement value."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >> 63 else value
