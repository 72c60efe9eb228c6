"""Reading and editing wire dicts whose shape nobody has checked yet.

Every access the phases make goes through here, so a field of the wrong type is a FrameworkError
naming it, and an edit never trips over a null where the API allows one.
"""

from __future__ import annotations

from typing import Any

from batchgate.frameworks.errors import FrameworkError


def mapping_at(obj: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    """`obj[key]` as a map: {} when absent or null, a FrameworkError when it is something else."""
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FrameworkError(path, "must be an object")
    return value


def objects_at(obj: dict[str, Any], key: str, path: str) -> list[dict[str, Any]]:
    """`obj[key]` as a list of maps: [] when absent or null, a FrameworkError otherwise."""
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise FrameworkError(path, "must be a list of objects")
    return value


def string_at(obj: dict[str, Any], key: str, path: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise FrameworkError(path, "must be a string")
    return value


def check_metadata(obj: dict[str, Any], base: str) -> dict[str, Any]:
    """The object's metadata, with labels and annotations checked to be maps of strings."""
    meta = mapping_at(obj, "metadata", f"{base}metadata")
    for key in ("labels", "annotations"):
        for name, value in mapping_at(meta, key, f"{base}metadata.{key}").items():
            if not isinstance(value, str):
                raise FrameworkError(f"{base}metadata.{key}[{name}]", "must be a string")
    return meta


def edit_map(obj: dict[str, Any], key: str) -> dict[str, Any]:
    """The map at `obj[key]` for editing, created when absent or null (shape checked before)."""
    if obj.get(key) is None:
        obj[key] = {}
    return obj[key]


def edit_list(obj: dict[str, Any], key: str) -> list[Any]:
    if obj.get(key) is None:
        obj[key] = []
    return obj[key]
