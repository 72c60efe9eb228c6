"""An in-memory API for running the controller's real admission loop without a server.

It answers the calls the loop's `Writer` and `EventRecorder` make (get, create, merge patch of
`/status` with the resourceVersion precondition), records every write, and hands each change to
`deliver` as a watch event, so the loop sees its own writes come back as it does on a cluster.
Objects are stored as given — no defaulting, no uid or creationTimestamp invented — so a trace's
identities and times, which decide queue order and preemption ties, stay what the trace says.
"""

from __future__ import annotations

import copy
import itertools
import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from controller.adapters.kube import ApiError, Resource
from localcluster.apiserver.patches import merge_patch

Obj = dict[str, Any]
ObjKey = tuple[str, str, str]  # kind, namespace, name


@dataclass(frozen=True)
class Write:
    kind: str
    namespace: str
    name: str
    before: Obj
    after: Obj


class RecordingApi:
    def __init__(self, deliver: Callable[[str, str, Obj], None]) -> None:
        self.deliver = deliver  # (kind, ADDED | MODIFIED | DELETED, object)
        self.objects: dict[ObjKey, Obj] = {}
        self.writes: list[Write] = []
        self._versions = itertools.count(1)
        self._lock = threading.RLock()

    # --- the world's side: what a user, a job or a trace does --------------------------------
    def put(self, obj: Mapping[str, Any]) -> None:
        """Create or replace, as `kubectl apply` of the whole object would."""
        with self._lock:
            key = _key(obj)
            stored = self._stamp(copy.deepcopy(dict(obj)))
            event = "MODIFIED" if key in self.objects else "ADDED"
            self.objects[key] = stored
            self.deliver(key[0], event, stored)

    def remove(self, kind: str, namespace: str, name: str) -> None:
        with self._lock:
            gone = self.objects.pop((kind, namespace, name))
            self.deliver(kind, "DELETED", gone)

    def set_status(self, kind: str, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        """A status write by someone other than the loop (a job integration); not recorded."""
        with self._lock:
            self._apply_patch((kind, namespace, name), patch)

    def find(self, kind: str) -> list[Obj]:
        with self._lock:
            return [obj for (k, _, _), obj in sorted(self.objects.items()) if k == kind]

    # --- the client's side: what the loop's Writer and EventRecorder call ---------------------
    def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj:
        with self._lock:
            obj = self.objects.get((res.kind, namespace or "", name))
            if obj is None:
                raise ApiError(404, "NotFound", f"{res.kind} {name} not found")
            return copy.deepcopy(obj)

    def create(self, res: Resource, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
        with self._lock:
            key = _key({**obj, "kind": res.kind})
            if key in self.objects:
                raise ApiError(409, "AlreadyExists", f"{res.kind} {key[2]} already exists")
            stored = self._stamp(copy.deepcopy({**obj, "kind": res.kind}))
            self.objects[key] = stored
            self.deliver(res.kind, "ADDED", stored)
            return copy.deepcopy(stored)

    def patch(self, res: Resource, name: str, namespace: str | None, patch: Mapping[str, Any],
              subresource: str | None = None) -> Obj:
        with self._lock:
            key = (res.kind, namespace or "", name)
            before = self.objects.get(key)
            if before is None:
                raise ApiError(404, "NotFound", f"{res.kind} {name} not found")
            wanted = (patch.get("metadata") or {}).get("resourceVersion")
            if wanted is not None and wanted != before["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", f"{res.kind} {name}: the object has been modified")
            after = self._apply_patch(key, {k: v for k, v in patch.items() if k != "metadata"})
            self.writes.append(Write(*key, copy.deepcopy(before), copy.deepcopy(after)))
            return copy.deepcopy(after)

    def _apply_patch(self, key: ObjKey, patch: Mapping[str, Any]) -> Obj:
        after = self._stamp(merge_patch(self.objects[key], dict(patch)))
        self.objects[key] = after
        self.deliver(key[0], "MODIFIED", after)
        return after

    def _stamp(self, obj: Obj) -> Obj:
        obj.setdefault("metadata", {})["resourceVersion"] = str(next(self._versions))
        return obj


def _key(obj: Mapping[str, Any]) -> ObjKey:
    meta = obj.get("metadata") or {}
    return str(obj.get("kind")), meta.get("namespace") or "", meta.get("name") or ""
