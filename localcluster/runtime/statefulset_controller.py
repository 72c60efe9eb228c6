"""StatefulSets: each keeps its stably named pods, one at a time or all at once (sim/statefulsets.py)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from localcluster.runner import ControllerContext
from localcluster.runtime.base import Controller, merge_patch, owner_key
from localcluster.runtime.client import PODS, STATEFULSETS, Api, ignore_gone
from localcluster.runtime.informers import SharedInformers
from localcluster.runtime.workload_writes import create_pods, delete_pods
from localcluster.sim.statefulsets import reconcile_statefulset


class StatefulSetController(Controller):
    component = "statefulset-controller"

    def __init__(self, ctx: ControllerContext, api: Api, shared: SharedInformers) -> None:
        super().__init__(ctx, api, shared)
        self.sets = self.informer(STATEFULSETS, self.enqueue)
        self.pods = self.informer(PODS, self._on_pod)

    def _on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        owner = owner_key(pod, "StatefulSet")
        if owner:
            self.queue.add(owner)

    async def sync(self, key: str) -> dt.timedelta | None:
        namespace, name = key.split("/", 1)
        sts = self.sets.get(namespace, name)
        if sts is None or sts["metadata"].get("deletionTimestamp"):
            return None
        pods = [p for p in self.pods.values() if p["metadata"].get("namespace") == namespace]
        step = reconcile_statefulset(sts, pods)
        now = self.now()
        await delete_pods(self.api, sts, namespace, step.deletes, self.pods, self.component, now)
        await create_pods(self.api, sts, step.creates, self.pods, self.component, now)
        patch = merge_patch(sts.get("status") or {}, step.status)
        if patch:
            self.sets.remember(await ignore_gone(self.api.patch(STATEFULSETS.path(namespace, name, "status"),
                                                                {"status": patch})))
        return None
