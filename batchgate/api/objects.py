"""Read-only helpers for the metadata every Kubernetes object has, tolerant of bad shapes."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def as_mapping(value: Any) -> Mapping[str, Any]:
    """`value` when it is a mapping, else an empty one: for reading a field that may have a bad shape."""
    return value if isinstance(value, Mapping) else _EMPTY


def as_list(value: Any) -> list[Any]:
    """`value` when it is a list, else an empty one."""
    return value if isinstance(value, list) else []


def metadata(obj: Any) -> Mapping[str, Any]:
    return as_mapping(as_mapping(obj).get("metadata"))


def labels(obj: Any) -> Mapping[str, Any]:
    return as_mapping(metadata(obj).get("labels"))


def annotations_of(obj: Any) -> Mapping[str, Any]:
    return as_mapping(metadata(obj).get("annotations"))


def api_version_kind(obj: Any) -> tuple[str, str]:
    if not isinstance(obj, dict):
        return "", ""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    return (api_version if isinstance(api_version, str) else "", kind if isinstance(kind, str) else "")


class Named:
    """The two names of a group, version and kind: its `apiVersion` and its `Kind.group`."""

    group: str
    version: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        return qualified_kind(self.api_version, self.kind)


def qualified_kind(api_version: str, kind: str) -> str:
    """`Kind.group` as the policy names kinds; core kinds are just `Kind`."""
    group = api_version.rpartition("/")[0]
    return f"{kind}.{group}" if group else kind


def controller_owner(obj: Any) -> Mapping[str, Any] | None:
    """The ownerReference marked `controller: true`, if any."""
    refs = metadata(obj).get("ownerReferences")
    if not isinstance(refs, list):
        return None
    for ref in refs:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def labels_for_writing(obj: dict[str, Any]) -> dict[str, Any] | None:
    """`obj.metadata.labels`, created when missing; None when either is there but not a mapping
    (junk we must not overwrite: validation or the API server rejects it)."""
    meta = obj.setdefault("metadata", {}) if obj.get("metadata") is None else obj["metadata"]
    if not isinstance(meta, dict):
        return None
    if meta.get("labels") is None:
        meta["labels"] = {}
    found = meta["labels"]
    return found if isinstance(found, dict) else None
