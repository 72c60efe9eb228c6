"""The PyTorchJob controller (training-operator-like): reconcile each PyTorchJob over the pods and
Services it owns, then write status, Services, pods and events."""

from __future__ import annotations

import datetime as dt
from typing import Any

from localcluster.runner import ControllerContext
from localcluster.runtime.base import Controller, merge_patch, owner_key
from localcluster.runtime.client import PODS, PYTORCHJOBS, SERVICES, Api, ApiError, ignore_gone
from localcluster.runtime.events import record
from localcluster.runtime.informers import SharedInformers
from localcluster.runtime.workload_writes import create_pods, delete_pods
from localcluster.sim.conditions import controlled_by
from localcluster.sim.pytorchjobs import KIND, OPERATOR_LABEL, OPERATOR_NAME, reconcile


class PyTorchJobController(Controller):
    component = "pytorchjob-controller"

    def __init__(self, ctx: ControllerContext, api: Api, shared: SharedInformers) -> None:
        super().__init__(ctx, api, shared)
        self.jobs = self.informer(PYTORCHJOBS, self.enqueue)
        self.pods = self.informer(PODS, self._on_child)
        self.services = self.informer(SERVICES, self._on_child)

    def _on_child(self, kind: str, obj: dict[str, Any]) -> None:
        if ((obj.get("metadata") or {}).get("labels") or {}).get(OPERATOR_LABEL) != OPERATOR_NAME:
            return
        key = owner_key(obj, KIND)
        if key:
            self.queue.add(key)

    async def sync(self, key: str) -> dt.timedelta | None:
        namespace, name = key.split("/", 1)
        job = self.jobs.get(namespace, name)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return None
        uid = job["metadata"].get("uid", "")
        mine = [p for p in self.pods.values() if p["metadata"].get("namespace") == namespace and controlled_by(p, uid)]
        services = [s for s in self.services.values() if s["metadata"].get("namespace") == namespace and controlled_by(s, uid)]
        now = self.now()
        step = reconcile(job, mine, services, now)
        if step.delete_job:
            await ignore_gone(self.api.delete(PYTORCHJOBS.path(namespace, name), {"propagationPolicy": "Foreground"}))
            return None
        patch = merge_patch(job.get("status") or {}, step.status)
        if patch:
            self.jobs.remember(await ignore_gone(self.api.patch(PYTORCHJOBS.path(namespace, name, "status"), {"status": patch})))
        for service in step.create_services:
            try:
                self.services.remember(await self.api.create(SERVICES.path(namespace), service))
            except ApiError as err:
                if err.reason != "AlreadyExists":
                    await record(self.api, job, "Warning", "FailedCreateService", err.message, self.component, now)
        for svc in step.delete_services:
            await ignore_gone(self.api.delete(SERVICES.path(namespace, svc)))
            self.services.forget(namespace, svc)
        await delete_pods(self.api, job, namespace, step.delete_pods, self.pods, self.component, now)
        await create_pods(self.api, job, step.create_pods, self.pods, self.component, now)
        for event in step.events:
            await record(self.api, job, event.type, event.reason, event.message, self.component, now)
        return step.requeue_after
