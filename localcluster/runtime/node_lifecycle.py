"""The node lifecycle controller, taint manager and pod GC: taints nodes that are NotReady, silent
or cordoned, marks silent nodes Ready=Unknown, evicts pods that do not tolerate a NoExecute taint
once their toleration time is up (marking them DisruptionTarget first, as v1.32 does), and fails
and removes pods bound to a node that was deleted."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from localcluster.runner import ControllerContext
from localcluster.runtime.base import Controller
from localcluster.runtime.client import LEASES, NODES, PODS, Api, ignore_gone
from localcluster.runtime.events import record
from localcluster.runtime.informers import SharedInformers
from localcluster.sim.nodes import LEASE_NAMESPACE, evictions, full_disruption, kubelet_health, node_health, unhealthy
from localcluster.sim.units import format_time, parse_time


log = logging.getLogger(__name__)


class NodeLifecycle(Controller):
    component = "node-controller"
    workers = 2

    def __init__(self, ctx: ControllerContext, api: Api, shared: SharedInformers) -> None:
        super().__init__(ctx, api, shared)
        self.nodes = self.informer(NODES, lambda kind, node: self.queue.add(node["metadata"]["name"]))
        self.leases = self.informer(LEASES, lambda kind, lease: None, namespace=LEASE_NAMESPACE)
        self.pods = self.informer(PODS, self._on_pod)
        self.disrupted = False

    def _on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        node = (pod.get("spec") or {}).get("nodeName")
        if node and kind == "ADDED":
            self.queue.add(node)

    async def started(self) -> None:
        for node in self.nodes.values():
            self.queue.add(node["metadata"]["name"])

    def _renewed(self, node: dict[str, Any]) -> dt.datetime | None:
        lease = self.leases.get(LEASE_NAMESPACE, node["metadata"]["name"])
        renew = ((lease or {}).get("spec") or {}).get("renewTime")
        return parse_time(renew) if renew else None

    async def sync(self, key: str) -> dt.timedelta | None:
        node = self.nodes.get("", key)
        now = self.now()
        if node is None:  # pod GC: pods bound to a node that no longer exists fail and go
            for pod in [p for p in self.pods.values() if (p.get("spec") or {}).get("nodeName") == key]:
                meta = pod["metadata"]
                await self._evict(meta.get("namespace", ""), meta["name"], "PodGC: node no longer exists", True, now,
                                  reason="DeletionByPodGC", component="pod-garbage-collector")
            return None
        disrupted = full_disruption([unhealthy(n, self._renewed(n), now) for n in self.nodes.values()])
        if disrupted and not self.disrupted:
            log.warning("all nodes are not ready: entering full disruption mode, no evictions")
        self.disrupted = disrupted
        health = node_health(node, self._renewed(node), now, disrupted=disrupted)
        if _taint_keys(health.taints) != _taint_keys((node.get("spec") or {}).get("taints") or []):
            # conditional on the version read, so a taint a user adds meanwhile is not lost (409: try again)
            body = {"metadata": {"resourceVersion": node["metadata"].get("resourceVersion")},
                    "spec": {"taints": health.taints}}
            self.nodes.remember(await self.api.patch(NODES.path(None, key), body))
        if health.ready_unknown:
            conditions = [
                {**c, "status": "Unknown", "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status.",
                 "lastTransitionTime": format_time(now)}
                for c in (node.get("status") or {}).get("conditions") or []
            ]
            self.nodes.remember(await ignore_gone(self.api.patch(NODES.path(None, key, "status"), {"status": {"conditions": conditions}})))
            await record(self.api, node, "Normal", "NodeNotReady", f"Node {key} status is now: NodeNotReady", self.component, now)
        node = self.nodes.get("", key) or node
        on_node = [p for p in self.pods.values() if (p.get("spec") or {}).get("nodeName") == key]
        due, wake = evictions({**node, "spec": {**(node.get("spec") or {}), "taints": health.taints}}, on_node, now)
        silent = kubelet_health(node) == "unreachable"
        for eviction in due:
            await self._evict(eviction.namespace, eviction.name, eviction.message, silent, now)
        waits = [t - now for t in (health.wake_at, wake) if t is not None]
        return min(waits) if waits else None

    async def _evict(self, namespace: str, name: str, message: str, silent: bool, now: dt.datetime, *,
                     reason: str = "DeletionByTaintManager", component: str = "taint-eviction-controller") -> None:
        pod = self.pods.get(namespace, name)
        if pod is None:
            return
        conditions = [c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") != "DisruptionTarget"]
        conditions.append({"type": "DisruptionTarget", "status": "True", "reason": reason,
                           "message": message, "lastTransitionTime": format_time(now)})
        status: dict[str, Any] = {"conditions": conditions}
        if silent:  # nobody on that node will stop the pod: mark it failed, as pod GC would
            status["phase"] = "Failed"
        await ignore_gone(self.api.patch(PODS.path(namespace, name, "status"), {"status": status}))
        if reason == "DeletionByTaintManager":
            await record(self.api, pod, "Normal", "TaintManagerEviction", f"Marking for deletion Pod {namespace}/{name}",
                         component, now)
        await ignore_gone(self.api.delete(PODS.path(namespace, name)))


def _taint_keys(taints: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return sorted((t.get("key", ""), t.get("value", "") or "", t.get("effect", "")) for t in taints)
