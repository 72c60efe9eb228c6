"""Deployments and ReplicaSets: a Deployment gets one ReplicaSet per template, a ReplicaSet its pods."""

from __future__ import annotations

import datetime as dt
from typing import Any

from localcluster.runner import ControllerContext
from localcluster.runtime.base import Controller, merge_patch, object_key, owner_key
from localcluster.runtime.client import DEPLOYMENTS, PODS, REPLICASETS, Api, ApiError, ignore_gone
from localcluster.runtime.events import record
from localcluster.runtime.informers import SharedInformers
from localcluster.runtime.workload_writes import create_pods, delete_pods
from localcluster.sim.conditions import controlled_by
from localcluster.sim.replicasets import reconcile_deployment, reconcile_replicaset


class DeploymentController(Controller):
    component = "deployment-controller"

    def __init__(self, ctx: ControllerContext, api: Api, shared: SharedInformers) -> None:
        super().__init__(ctx, api, shared)
        self.deployments = self.informer(DEPLOYMENTS, lambda kind, d: self.queue.add("d:" + object_key(d)))
        self.replicasets = self.informer(REPLICASETS, self._on_rs)
        self.pods = self.informer(PODS, self._on_pod)

    def _on_rs(self, kind: str, rs: dict[str, Any]) -> None:
        self.queue.add("rs:" + object_key(rs))
        owner = owner_key(rs, "Deployment")
        if owner:
            self.queue.add("d:" + owner)

    def _on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        owner = owner_key(pod, "ReplicaSet")
        if owner:
            self.queue.add("rs:" + owner)

    async def sync(self, key: str) -> dt.timedelta | None:
        kind, ref = key.split(":", 1)
        namespace, name = ref.split("/", 1)
        if kind == "d":
            await self._deployment(namespace, name)
        else:
            await self._replicaset(namespace, name)
        return None

    async def _deployment(self, namespace: str, name: str) -> None:
        deployment = self.deployments.get(namespace, name)
        if deployment is None or deployment["metadata"].get("deletionTimestamp"):
            return
        uid = deployment["metadata"].get("uid", "")
        owned = [rs for rs in self.replicasets.values() if rs["metadata"].get("namespace") == namespace and controlled_by(rs, uid)]
        step = reconcile_deployment(deployment, owned)
        now = self.now()
        if step.create:
            try:
                made = await self.api.create(REPLICASETS.path(namespace), step.create)
                self.replicasets.remember(made)
                await record(self.api, deployment, "Normal", "ScalingReplicaSet",
                             f"Scaled up replica set {made['metadata']['name']} from 0 to {step.create['spec']['replicas']}",
                             self.component, now)
            except ApiError as err:
                if err.reason != "AlreadyExists":
                    raise
        for rs_name, replicas in step.scale.items():
            self.replicasets.remember(await ignore_gone(self.api.patch(REPLICASETS.path(namespace, rs_name),
                                                                       {"spec": {"replicas": replicas}})))
        patch = merge_patch(deployment.get("status") or {}, step.status)
        if patch:
            self.deployments.remember(await ignore_gone(self.api.patch(DEPLOYMENTS.path(namespace, name, "status"), {"status": patch})))

    async def _replicaset(self, namespace: str, name: str) -> None:
        rs = self.replicasets.get(namespace, name)
        if rs is None or rs["metadata"].get("deletionTimestamp"):
            return
        step = reconcile_replicaset(rs, [p for p in self.pods.values() if p["metadata"].get("namespace") == namespace])
        now = self.now()
        await delete_pods(self.api, rs, namespace, step.deletes, self.pods, "replicaset-controller", now)
        await create_pods(self.api, rs, step.creates, self.pods, "replicaset-controller", now)
        patch = merge_patch(rs.get("status") or {}, step.status)
        if patch:
            self.replicasets.remember(await ignore_gone(self.api.patch(REPLICASETS.path(namespace, name, "status"), {"status": patch})))
