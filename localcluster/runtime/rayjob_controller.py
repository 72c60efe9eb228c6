"""The KubeRay stand-in for RayJobs: its RayCluster and submitter Job (sim/rayjobs.py)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from localcluster.runner import ControllerContext
from localcluster.runtime.base import Controller, merge_patch, object_key, owner_key
from localcluster.runtime.client import JOBS, RAYCLUSTERS, RAYJOBS, Api, ApiError, ignore_gone
from localcluster.runtime.events import record
from localcluster.runtime.informers import SharedInformers
from localcluster.sim.conditions import controlled_by
from localcluster.sim.rayjobs import reconcile_rayjob


class RayJobController(Controller):
    component = "rayjob-controller"

    def __init__(self, ctx: ControllerContext, api: Api, shared: SharedInformers) -> None:
        super().__init__(ctx, api, shared)
        self.rayjobs = self.informer(RAYJOBS, self.enqueue)
        self.clusters = self.informer(RAYCLUSTERS, self._on_cluster)
        self.jobs = self.informer(JOBS, self._on_job)

    def _on_job(self, kind: str, job: dict[str, Any]) -> None:
        key = owner_key(job, "RayJob")
        if key:
            self.queue.add(key)

    def _on_cluster(self, kind: str, cluster: dict[str, Any]) -> None:
        """Its own cluster, or one a clusterSelector names (made by hand, owned by nobody)."""
        namespace, name = cluster["metadata"].get("namespace", ""), cluster["metadata"]["name"]
        for rayjob in self.rayjobs.values():
            if rayjob["metadata"].get("namespace") == namespace and \
                    (rayjob.get("status") or {}).get("rayClusterName") == name:
                self.queue.add(object_key(rayjob))

    async def sync(self, key: str) -> dt.timedelta | None:
        namespace, name = key.split("/", 1)
        rayjob = self.rayjobs.get(namespace, name)
        if rayjob is None or rayjob["metadata"].get("deletionTimestamp"):
            return None
        uid = rayjob["metadata"].get("uid", "")
        cluster_name = (rayjob.get("status") or {}).get("rayClusterName")
        cluster = self.clusters.get(namespace, cluster_name) if cluster_name else None
        submitter = self.jobs.get(namespace, name)
        if submitter is not None and not controlled_by(submitter, uid):
            submitter = None
        now = self.now()
        step = reconcile_rayjob(rayjob, cluster, submitter, now)
        if step.create_cluster is not None:
            await self._create(rayjob, RAYCLUSTERS, step.create_cluster, self.clusters, "RayCluster", now)
        if step.create_job is not None:
            await self._create(rayjob, JOBS, step.create_job, self.jobs, "RayJobSubmitter", now)
        if step.delete_cluster is not None:
            await ignore_gone(self.api.delete(RAYCLUSTERS.path(namespace, step.delete_cluster),
                                              {"propagationPolicy": "Background"}))
        if step.delete_job is not None:
            await ignore_gone(self.api.delete(JOBS.path(namespace, step.delete_job), {"propagationPolicy": "Background"}))
        for event in step.events:
            await record(self.api, rayjob, event.type, event.reason, event.message, self.component, now)
        patch = merge_patch(rayjob.get("status") or {}, step.status)
        if patch:
            self.rayjobs.remember(await ignore_gone(self.api.patch(RAYJOBS.path(namespace, name, "status"),
                                                                   {"status": patch})))
        return step.requeue_after


    async def _create(self, rayjob: dict[str, Any], resource: Any, obj: dict[str, Any], cache: Any, what: str,
                      now: dt.datetime) -> None:
        """Create, then say so as KubeRay does: `Created<what>`, or `FailedToCreate<what>` with the reason."""
        namespace, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
        try:
            cache.remember(await self.api.create(resource.path(namespace), obj))
        except ApiError as err:
            if err.reason != "AlreadyExists":
                await record(self.api, rayjob, "Warning", f"FailedToCreate{what}", err.message, self.component, now)
            return
        label = "Kubernetes Job" if what == "RayJobSubmitter" else "RayCluster"
        await record(self.api, rayjob, "Normal", f"Created{what}", f"Created {label} {namespace}/{name}",
                     self.component, now)
