"""Parsers for the scalar fields of our own documents (the policy), each `(value, path) -> value`.

Each raises FieldError naming the path, so every document built from them reports bad input the
same way.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

from batchgate.api.errors import FieldError, child, type_name
from batchgate.durations import DurationError, parse_duration

_KIND = re.compile(r"^[A-Za-z][A-Za-z0-9]*(\.[a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$")
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@-]*")


def parse_bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise FieldError(path, f"must be true or false, got {type_name(value)}")
    return value


def parse_str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise FieldError(path, f"must be a string, got {type_name(value)}")
    return value


def parse_name(value: Any, path: str) -> str:
    text = parse_str(value, path)
    if text and not _NAME.fullmatch(text):
        raise FieldError(path, f"{text!r} is not a valid Kubernetes object name")
    return text


def parse_non_negative_int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise FieldError(path, "must be a non-negative integer")
    return value


def parse_positive_int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise FieldError(path, "must be a positive integer")
    return value


def parse_weight(value: Any, path: str) -> int:
    """A preferred scheduling term's weight, which Kubernetes bounds to 1..100."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100:
        raise FieldError(path, "must be an integer from 1 to 100 (a node affinity weight)")
    return value


def parse_port(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise FieldError(path, "must be a port number from 1 to 65535")
    return value


def parse_non_negative_duration(value: Any, path: str) -> _dt.timedelta:
    if not isinstance(value, str):
        raise FieldError(path, f"must be a duration like '90s' or '1h30m', got {type_name(value)}")
    try:
        delta = parse_duration(value)
    except DurationError as exc:
        raise FieldError(path, str(exc)) from None
    if delta < _dt.timedelta(0):
        raise FieldError(path, f"must not be negative, got {value!r}")
    return delta


def parse_positive_duration(value: Any, path: str) -> _dt.timedelta:
    delta = parse_non_negative_duration(value, path)
    if delta < _dt.timedelta(seconds=1):
        raise FieldError(path, f"must be at least 1s, got {value!r}")
    return delta


def parse_image(value: Any, path: str) -> str:
    text = parse_str(value, path)
    if not _IMAGE.fullmatch(text):
        raise FieldError(path, f"{text!r} is not a container image reference")
    return text


def parse_strings(value: Any, path: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise FieldError(path, f"must be a list of strings, got {type_name(value)}")
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise FieldError(child(path, i), "must be a non-empty string")
    return tuple(value)


def parse_kinds(value: Any, path: str) -> tuple[str, ...]:
    kinds = parse_strings(value, path)
    for i, kind in enumerate(kinds):
        if not _KIND.match(kind):
            raise FieldError(child(path, i), f"{kind!r} is not a Kind or Kind.group (e.g. Job.batch, Pod)")
    return kinds
