"""The controller's memory of the cluster: the latest observed object per (kind, namespace, name).

Informers feed it events and relists; reconcilers read it instead of the API server. It also
holds *assumed* objects — what the controller has just written but not yet seen come back — so
a decision taken right after a write (an admission, say) does not act on stale state; an
assumption ends when the object's next event arrives or when the write fails (`forget`).
Pure: the adapters own the lock around it.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Iterable, Iterator, Mapping

Obj = Mapping[str, Any]


@dataclass(frozen=True, order=True)
class ObjectKey:
    kind: str
    namespace: str  # "" for cluster-scoped objects
    name: str

    def __str__(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}" if self.namespace else f"{self.kind}/{self.name}"


def key_of(kind: str, obj: Obj) -> ObjectKey:
    metadata = obj.get("metadata") or {}
    return ObjectKey(kind, metadata.get("namespace") or "", metadata.get("name") or "")


def resource_version(obj: Obj | None) -> str | None:
    return ((obj or {}).get("metadata") or {}).get("resourceVersion")


@dataclass(frozen=True)
class Change:
    """One observed change: the reconcilers' trigger. `old` is None for ADDED, `new` for DELETED."""

    key: ObjectKey
    type: str  # ADDED | MODIFIED | DELETED
    old: Obj | None
    new: Obj | None


class ObjectCache:
    def __init__(self) -> None:
        self._objects: dict[str, dict[ObjectKey, Obj]] = {}
        self._assumed: dict[ObjectKey, Obj] = {}

    def apply(self, kind: str, event_type: str, obj: Obj) -> Change | None:
        """Record a watch event; None when it tells nothing new (a replay of a known version)."""
        key = key_of(kind, obj)
        objects = self._objects.setdefault(kind, {})
        old = objects.get(key)
        self._assumed.pop(key, None)
        if event_type == "DELETED":
            if old is None:
                return None
            del objects[key]
            return Change(key, "DELETED", old, None)
        if old is not None and resource_version(old) == resource_version(obj):
            return None
        objects[key] = obj
        return Change(key, "MODIFIED" if old is not None else "ADDED", old, obj)

    def replace(self, kind: str, items: Iterable[Obj]) -> list[Change]:
        """A fresh list replaces everything known of a kind; the differences come back as changes."""
        fresh = {key_of(kind, obj): obj for obj in items}
        objects = self._objects.setdefault(kind, {})
        changes = [Change(key, "DELETED", old, None) for key, old in objects.items() if key not in fresh]
        for key, obj in fresh.items():
            old = objects.get(key)
            if old is None:
                changes.append(Change(key, "ADDED", None, obj))
            elif resource_version(old) != resource_version(obj):
                changes.append(Change(key, "MODIFIED", old, obj))
        for change in changes:
            self._assumed.pop(change.key, None)
        self._objects[kind] = fresh
        return changes

    def assume(self, kind: str, obj: Obj) -> None:
        """Act as if `obj` were observed until its next event arrives or `forget` is called."""
        self._assumed[key_of(kind, obj)] = obj

    def forget(self, key: ObjectKey) -> None:
        self._assumed.pop(key, None)

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        key = ObjectKey(kind, namespace, name)
        if key in self._assumed:
            return self._assumed[key]
        return self._objects.get(kind, {}).get(key)

    def list(self, kind: str, namespace: str | None = None) -> list[Obj]:
        return [obj for key, obj in self._items(kind) if namespace is None or key.namespace == namespace]

    def _items(self, kind: str) -> Iterator[tuple[ObjectKey, Obj]]:
        for key, obj in self._objects.get(kind, {}).items():
            yield key, self._assumed.get(key, obj)
        for key, obj in self._assumed.items():
            if key.kind == kind and key not in self._objects.get(kind, {}):
                yield key, obj

    def snapshot(self, kinds: Iterable[str] | None = None) -> Mapping[str, Mapping[ObjectKey, Obj]]:
        """Read-only views per kind (assumptions included), safe to hand to a decision."""
        chosen = self._objects.keys() if kinds is None else kinds
        return MappingProxyType({kind: MappingProxyType(dict(self._items(kind))) for kind in chosen})
