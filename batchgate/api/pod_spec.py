"""Strict PodSpec parsing, as upstream decodes a podSet's `spec` with unknown fields rejected.

The field table (`pod_spec_schema.json`) is generated from the official kubernetes client's
models (see tests/batchgate/api/test_pod_spec.py), so it follows Kubernetes, not us.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from batchgate.api.errors import FieldError, child, type_name

SCHEMA_FILE = Path(__file__).with_name("pod_spec_schema.json")
ROOT_TYPE = "V1PodSpec"
MAX_DEPTH = 64


_DESCRIPTION = {
    "string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
    "int-or-string": "an integer or a string", "quantity": "a quantity like '500m' or '4Gi'",
}


@lru_cache(maxsize=1)
def _schema() -> dict[str, dict[str, list[str]]]:
    return json.loads(SCHEMA_FILE.read_text())


def check_pod_spec(spec: Any, path: str) -> None:
    """Raise FieldError at the first unknown field or wrongly typed value in a PodSpec."""
    check_kubernetes_type(spec, ROOT_TYPE, path)


def check_kubernetes_type(value: Any, type_id: str, path: str) -> None:
    """The same check for a value of any type the table describes (`V1EnvFromSource`, ...)."""
    if type_id not in _schema():
        raise ValueError(f"{type_id} is not in {SCHEMA_FILE.name}")
    _check(value, [type_id], path, 0)


def _check(value: Any, shape: list[str], path: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise FieldError(path, "nested too deeply")
    if value is None:
        return  # null is "unset" for every optional field
    container = shape[0] if len(shape) == 2 else None
    if container == "list":
        if not isinstance(value, list):
            raise FieldError(path, f"must be a list, got {type_name(value)}")
        for i, item in enumerate(value):
            _check(item, shape[1:], child(path, i), depth + 1)
        return
    if container == "map":
        if not isinstance(value, dict):
            raise FieldError(path, f"must be a mapping, got {type_name(value)}")
        for key, item in value.items():
            _check(item, shape[1:], child(path, str(key)), depth + 1)
        return
    _check_scalar_or_object(value, shape[0], path, depth)


_SCALARS: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "int-or-string": (str, int),
    "quantity": (str, int, float),
}


def _check_scalar_or_object(value: Any, type_id: str, path: str, depth: int) -> None:
    accepted = _SCALARS.get(type_id)
    if accepted is not None:
        if not isinstance(value, accepted) or (isinstance(value, bool) and type_id != "boolean"):
            raise FieldError(path, f"must be {_DESCRIPTION[type_id]}, got {type_name(value)}")
        return
    fields = _schema().get(type_id)
    if fields is None:  # a type the table does not describe: accept any mapping
        if not isinstance(value, dict):
            raise FieldError(path, f"must be a mapping, got {type_name(value)}")
        return
    if not isinstance(value, dict):
        raise FieldError(path, f"must be a mapping, got {type_name(value)}")
    for key, item in value.items():
        if key not in fields:
            raise FieldError(child(path, str(key)), f"unknown field {key!r}")
        _check(item, fields[key], child(path, key), depth + 1)
