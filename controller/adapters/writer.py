"""Every write the controller makes goes through here, and only while it leads.

Status is written through `/status` as a minimal merge patch carrying the observed
resourceVersion, so a write based on stale state is refused (409) instead of clobbering a newer
one; on a conflict the object is read again and the patch recomputed from it, a few times.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Mapping

from batchgate.api.objects import metadata
from controller.adapters.kube import ApiError, KubeClient, Resource
from controller.state.cache import Obj

log = logging.getLogger(__name__)

PatchFn = Callable[[Obj], "Obj | None"]


class NotLeader(RuntimeError):
    """A write was attempted while this process does not hold the Lease."""


class Writer:
    def __init__(self, client: KubeClient, is_leader: Callable[[], bool], *, conflict_attempts: int = 5,
                 on_conflict: Callable[[], None] = lambda: None) -> None:
        self.client = client
        self.is_leader = is_leader
        self.conflict_attempts = conflict_attempts
        self.conflicts = 0  # status conflicts retried
        self.on_conflict = on_conflict

    def _check(self) -> None:
        if not self.is_leader():
            raise NotLeader("not the leader: write refused")

    def create(self, res: Resource, obj: Obj) -> dict[str, Any]:
        self._check()
        return self.client.create(res, obj)

    def replace(self, res: Resource, obj: Obj) -> dict[str, Any]:
        self._check()
        return self.client.replace(res, obj)

    def patch(self, res: Resource, name: str, namespace: str | None, patch: Mapping[str, Any]) -> dict[str, Any]:
        self._check()
        return self.client.patch(res, name, namespace, patch)

    def delete(self, res: Resource, name: str, namespace: str | None, uid: str | None = None,
               grace_period_seconds: int | None = None) -> None:
        self._check()
        try:
            self.client.delete(res, name, namespace, {"uid": uid} if uid else None, grace_period_seconds)
        except ApiError as exc:
            if not exc.not_found:
                raise

    def update_status(self, res: Resource, observed: Obj, compute: PatchFn) -> dict[str, Any] | None:
        """Patch `/status` with `compute(object)`; on conflict re-read and recompute. None: nothing to do."""
        current: Obj = observed
        for attempt in range(self.conflict_attempts):
            patch = compute(current)
            if not patch:
                return None
            meta = metadata(current)
            body = {**patch, "metadata": {"resourceVersion": meta.get("resourceVersion")}}
            self._check()
            try:
                return self.client.patch(res, meta["name"], meta.get("namespace"), body, subresource="status")
            except ApiError as exc:
                if not exc.conflict or attempt == self.conflict_attempts - 1:
                    raise
                self.conflicts += 1
                self.on_conflict()
                log.info("conflict writing %s %s status; re-reading", res.kind, meta.get("name"))
                current = self.client.get(res, meta["name"], meta.get("namespace"))
        return None
