"""One error type for every wire object we parse, carrying the field path users must fix."""

from __future__ import annotations

import json
from functools import lru_cache


class FieldError(ValueError):
    """Bad input at a field path, e.g. `spec.components[1].podSets[0].path: missing field`."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path}: {detail}" if path else detail)
        self.path = path
        self.detail = detail


REMEMBERED_LENGTH = 512
"""Longest path and key whose child path is remembered. An honest object's are far shorter; a
hostile review's keys (up to its 3 MiB) would otherwise stay in memory, 4,096 of them."""


def child(path: str, key: str | int) -> str:
    """Extend a field path with a map key or a list index, the way Kubernetes prints them.

    Parsers build the path of every field they read, error or not, and the same few hundred paths
    recur in every Workload: remembered, each costs a lookup (the watch parses every event)."""
    if len(path) > REMEMBERED_LENGTH or (type(key) is str and len(key) > REMEMBERED_LENGTH):
        return _child(path, key)
    return _remembered(path, key)


def _child(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if not key or any(c.isspace() or not c.isprintable() or c in '[]"' for c in key):
        return f"{path}[{json.dumps(key)}]"  # quoted, so the path stays on one line and unambiguous
    if not path:
        return key
    if "." in key or "/" in key:
        return f"{path}[{key}]"
    return f"{path}.{key}"


_remembered = lru_cache(maxsize=4096, typed=True)(_child)  # typed: True is not the index 1


def type_name(value: object) -> str:
    """The JSON name of a value's type, for messages like `must be a mapping, got list`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__
