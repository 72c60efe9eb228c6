"""Go's `strconv.Atoi`, the integer syntax of upstream's AppWrapper annotations.

An optional sign and decimal digits, nothing else: no blanks, no underscores, and within int64.
Upstream ignores an annotation Atoi rejects (the default applies), so the controller must reject
exactly the same strings, and the gateway names them to the user instead.
"""

from __future__ import annotations

import re

_ATOI = re.compile(r"[+-]?[0-9]+")
INT64 = range(-(2**63), 2**63)


class NumberError(ValueError):
    """A string that Go's strconv.Atoi rejects; str() says why."""


def atoi(text: object) -> int:
    if not isinstance(text, str):
        raise NumberError(f"must be an integer written as a string, got {type(text).__name__}")
    if not _ATOI.fullmatch(text):
        hint = ": blanks around the value are not allowed" if text.strip() != text and _ATOI.fullmatch(text.strip()) else ""
        raise NumberError(f"{text!r} is not an integer{hint}")
    value = int(text)
    if value not in INT64:
        raise NumberError(f"{text!r} is out of range")
    return value


def int32(value: int) -> int:
    """Go's int32(value) conversion: wraps around, as upstream's retryLimit does."""
    return (value + 2**31) % 2**32 - 2**31
