"""The etcd of the local cluster: objects, one global resourceVersion, watch history, watchers.

Everything here runs on the server's event loop thread, so there are no locks: a write is one
synchronous call that stores the object, records the event and queues it for every watcher.
Stored dicts are never mutated after `put`; readers copy (`Entry.copy()`) before changing one.
Each object's JSON is serialised once, at write time, so lists and watches only join bytes.
"""

from __future__ import annotations

import asyncio
import bisect
import builtins
import json
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

GroupResource = tuple[str, str]
Key = tuple[str, str]  # (namespace or "", name)

HISTORY_PER_RESOURCE = 1000
"""Events a resource's history always keeps, however old."""
HISTORY_FRESH_SECONDS = 75.0
"""Beyond those, events younger than this are kept too, as kube-apiserver's watch cache keeps at
least 75 s of them (`DefaultEventFreshDuration`, k8s.io/apiserver pkg/storage/cacher): a client
that spends a minute listing a large collection can still watch on from the list's version."""
HISTORY_MAX = 100 * 1024
"""And never more than this (the watch cache's `defaultUpperBoundCapacity`)."""
WATCHER_QUEUE_LIMIT = 50_000


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass(frozen=True)
class Entry:
    """A stored object with its serialised form and resourceVersion.

    `raw` is the whole object as served; `obj` is the same object without
    metadata.managedFields, for selectors, tables and controllers, which never read them
    (managedFields are often half an object's size). `copy()` gives the whole object.
    """

    obj: dict[str, Any]
    raw: bytes
    rv: int

    def copy(self) -> dict[str, Any]:
        return json.loads(self.raw)


def _entry(obj: dict[str, Any], rv: int) -> Entry:
    raw = dumps(obj)
    meta = obj["metadata"]
    if "managedFields" in meta:
        obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return Entry(obj, raw, rv)


@dataclass(frozen=True)
class Event:
    """One change: `old` is the state before (None for ADDED), for selector transitions."""

    type: str
    rv: int
    entry: Entry
    old: dict[str, Any] | None


class Watcher:
    """A per-watch queue, filled synchronously by writes and drained by one stream.

    A watcher that falls WATCHER_QUEUE_LIMIT events behind is closed rather than allowed to
    hold memory or slow writers; its client reconnects from its last resourceVersion.
    """

    def __init__(self, accepts: Callable[[Event], list[tuple[str, Entry]]]) -> None:
        self._accepts = accepts
        self.events: deque[tuple[str, Entry]] = deque()
        self.ready = asyncio.Event()
        self.closed = False

    def offer(self, event: Event) -> None:
        if self.closed:
            return
        self.events.extend(self._accepts(event))
        if len(self.events) > WATCHER_QUEUE_LIMIT:
            self.close()
        if self.events:
            self.ready.set()

    def close(self) -> None:
        self.closed = True
        self.ready.set()


@dataclass
class Bucket:
    """Objects and recent history of one GroupResource."""

    objects: dict[Key, Entry] = field(default_factory=dict)
    keys: list[Key] = field(default_factory=list)  # sorted, as etcd orders keys: by namespace, then name
    history: deque[Event] = field(default_factory=deque)
    recorded: deque[float] = field(default_factory=deque)  # when each event of `history` was recorded (monotonic)
    evicted_rv: int = 0  # resourceVersion of the newest event no longer in history
    watchers: set[Watcher] = field(default_factory=set)


class TooOld(Exception):
    """A watch asked for history that has been evicted."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")


Listener = Callable[[GroupResource, Event], None]


class Store:
    def __init__(self, monotonic: Callable[[], float] = time.monotonic,
                 history_seconds: float = HISTORY_FRESH_SECONDS) -> None:
        """`history_seconds`: how young an event beyond the last HISTORY_PER_RESOURCE must be to be kept."""
        self._monotonic, self.history_seconds = monotonic, history_seconds
        self.rv = 1
        self._buckets: dict[GroupResource, Bucket] = {}
        self._by_uid: dict[str, tuple[GroupResource, Key]] = {}
        self._dependents: dict[str, set[tuple[GroupResource, Key]]] = {}
        self._listeners: list[Listener] = []

    def bucket(self, gr: GroupResource) -> Bucket:
        found = self._buckets.get(gr)
        if found is None:
            found = self._buckets[gr] = Bucket()
        return found

    def add_listener(self, listener: Listener) -> None:
        """Called after every change (controllers inside the server: GC, namespaces, CRDs)."""
        self._listeners.append(listener)

    # reads

    def get(self, gr: GroupResource, namespace: str, name: str) -> Entry | None:
        bucket = self._buckets.get(gr)
        return bucket.objects.get((namespace, name)) if bucket else None

    def list(self, gr: GroupResource, namespace: str | None = None) -> list[Entry]:
        """Objects in key order (namespace, name); a namespace's objects are one slice of it."""
        bucket = self._buckets.get(gr)
        if bucket is None:
            return []
        objects = bucket.objects
        return [objects[key] for key in self.keys(gr, namespace)]

    def keys(self, gr: GroupResource, namespace: str | None = None, after: Key | None = None) -> builtins.list[Key]:
        """Keys in order, of one namespace if given, strictly after `after` if given (paging)."""
        bucket = self._buckets.get(gr)
        if bucket is None:
            return []
        keys = bucket.keys
        low, high = 0, len(keys)
        if namespace is not None:
            low = bisect.bisect_left(keys, (namespace, ""))
            high = bisect.bisect_left(keys, (namespace + "\x00", ""))
        if after is not None:
            low = max(low, bisect.bisect_right(keys, after))
        return keys[low:high]

    def entries(self, gr: GroupResource, keys: builtins.list[Key]) -> builtins.list[Entry]:
        objects = self.bucket(gr).objects
        return [objects[key] for key in keys]

    def by_uid(self, uid: str) -> tuple[GroupResource, Entry] | None:
        found = self._by_uid.get(uid)
        if found is None:
            return None
        gr, (ns, name) = found
        entry = self.get(gr, ns, name)
        return (gr, entry) if entry else None

    def dependents(self, owner_uid: str) -> builtins.list[tuple[GroupResource, Entry]]:
        out = []
        for gr, (ns, name) in self._dependents.get(owner_uid, ()):
            entry = self.get(gr, ns, name)
            if entry is not None:
                out.append((gr, entry))
        return out

    def groups(self) -> Iterable[GroupResource]:
        return list(self._buckets)

    # writes

    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def put(self, gr: GroupResource, obj: dict[str, Any]) -> Entry:
        """Store `obj` (already complete but for resourceVersion) and announce ADDED/MODIFIED."""
        meta = obj["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        rv = self.next_rv()
        meta["resourceVersion"] = str(rv)
        entry = _entry(obj, rv)
        bucket = self.bucket(gr)
        previous = bucket.objects.get(key)
        bucket.objects[key] = entry
        if previous is None:
            bisect.insort(bucket.keys, key)
        else:
            self._unindex(gr, key, previous.obj)
        self._index(gr, key, obj)
        self._announce(gr, bucket, Event("MODIFIED" if previous else "ADDED", rv, entry, previous.obj if previous else None))
        return entry

    def remove(self, gr: GroupResource, namespace: str, name: str) -> Entry | None:
        """Delete and announce DELETED with the last state at the deletion's resourceVersion."""
        bucket = self.bucket(gr)
        previous = bucket.objects.pop((namespace, name), None)
        if previous is None:
            return None
        del bucket.keys[bisect.bisect_left(bucket.keys, (namespace, name))]
        self._unindex(gr, (namespace, name), previous.obj)
        rv = self.next_rv()
        last = previous.copy()
        last["metadata"]["resourceVersion"] = str(rv)
        entry = _entry(last, rv)
        self._announce(gr, bucket, Event("DELETED", rv, entry, previous.obj))
        return entry

    def drop_resource(self, gr: GroupResource) -> None:
        """Delete every object of a resource (its CRD is gone), announcing each, then end its watches."""
        bucket = self._buckets.get(gr)
        if bucket is None:
            return
        for namespace, name in list(bucket.keys):
            self.remove(gr, namespace, name)
        for watcher in bucket.watchers:
            watcher.close()
        del self._buckets[gr]

    # watches

    def since(self, gr: GroupResource, rv: int) -> builtins.list[Event]:
        """Events after `rv`; TooOld if some of them have been evicted."""
        bucket = self.bucket(gr)
        if rv < bucket.evicted_rv:
            oldest = bucket.history[0].rv if bucket.history else self.rv
            raise TooOld(rv, oldest - 1)
        return [e for e in bucket.history if e.rv > rv]

    def watch(self, gr: GroupResource, watcher: Watcher) -> None:
        self.bucket(gr).watchers.add(watcher)

    def unwatch(self, gr: GroupResource, watcher: Watcher) -> None:
        bucket = self._buckets.get(gr)
        if bucket is not None:
            bucket.watchers.discard(watcher)

    def close_watches(self) -> None:
        """End every watch stream (server shutdown)."""
        for bucket in self._buckets.values():
            for watcher in bucket.watchers:
                watcher.close()

    def _announce(self, gr: GroupResource, bucket: Bucket, event: Event) -> None:
        now = self._monotonic()
        bucket.history.append(event)
        bucket.recorded.append(now)
        while len(bucket.history) > HISTORY_MAX or (len(bucket.history) > HISTORY_PER_RESOURCE
                                                   and now - bucket.recorded[0] >= self.history_seconds):
            bucket.evicted_rv = bucket.history.popleft().rv
            bucket.recorded.popleft()
        for watcher in list(bucket.watchers):
            watcher.offer(event)
        for listener in self._listeners:
            listener(gr, event)

    def _index(self, gr: GroupResource, key: Key, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        uid = meta.get("uid")
        if uid:
            self._by_uid[uid] = (gr, key)
        for ref in meta.get("ownerReferences") or ():
            owner = ref.get("uid")
            if owner:
                self._dependents.setdefault(owner, set()).add((gr, key))

    def _unindex(self, gr: GroupResource, key: Key, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        uid = meta.get("uid")
        if uid and self._by_uid.get(uid) == (gr, key):
            del self._by_uid[uid]
        for ref in meta.get("ownerReferences") or ():
            owner = ref.get("uid")
            deps = self._dependents.get(owner) if owner else None
            if deps is not None:
                deps.discard((gr, key))
                if not deps:
                    del self._dependents[owner]
