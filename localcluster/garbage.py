"""The in-process part of kube-controller-manager: garbage collection and namespace deletion.

Decisions are pure functions of stored objects (`gc_decision`, `namespace_decision`); the
`Collector` task applies them to the store when a write wakes it up. Background deletion
removes dependents whose owners are all gone; Orphan strips owner references, then the
`orphan` finalizer; Foreground deletes dependents and holds the owner (finalizer
`foregroundDeletion`) until no dependent with blockOwnerDeletion is left. A namespace being
deleted loses its contents, then its `kubernetes` finalizer, then itself.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from localcluster import lifecycle
from localcluster.lifecycle import FOREGROUND, ORPHAN
from localcluster.resources import Registry
from localcluster.store import Event, GroupResource, Store

log = logging.getLogger("localcluster.garbage")

NAMESPACES: GroupResource = ("", "namespaces")


@dataclass(frozen=True)
class Delete:
    gr: GroupResource
    namespace: str
    name: str
    policy: str  # Background | Foreground


@dataclass(frozen=True)
class Rewrite:
    """Store a changed copy of an object (owner references or finalizers removed)."""

    gr: GroupResource
    obj: dict[str, Any]


def _refs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return obj["metadata"].get("ownerReferences") or []


def dependent_decision(gr: GroupResource, obj: dict[str, Any], alive: Callable[[str], bool]) -> list[Delete | Rewrite]:
    """A dependent whose owners are all gone is deleted; dangling references to dead owners are dropped."""
    refs = _refs(obj)
    if not refs:
        return []
    living = [r for r in refs if alive(r.get("uid", ""))]
    meta = obj["metadata"]
    if not living:
        if meta.get("deletionTimestamp"):
            return []
        return [Delete(gr, meta.get("namespace", ""), meta["name"], "Background")]
    if len(living) != len(refs):
        changed = {**obj, "metadata": {**meta, "ownerReferences": living}}
        return [Rewrite(gr, changed)]
    return []


def owner_decision(gr: GroupResource, owner: dict[str, Any],
                   dependents: list[tuple[GroupResource, dict[str, Any]]]) -> list[Delete | Rewrite]:
    """What to do for an owner being deleted with the orphan or foregroundDeletion finalizer."""
    meta = owner["metadata"]
    finalizers = meta.get("finalizers") or []
    uid = meta.get("uid")
    out: list[Delete | Rewrite] = []
    if ORPHAN in finalizers:
        for dep_gr, dep in dependents:
            kept = [r for r in _refs(dep) if r.get("uid") != uid]
            dep_meta = {k: v for k, v in dep["metadata"].items() if k != "ownerReferences"}
            if kept:
                dep_meta["ownerReferences"] = kept
            out.append(Rewrite(dep_gr, {**dep, "metadata": dep_meta}))
        out.append(Rewrite(gr, _without_finalizer(owner, ORPHAN)))
        return out
    if FOREGROUND in finalizers:
        blocking = False
        for dep_gr, dep in dependents:
            ref = next((r for r in _refs(dep) if r.get("uid") == uid), {})
            if ref.get("blockOwnerDeletion"):
                blocking = True
            if not dep["metadata"].get("deletionTimestamp"):
                policy = "Foreground" if ref.get("blockOwnerDeletion") else "Background"
                out.append(Delete(dep_gr, dep["metadata"].get("namespace", ""), dep["metadata"]["name"], policy))
        if not blocking:
            out.append(Rewrite(gr, _without_finalizer(owner, FOREGROUND)))
    return out


def _without_finalizer(obj: dict[str, Any], finalizer: str) -> dict[str, Any]:
    kept = [f for f in obj["metadata"].get("finalizers") or [] if f != finalizer]
    meta = {**obj["metadata"], "finalizers": kept}
    if not kept:
        del meta["finalizers"]
    return {**obj, "metadata": meta}


class Collector:
    """Wakes on store events, decides, and applies the decisions straight to the store."""

    def __init__(self, store: Store, registry: Registry, now: Callable[[], _dt.datetime]) -> None:
        self.store, self.registry, self.now = store, registry, now
        self._gone: set[str] = set()
        self._owners: set[tuple[GroupResource, str, str]] = set()
        self._namespaces: set[str] = set()
        self._orphans: set[tuple[GroupResource, str, str]] = set()
        self._wake = asyncio.Event()
        store.add_listener(self.on_event)

    def on_event(self, gr: GroupResource, event: Event) -> None:
        meta = event.entry.obj["metadata"]
        key = (gr, meta.get("namespace", ""), meta["name"])
        if event.type == "DELETED":
            if meta.get("uid"):
                self._gone.add(meta["uid"])
        else:
            if meta.get("deletionTimestamp"):
                finalizers = meta.get("finalizers") or []
                if ORPHAN in finalizers or FOREGROUND in finalizers:
                    self._owners.add(key)
                if gr == NAMESPACES:
                    self._namespaces.add(meta["name"])
            if event.type == "ADDED" and meta.get("ownerReferences"):
                self._orphans.add(key)
        for ref in meta.get("ownerReferences") or ():
            owner = self.store.by_uid(ref.get("uid", ""))
            if owner is not None and owner[1].obj["metadata"].get("deletionTimestamp"):
                owner_meta = owner[1].obj["metadata"]
                self._owners.add((owner[0], owner_meta.get("namespace", ""), owner_meta["name"]))
        self._wake.set()

    def _alive(self, uid: str) -> bool:
        return self.store.by_uid(uid) is not None

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await asyncio.sleep(0)  # let the request that woke us finish answering first
            try:
                self.step()
            except Exception:  # noqa: BLE001 - keep collecting; a bug here must not stop the cluster
                log.exception("garbage collection step failed")

    def step(self) -> None:
        """Apply every pending decision once (tests call this directly)."""
        gone, self._gone = self._gone, set()
        for uid in gone:
            for gr, entry in self.store.dependents(uid):
                self._apply(dependent_decision(gr, entry.copy(), self._alive))
        orphans, self._orphans = self._orphans, set()
        for gr, ns, name in orphans:
            orphan = self.store.get(gr, ns, name)
            if orphan is not None and not all(self._alive(r.get("uid", "")) for r in _refs(orphan.obj)):
                self._apply(dependent_decision(gr, orphan.copy(), self._alive))
        owners, self._owners = self._owners, set()
        for gr, ns, name in owners:
            owner = self.store.get(gr, ns, name)
            if owner is not None and owner.obj["metadata"].get("deletionTimestamp"):
                deps = [(g, e.copy()) for g, e in self.store.dependents(owner.obj["metadata"].get("uid", ""))]
                self._apply(owner_decision(gr, owner.copy(), deps))
        for namespace in list(self._namespaces):
            if self._namespace_step(namespace):
                self._namespaces.discard(namespace)

    def _namespace_step(self, namespace: str) -> bool:
        """Delete a terminating namespace's contents; True once the namespace is gone."""
        ns = self.store.get(NAMESPACES, "", namespace)
        if ns is None:
            return True
        if not ns.obj["metadata"].get("deletionTimestamp"):
            return True
        contents = [gr for gr in self.store.groups() if gr != NAMESPACES]
        for gr in contents:
            for entry in self.store.list(gr, namespace):
                if not entry.obj["metadata"].get("deletionTimestamp"):
                    self._apply([Delete(gr, namespace, entry.obj["metadata"]["name"], "Background")])
        if any(self.store.list(gr, namespace) for gr in contents):
            return False
        obj = ns.copy()
        obj["spec"] = {**(obj.get("spec") or {}), "finalizers": []}
        if obj["metadata"].get("finalizers"):
            self.store.put(NAMESPACES, obj)
            return False
        self.store.remove(NAMESPACES, "", namespace)
        return True

    def _apply(self, actions: list[Delete | Rewrite]) -> None:
        for action in actions:
            if isinstance(action, Rewrite):
                self._rewrite(action)
            else:
                self._delete(action)

    def _rewrite(self, action: Rewrite) -> None:
        meta = action.obj["metadata"]
        current = self.store.get(action.gr, meta.get("namespace", ""), meta["name"])
        if current is None or current.rv != int(meta.get("resourceVersion", "0") or 0):
            self._wake.set()  # changed meanwhile: the next event brings it back
            return
        obj = {**action.obj, "metadata": dict(action.obj["metadata"])}
        if lifecycle.finished_deleting(obj):
            self.store.put(action.gr, obj)
            self.store.remove(action.gr, meta.get("namespace", ""), meta["name"])
        else:
            self.store.put(action.gr, obj)

    def _delete(self, action: Delete) -> None:
        entry = self.store.get(action.gr, action.namespace, action.name)
        rt = self.registry.for_storage(*action.gr)
        if entry is None or rt is None:
            return
        current = entry.copy()
        plan = lifecycle.plan_delete(rt, current, {"propagationPolicy": action.policy}, self.now())
        if plan.remove:
            self.store.remove(action.gr, action.namespace, action.name)
        elif plan.obj is not current:
            self.store.put(action.gr, plan.obj)
