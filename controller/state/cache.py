"""The controller's memory of the cluster: the latest observed object per (kind, namespace, name).

Informers feed it events and relists; reconcilers read it instead of the API server. It also
holds *assumed* objects — what the controller has just written but not yet seen come back — so
a decision taken right after a write (an admission, say) does not act on stale state; an
assumption ends when the object's next event arrives or when the write fails (`forget`). A write
answered after the watch has moved on (the object already deleted, or a newer version seen) is
not assumed: it would bring back a ghost, or hide the newer version, until the next event.
Pure: the adapters own the lock around it.
"""

from __future__ import annotations

from collections import OrderedDict
from types import MappingProxyType
from typing import Any, Iterable, Iterator, Mapping, NamedTuple

from batchgate.api.objects import metadata
from batchgate.frozen import frozen

Obj = Mapping[str, Any]

DELETED_UIDS_REMEMBERED = 65_536
"""How many deleted objects' uids are kept to refuse late assumptions: a write races its object's
DELETED event only while in flight, so this covers a mass deletion of 10,000-pod jobs with room."""


class ObjectKey(NamedTuple):
    """An object's identity. A named tuple, not a dataclass: the quota state looks keys up
    millions of times a run, and a tuple hashes and compares in C (a fifth of the cost)."""

    kind: str
    namespace: str  # "" for cluster-scoped objects
    name: str

    def __str__(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}" if self.namespace else f"{self.kind}/{self.name}"

    @property
    def namespaced_name(self) -> str:
        """`namespace/name`, as kubectl and Kueue's messages name a namespaced object."""
        return f"{self.namespace}/{self.name}"


def key_of(kind: str, obj: Obj) -> ObjectKey:
    meta = metadata(obj)
    return ObjectKey(kind, meta.get("namespace") or "", meta.get("name") or "")


def resource_version(obj: Obj | None) -> str | None:
    return metadata(obj).get("resourceVersion")


def revision(obj: Obj | None) -> int | None:
    """The resourceVersion as a number. resourceVersions are opaque in general; kube-apiserver's
    (and the local cluster's) are etcd revisions, so decimal ones are compared, anything else
    (None) is taken for neither older nor newer than another."""
    raw = resource_version(obj)
    return int(raw) if isinstance(raw, str) and raw.isdigit() else None


def kept(obj: Obj) -> Obj:
    """What the cache keeps of an object: all but `metadata.managedFields`, which nothing here
    reads (writes are merge patches, and the one update, a ClusterQueue's, leaves the server's
    managedFields as they were when it omits them) and which is more than half of a Workload's memory
    (17 KB a Workload with it, 7.5 KB without): the bulk of a controller holding 150,000."""
    meta = metadata(obj)
    if "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


def _older(obj: Obj, seen: Obj | None) -> bool:
    """Whether `obj` predates `seen` (`revision`)."""
    mine, theirs = revision(obj), revision(seen)
    return mine is not None and theirs is not None and mine < theirs


@frozen
class Change:
    """One observed change: the reconcilers' trigger. `old` is None for ADDED, `new` for DELETED."""

    key: ObjectKey
    type: str  # ADDED | MODIFIED | DELETED
    old: Obj | None
    new: Obj | None


LabelEntry = tuple[str, str, str, str]  # kind, namespace, label key, label value


class ObjectCache:
    def __init__(self) -> None:
        self._objects: dict[str, dict[ObjectKey, Obj]] = {}
        self._assumed: dict[ObjectKey, Obj] = {}
        self._deleted_uids: OrderedDict[str, None] = OrderedDict()
        # Objects by label value, for the label keys `labelled` was asked about (built on first use),
        # so "the pods of this AppWrapper" does not scan every pod on every reconcile.
        self._indexed_labels: set[str] = set()
        self._by_label: dict[LabelEntry, set[ObjectKey]] = {}
        self._entries_of: dict[ObjectKey, list[LabelEntry]] = {}

    def apply(self, kind: str, event_type: str, obj: Obj) -> Change | None:
        """Record a watch event; None when it tells nothing new (a replay of a known version)."""
        obj = kept(obj)
        key = key_of(kind, obj)
        objects = self._objects.setdefault(kind, {})
        old = objects.get(key)
        change = None
        if event_type == "DELETED":
            if old is not None:
                del objects[key]
                self._remember_deleted(old)
                change = Change(key, "DELETED", old, None)
        elif old is None or resource_version(old) != resource_version(obj):
            objects[key] = obj
            change = Change(key, "MODIFIED" if old is not None else "ADDED", old, obj)
        if self._assumed.pop(key, None) is not None or change is not None:
            self._reindex(key)
        return change

    def replace(self, kind: str, items: Iterable[Obj]) -> list[Change]:
        """A fresh list replaces everything known of a kind; the differences come back as changes."""
        fresh = {key_of(kind, obj): kept(obj) for obj in items}
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
            if change.old is not None and change.new is None:
                self._remember_deleted(change.old)
        self._objects[kind] = fresh
        for change in changes:
            self._reindex(change.key)
        return changes

    def assume(self, kind: str, obj: Obj) -> None:
        """Act as if `obj` were observed until its next event arrives or `forget` is called.

        Ignored when the watch already showed the object deleted, or a newer version of it.
        """
        obj = kept(obj)
        key = key_of(kind, obj)
        uid = metadata(obj).get("uid")
        if uid and uid in self._deleted_uids:
            return
        if _older(obj, self._objects.get(kind, {}).get(key)):
            return
        self._assumed[key] = obj
        self._reindex(key)

    def _remember_deleted(self, obj: Obj) -> None:
        uid = metadata(obj).get("uid")
        if uid:
            self._deleted_uids[uid] = None
            if len(self._deleted_uids) > DELETED_UIDS_REMEMBERED:
                self._deleted_uids.popitem(last=False)

    def forget(self, key: ObjectKey) -> None:
        if self._assumed.pop(key, None) is not None:
            self._reindex(key)

    def labelled(self, kind: str, namespace: str, label: str, value: str) -> list[Obj]:
        """The objects of a kind in a namespace whose `label` is `value`, assumptions included."""
        if label not in self._indexed_labels:
            self._indexed_labels.add(label)
            for key in [*(k for objects in self._objects.values() for k in objects), *self._assumed]:
                self._reindex(key)
        keys = sorted(self._by_label.get((kind, namespace, label, value), ()))
        return [self._assumed[k] if k in self._assumed else self._objects[k.kind][k] for k in keys]

    def _reindex(self, key: ObjectKey) -> None:
        """File `key` under the indexed labels of what `get` now returns for it."""
        if not self._indexed_labels:
            return
        for entry in self._entries_of.pop(key, ()):
            bucket = self._by_label[entry]
            bucket.discard(key)
            if not bucket:
                del self._by_label[entry]
        obj = self.get(key.kind, key.namespace, key.name)
        labels = metadata(obj).get("labels") or {}
        entries = [(key.kind, key.namespace, label, str(labels[label])) for label in self._indexed_labels if label in labels]
        for entry in entries:
            self._by_label.setdefault(entry, set()).add(key)
        if entries:
            self._entries_of[key] = entries

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
