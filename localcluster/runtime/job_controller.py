"""The Job controller: for each Job, `sim.jobs.reconcile` over its pods, then write the status
(first, so counts are durable), drop tracking finalizers, delete and create pods, record events,
and delete Jobs whose ttlSecondsAfterFinished has run out."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from localcluster.runner import ControllerContext
from localcluster.runtime.base import Controller, merge_patch, owner_key
from localcluster.runtime.client import JOBS, PODS, Api, ignore_gone
from localcluster.runtime.events import record
from localcluster.runtime.informers import SharedInformers
from localcluster.runtime.workload_writes import create_pods, delete_pods, remove_finalizer
from localcluster.sim.conditions import controlled_by
from localcluster.sim.job_pods import TRACKING_FINALIZER
from localcluster.sim.jobs import reconcile

log = logging.getLogger(__name__)
UNTRACK_RETRY = dt.timedelta(seconds=1)
"""When a sync tries again to drop a tracking finalizer it could not (and so to delete that pod)."""


class JobController(Controller):
    component = "job-controller"

    def __init__(self, ctx: ControllerContext, api: Api, shared: SharedInformers) -> None:
        super().__init__(ctx, api, shared)
        self.jobs = self.informer(JOBS, self.enqueue)
        self.pods = self.informer(PODS, self._on_pod)

    def _on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        key = owner_key(pod, "Job")
        if key:
            self.queue.add(key)

    async def sync(self, key: str) -> dt.timedelta | None:
        namespace, name = key.split("/", 1)
        job = self.jobs.get(namespace, name)
        if job is None or job["metadata"].get("deletionTimestamp"):
            # The real controller's orphan-pod cleanup: pods of a deleted Job lose the tracking
            # finalizer, or they would outlive it forever once the garbage collector deletes them;
            # a removal that failed is tried again, as the pods may change no more to bring it back.
            orphans = [p["metadata"]["name"] for p in self.pods.values()
                       if p["metadata"].get("namespace") == namespace and owner_key(p, "Job") == key
                       and TRACKING_FINALIZER in (p["metadata"].get("finalizers") or [])]
            return UNTRACK_RETRY if await self._untrack(namespace, orphans) else None
        uid = job["metadata"].get("uid", "")
        pods = [p for p in self.pods.values() if p["metadata"].get("namespace") == namespace and controlled_by(p, uid)]
        now = self.now()
        step = reconcile(job, pods, now)
        if step.delete_job:
            await ignore_gone(self.api.delete(JOBS.path(namespace, name), {"propagationPolicy": "Foreground"}))
            return None
        patch = merge_patch(job.get("status") or {}, step.status)
        if patch:
            self.jobs.remember(await ignore_gone(self.api.patch(JOBS.path(namespace, name, "status"), {"status": patch})))
        still_tracked = await self._untrack(namespace, step.uncount)
        deletes = [name for name in step.deletes if name not in still_tracked]
        await delete_pods(self.api, job, namespace, deletes, self.pods, self.component, now)
        await create_pods(self.api, job, step.creates, self.pods, self.component, now)
        for event in step.events:
            await record(self.api, job, event.type, event.reason, event.message, self.component, now)
        if still_tracked:
            return min(step.requeue_after or UNTRACK_RETRY, UNTRACK_RETRY)
        return step.requeue_after


    async def _untrack(self, namespace: str, names: list[str]) -> set[str]:
        """Drop the tracking finalizer pod by pod; the pods it could not be dropped from.

        As v1.32's deleteJobPods: a pod is deleted only once its finalizer is off, so a deletion
        this controller makes (suspend, surplus) is never counted as a failure; the pods left
        tracked are retried on the next sync. The patch names the finalizer to remove instead of
        the list to keep, so it needs no cached copy. Before, a removal that timed out (a loaded
        API server waiting on its webhooks) was taken for done and the pod deleted still tracked:
        the kubelet's kill (exit 143) then counted as the failure that ended preempted Jobs with
        backoffLimit 0.
        """
        failed: set[str] = set()
        for name in names:
            problem = await remove_finalizer(self.api, namespace, name, TRACKING_FINALIZER, self.pods)
            if problem is not None:
                log.info("%s: %s/%s: tracking finalizer not removed: %s", self.component, namespace, name, problem)
                failed.add(name)
        return failed
