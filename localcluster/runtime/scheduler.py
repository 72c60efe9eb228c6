"""The default scheduler: binds pods that name no other scheduler, records Scheduled and
FailedScheduling events and the PodScheduled condition, and tries again whenever pods or nodes
change. Bindings it made are "assumed" until the watch shows them, as kube-scheduler's cache does."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Mapping
from typing import Any

from localcluster.runner import ControllerContext
from localcluster.runtime.base import Controller, object_key
from localcluster.runtime.client import NODES, PODS, Api, ApiError, ignore_gone
from localcluster.runtime.events import record
from localcluster.runtime.informers import SharedInformers
from localcluster.sim.resources import Resources, pod_requests
from localcluster.sim.scheduling import (
    DEFAULT_SCHEDULER,
    Bind,
    Unschedulable,
    holds_resources,
    needs_scheduling,
    node_states,
    queue_order,
    schedule_cycle,
)
from localcluster.sim.units import UnitError, format_time

CYCLE = "cycle"
CHUNK = 32  # pods decided, then bound, per step: binding starts early and the loop stays responsive


class Scheduler(Controller):
    component = DEFAULT_SCHEDULER
    workers = 1

    def __init__(self, ctx: ControllerContext, api: Api, shared: SharedInformers) -> None:
        super().__init__(ctx, api, shared)
        self.pods = self.informer(PODS, self._on_pod)
        self.nodes = self.informer(NODES, lambda kind, obj: self.queue.add(CYCLE))
        self.assumed: dict[str, dict[str, Any]] = {}
        self._requests: dict[str, Resources] = {}

    def requests_of(self, pod: Mapping[str, Any]) -> Resources:
        """A pod's requests, parsed once per pod (they do not change); unparsable ones hold nothing."""
        uid = pod["metadata"].get("uid", "")
        if uid not in self._requests:
            try:
                self._requests[uid] = pod_requests(pod)
            except UnitError:
                self._requests[uid] = {}
        return self._requests[uid]

    def _on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        key = f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"
        if kind == "DELETED" or (pod.get("spec") or {}).get("nodeName"):
            self.assumed.pop(key, None)
        if kind == "DELETED":
            self._requests.pop(pod["metadata"].get("uid", ""), None)
        if needs_scheduling(pod) or kind == "DELETED" or not holds_resources(pod):
            self.queue.add(CYCLE)

    async def started(self) -> None:
        self.queue.add(CYCLE)

    async def sync(self, key: str) -> dt.timedelta | None:
        pods = self.pods.values()
        pending = [p for p in pods if needs_scheduling(p) and object_key(p) not in self.assumed]
        if not pending:
            return None
        states = node_states(self.nodes.values(), [p for p in pods if object_key(p) not in self.assumed]
                             + list(self.assumed.values()), self.requests_of)
        ordered = sorted(pending, key=queue_order)
        by_key = {object_key(p): p for p in pending}
        for i in range(0, len(ordered), CHUNK):
            decisions = schedule_cycle(ordered[i:i + CHUNK], states)
            await asyncio.gather(*(self._apply(d, by_key[f"{d.namespace}/{d.name}"]) for d in decisions))
        return None

    async def _apply(self, decision: Bind | Unschedulable, pod: dict[str, Any]) -> None:
        now = self.now()
        meta = pod["metadata"]
        if isinstance(decision, Bind):
            bound = {**pod, "spec": {**pod["spec"], "nodeName": decision.node}}
            self.assumed[object_key(pod)] = bound
            body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": decision.node}}
            try:
                await self.api.create(PODS.path(meta["namespace"], meta["name"], "binding"), body)
            except ApiError:
                self.assumed.pop(object_key(pod), None)
                return
            await record(self.api, pod, "Normal", "Scheduled", decision.message, self.component, now)
            return
        current: Mapping[str, Any] = next((c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"), {})
        if current.get("status") == "False" and current.get("message") == decision.message:
            return
        condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": decision.message,
                     "lastTransitionTime": format_time(now)}
        others = [c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") != "PodScheduled"]
        patched = await ignore_gone(self.api.patch(PODS.path(meta["namespace"], meta["name"], "status"),
                                                   {"status": {"phase": "Pending", "conditions": others + [condition]}}))
        self.pods.remember(patched)
        await record(self.api, pod, "Warning", "FailedScheduling", decision.message, self.component, now)
