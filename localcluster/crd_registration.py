"""Serving CRDs: a stored CustomResourceDefinition is served at once and marked Established.

Runs synchronously as a store listener, so the write that creates a CRD returns with its
resources already routable; deleting a CRD stops serving it and drops its objects.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from typing import Any

from localcluster import crd_schema
from localcluster.clock import rfc3339
from localcluster.resources import Registry
from localcluster.store import Event, GroupResource, Store

CRDS: GroupResource = ("apiextensions.k8s.io", "customresourcedefinitions")


def established_status(crd: dict[str, Any], now: _dt.datetime) -> dict[str, Any]:
    spec = crd["spec"]
    names = dict(spec["names"])
    stamp = rfc3339(now)
    old = {c.get("type"): c for c in (crd.get("status") or {}).get("conditions") or []}

    def condition(kind: str, reason: str, message: str) -> dict[str, Any]:
        previous = old.get(kind)
        since = previous.get("lastTransitionTime") if previous and previous.get("status") == "True" else stamp
        return {"type": kind, "status": "True", "lastTransitionTime": since, "reason": reason, "message": message}

    return {
        "conditions": [condition("NamesAccepted", "NoConflicts", "no conflicts found"),
                       condition("Established", "InitialNamesAccepted", "the initial names have been accepted")],
        "acceptedNames": names,
        "storedVersions": [v["name"] for v in spec["versions"] if v.get("storage")],
    }


class CrdRegistrar:
    def __init__(self, store: Store, registry: Registry, now: Callable[[], _dt.datetime]) -> None:
        self.store, self.registry, self.now = store, registry, now
        self._busy = False
        store.add_listener(self.on_event)

    def on_event(self, gr: GroupResource, event: Event) -> None:
        if gr != CRDS or self._busy:
            return
        crd = event.entry.obj
        name = crd["metadata"]["name"]
        if event.type == "DELETED":
            self._forget(crd)
            return
        types = crd_schema.resource_types(crd)
        self.registry.set_crd(name, types)
        status = established_status(crd, self.now())
        if crd.get("status") == status:
            return
        updated = event.entry.copy()
        updated["status"] = status
        self._busy = True
        try:
            self.store.put(CRDS, updated)
        finally:
            self._busy = False

    def _forget(self, crd: dict[str, Any]) -> None:
        spec = crd["spec"]
        self.registry.remove_crd(crd["metadata"]["name"])
        self.store.drop_resource((spec["group"], spec["names"]["plural"]))
