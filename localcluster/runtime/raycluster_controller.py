"""The KubeRay stand-in for RayClusters: head and worker pods and the head Service (sim/rayclusters.py)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from localcluster.runner import ControllerContext
from localcluster.runtime.base import Controller, merge_patch, owner_key
from localcluster.runtime.client import PODS, RAYCLUSTERS, SERVICES, Api, ApiError, ignore_gone
from localcluster.runtime.events import record
from localcluster.runtime.informers import SharedInformers
from localcluster.runtime.workload_writes import create_pods, delete_pods
from localcluster.sim.conditions import controlled_by
from localcluster.sim.rayclusters import CLUSTER_LABEL, reconcile_raycluster


class RayClusterController(Controller):
    component = "raycluster-controller"

    def __init__(self, ctx: ControllerContext, api: Api, shared: SharedInformers) -> None:
        super().__init__(ctx, api, shared)
        self.clusters = self.informer(RAYCLUSTERS, self.enqueue)
        self.pods = self.informer(PODS, self._on_child)
        self.services = self.informer(SERVICES, self._on_child)

    def _on_child(self, kind: str, obj: dict[str, Any]) -> None:
        if CLUSTER_LABEL not in ((obj.get("metadata") or {}).get("labels") or {}):
            return
        key = owner_key(obj, "RayCluster")
        if key:
            self.queue.add(key)

    async def sync(self, key: str) -> dt.timedelta | None:
        namespace, name = key.split("/", 1)
        cluster = self.clusters.get(namespace, name)
        if cluster is None or cluster["metadata"].get("deletionTimestamp"):
            return None
        uid = cluster["metadata"].get("uid", "")
        pods = [p for p in self.pods.values() if p["metadata"].get("namespace") == namespace and controlled_by(p, uid)]
        services = [s for s in self.services.values()
                    if s["metadata"].get("namespace") == namespace and controlled_by(s, uid)]
        now = self.now()
        step = reconcile_raycluster(cluster, pods, services, now)
        for service in step.create_services:
            try:
                self.services.remember(await self.api.create(SERVICES.path(namespace), service))
            except ApiError as err:
                if err.reason != "AlreadyExists":
                    await record(self.api, cluster, "Warning", "FailedToCreateService", err.message, self.component, now)
        await delete_pods(self.api, cluster, namespace, step.delete_pods, self.pods, self.component, now)
        await create_pods(self.api, cluster, step.create_pods, self.pods, self.component, now)
        for event in step.events:
            await record(self.api, cluster, event.type, event.reason, event.message, self.component, now)
        patch = merge_patch(cluster.get("status") or {}, step.status)
        if patch:
            self.clusters.remember(await ignore_gone(self.api.patch(RAYCLUSTERS.path(namespace, name, "status"),
                                                                    {"status": patch})))
        return None
