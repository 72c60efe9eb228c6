"""Turn a Kubernetes protobuf body into the JSON dict the same object would have been.

Go's JSON for these types omits zero scalars (omitempty) but always writes embedded structs, and
the gogo protobuf encoder writes every non-pointer field, zero or not; so a message on the wire
becomes an object, a zero scalar is dropped unless the schema marks it `?`, and a field number
the schema does not know is tolerated only while it carries nothing.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from localcluster.apiserver.protobuf.schema_core import CORE
from localcluster.apiserver.protobuf.schema_groups import GROUPS, KINDS
from localcluster.apiserver.protobuf.schema_meta import META
from localcluster.apiserver.protobuf.wire import BYTES, VARINT, Field, ProtobufError, fields, read_varint, signed64

MAGIC = b"k8s\x00"
SCALARS = {"str", "bool", "int", "bytes"}
WRAPPERS = {"qty", "time", "microtime", "ios", "raw", "fieldsv1", "strlist"}
ZEROS: dict[str, Callable[[], Any]] = {"str": str, "bytes": str, "int": int, "bool": bool,
                                       "qty": lambda: "0", "strlist": list}


@dataclass(frozen=True)
class Spec:
    name: str  # JSON name, or "-" to inline the message into its parent
    type: str  # a scalar, a wrapper or a message name
    repeated: bool = False
    map: bool = False
    keep_zero: bool = False


def _parse_message(text: str) -> dict[int, Spec]:
    specs: dict[int, Spec] = {}
    for entry in filter(None, (e.strip() for e in text.split(";"))):
        number, name, type_ = entry.split()
        keep_zero = type_.endswith("?")
        type_ = type_.rstrip("?")
        repeated, is_map = type_.startswith("["), type_.startswith("{")
        specs[int(number)] = Spec(name, type_.strip("[]{}"), repeated, is_map, keep_zero)
    return specs


SCHEMA: dict[str, dict[int, Spec]] = {
    name: _parse_message(text) for table in (META, CORE, GROUPS) for name, text in table.items()
}


def _length_delimited(data: bytes) -> dict[int, bytes]:
    """A message's length-delimited fields by number (the last of a repeated one)."""
    return {f.number: f.value for f in fields(data) if f.wire_type == BYTES and isinstance(f.value, bytes)}


def decode(body: bytes) -> dict[str, Any]:
    """Decode a `k8s\\x00`-prefixed runtime.Unknown into the object's JSON dict."""
    if not body.startswith(MAGIC):
        raise ProtobufError("body does not start with the Kubernetes protobuf magic number")
    envelope = _length_delimited(body[len(MAGIC):])
    type_meta = _length_delimited(envelope.get(1, b""))
    api_version = type_meta.get(1, b"").decode("utf-8", "replace")
    kind = type_meta.get(2, b"").decode("utf-8", "replace")
    encoding = envelope.get(3, b"")
    if encoding:
        raise ProtobufError(f"content encoding {encoding.decode('utf-8', 'replace')!r} is not supported")
    message = KINDS.get((api_version, kind))
    if message is None:
        raise ProtobufError(f"protobuf bodies of {kind or '?'} in {api_version or '?'} are not supported")
    obj = {"kind": kind, "apiVersion": api_version}
    obj.update(_message(envelope.get(2, b""), message))
    return obj


def _message(data: bytes, message: str) -> dict[str, Any]:
    specs = SCHEMA[message]
    out: dict[str, Any] = {}
    for field in fields(data):
        spec = specs.get(field.number)
        if spec is None or (spec.type not in SCALARS | WRAPPERS and spec.type not in SCHEMA):
            if field.value not in (0, b""):
                raise ProtobufError(f"field {field.number} of {message} is not supported")
            continue
        if spec.name == "-":
            out.update(_message(_bytes(field, message), spec.type))
        elif spec.map:
            key, value = _map_entry(_bytes(field, message), spec, message)
            out.setdefault(spec.name, {})[key] = value
        elif spec.repeated:
            out.setdefault(spec.name, []).extend(_repeated(field, spec, message))
        else:
            value = _value(field, spec.type, message)
            if spec.type in SCALARS and not value and not spec.keep_zero:
                out.pop(spec.name, None)
                continue
            out[spec.name] = value
    return out


def _bytes(field: Field, message: str) -> bytes:
    if not isinstance(field.value, bytes) or field.wire_type != BYTES:
        raise ProtobufError(f"field {field.number} of {message} should be length-delimited")
    return field.value


def _repeated(field: Field, spec: Spec, message: str) -> list[Any]:
    if spec.type == "int" and field.wire_type == BYTES:  # packed
        data, pos, values = _bytes(field, message), 0, []
        while pos < len(data):
            value, pos = read_varint(data, pos)
            values.append(signed64(value))
        return values
    return [_value(field, spec.type, message)]


def _map_entry(data: bytes, spec: Spec, message: str) -> tuple[str, Any]:
    """A map entry message: key 1, value 2; a value left off the wire is its type's zero value."""
    key: str = ""
    value: Any = ZEROS[spec.type]() if spec.type in ZEROS else _value(Field(2, BYTES, b""), spec.type, message)
    for entry in fields(data):
        if entry.number == 1:
            key = _bytes(entry, message).decode("utf-8")
        elif entry.number == 2:
            value = _value(entry, spec.type, message)
    return key, value


def _value(field: Field, type_: str, message: str) -> Any:
    where = f"field {field.number} of {message}"
    if type_ in ("int", "bool"):
        if field.wire_type != VARINT or not isinstance(field.value, int):
            raise ProtobufError(f"{where} should be a varint")
        return bool(field.value) if type_ == "bool" else signed64(field.value)
    data = _bytes(field, message)
    try:
        if type_ == "str":
            return data.decode("utf-8")
        if type_ == "bytes":
            return base64.b64encode(data).decode()
        if type_ == "qty":
            return _first(data, 1).decode("utf-8")
        if type_ in ("time", "microtime"):
            return _time(data, micro=type_ == "microtime")
        if type_ == "ios":
            return _int_or_string(data)
        if type_ in ("raw", "fieldsv1"):
            raw = _first(data, 1)
            return json.loads(raw) if raw else None
        if type_ == "strlist":
            return [f.value.decode("utf-8") for f in fields(data) if f.number == 1 and isinstance(f.value, bytes)]
    except (UnicodeDecodeError, ValueError) as err:
        if isinstance(err, ProtobufError):
            raise
        raise ProtobufError(f"{where}: {err}") from None
    return _message(data, type_)


def _first(data: bytes, number: int) -> bytes:
    for field in fields(data):
        if field.number == number and isinstance(field.value, bytes):
            return field.value
    return b""


def _time(data: bytes, micro: bool) -> str | None:
    seconds = nanos = 0
    for field in fields(data):
        if field.wire_type == VARINT and isinstance(field.value, int):
            if field.number == 1:
                seconds = signed64(field.value)
            elif field.number == 2:
                nanos = signed64(field.value)
    if seconds == 0 and nanos == 0:
        return None
    try:
        moment = dt.datetime.fromtimestamp(seconds, dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        raise ProtobufError(f"time {seconds}s is out of range") from None
    if micro:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{nanos // 1000:06d}Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _int_or_string(data: bytes) -> int | str:
    kind, number, text = 0, 0, ""
    for field in fields(data):
        if field.number == 1 and isinstance(field.value, int):
            kind = field.value
        elif field.number == 2 and isinstance(field.value, int):
            number = signed64(field.value)
        elif field.number == 3 and isinstance(field.value, bytes):
            text = field.value.decode("utf-8")
    return text if kind == 1 else number
