"""Small readers for wire dicts that turn every bad field into one error naming its path.

The quota models are parsed once at the edge; whatever is wrong is reported as
`spec.resourceGroups[0].flavors[1].resources[0].nominalQuota: invalid quantity '-1'`,
never as a KeyError from deep inside a decision.
"""

from __future__ import annotations

import datetime as _dt
from decimal import Decimal
from collections.abc import Mapping
from typing import Any

from batchgate.api.errors import FieldError, child, type_name
from batchgate.clock import parse_time
from batchgate.quantity import QuantityError, parse_quantity

__all__ = ["FieldError", "join", "mapping", "sequence", "string", "choice", "integer", "quantity",
           "optional_quantity", "resources", "timestamp", "string_map"]



def join(path: str, *keys: str | int) -> str:
    """The field path of nested map keys and list indexes, as Kubernetes prints it."""
    for key in keys:
        path = child(path, key)
    return path


def mapping(raw: Any, path: str, *, required: bool = False) -> Mapping[str, Any]:
    if type(raw) is dict:  # what JSON gives, checked without the abstract base class's hook
        return raw
    if raw is None and not required:
        return {}
    if not isinstance(raw, Mapping):
        raise FieldError(path, f"must be an object, got {type_name(raw)}")
    return raw


def sequence(raw: Any, path: str) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise FieldError(path, f"must be a list, got {type_name(raw)}")
    return raw


def string(raw: Any, path: str, *, default: str | None = None) -> str:
    if raw is None:
        if default is None:
            raise FieldError(path, "is required")
        return default
    if not isinstance(raw, str):
        raise FieldError(path, f"must be a string, got {type_name(raw)}")
    return raw


def choice(raw: Any, path: str, allowed: tuple[str, ...], default: str) -> str:
    value = string(raw, path, default=default)
    if value not in allowed:
        raise FieldError(path, f"must be one of {', '.join(allowed)}, got {value!r}")
    return value


def integer(raw: Any, path: str, *, default: int | None = None, minimum: int | None = None) -> int:
    if raw is None:
        if default is None:
            raise FieldError(path, "is required")
        return default
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise FieldError(path, f"must be an integer, got {type_name(raw)}")
    if minimum is not None and raw < minimum:
        raise FieldError(path, f"must be at least {minimum}, got {raw}")
    return raw


def quantity(raw: Any, path: str) -> Decimal:
    if raw is None:
        raise FieldError(path, "is required")
    try:
        value = parse_quantity(raw)
    except QuantityError as exc:
        raise FieldError(path, str(exc)) from None
    if value < 0:
        raise FieldError(path, f"must not be negative, got {raw!r}")
    return value


def optional_quantity(raw: Any, path: str) -> Decimal | None:
    return None if raw is None else quantity(raw, path)


def resources(raw: Any, path: str) -> dict[str, Decimal]:
    return {name: quantity(value, join(path, name)) for name, value in mapping(raw, path).items()}


def timestamp(raw: Any, path: str) -> _dt.datetime | None:
    if raw is None:
        return None
    if isinstance(raw, _dt.datetime):  # YAML loaders turn unquoted timestamps into datetimes
        return raw if raw.tzinfo else raw.replace(tzinfo=_dt.timezone.utc)
    if not isinstance(raw, str):
        raise FieldError(path, f"must be an RFC 3339 time, got {type_name(raw)}")
    try:
        return parse_time(raw)
    except ValueError:
        raise FieldError(path, f"must be an RFC 3339 time like 2025-01-01T00:00:00Z, got {raw!r}") from None


def string_map(raw: Any, path: str) -> dict[str, str]:
    return {str(k): string(v, join(path, str(k))) for k, v in mapping(raw, path).items()}

