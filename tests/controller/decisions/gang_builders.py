"""Builders for gang placement tests: nodes and pods as the API server would send them, parsed."""

from __future__ import annotations

from typing import Any

from batchgate import keys
from batchgate.api.node import Node
from controller.decisions.gang.node_fit import PodInfo, parse_pod

SCHEDULER = "batchgate-scheduler"


def a_node(name: str, *, gpus: int = 8, cpu: str = "32", pods: int | None = None, labels: dict[str, str] | None = None,
           taints: list[dict[str, str]] | None = None, unschedulable: bool = False, ready: bool = True) -> Node:
    allocatable = {"cpu": cpu, "memory": "256Gi", keys.GPU_RESOURCE: str(gpus)}
    if pods is not None:
        allocatable["pods"] = str(pods)
    return Node.from_dict({
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {"unschedulable": unschedulable, "taints": list(taints or [])},
        "status": {"allocatable": allocatable,
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}})


def a_pod_dict(name: str, *, ns: str = "team-a", gpus: int = 0, cpu: str = "1", group: str | None = None,
               node: str = "", phase: str = "Pending", scheduler: str = SCHEDULER, priority: int = 0,
               created: str = "2026-01-01T00:00:00Z", node_selector: dict[str, str] | None = None,
               affinity: list[dict[str, Any]] | None = None, tolerations: list[dict[str, str]] | None = None,
               init_gpus: int = 0, owner: str | None = None) -> dict[str, Any]:
    requests: dict[str, str] = {"cpu": cpu}
    if gpus:
        requests[keys.GPU_RESOURCE] = str(gpus)
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [
        {"name": "main", "image": "busybox", "resources": {"requests": requests}}]}
    if init_gpus:
        spec["initContainers"] = [{"name": "init", "image": "busybox",
                                   "resources": {"requests": {keys.GPU_RESOURCE: str(init_gpus)}}}]
    if node:
        spec["nodeName"] = node
    if priority:
        spec["priority"] = priority
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity is not None:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": affinity}}}
    if tolerations:
        spec["tolerations"] = tolerations
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}", "creationTimestamp": created,
                            "labels": {keys.POD_GROUP_LABEL: group} if group else {}}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": owner, "uid": "u",
                                    "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}


def a_pod(name: str, **kwargs: Any) -> PodInfo:
    return parse_pod(a_pod_dict(name, **kwargs))


def gang(group: str, size: int, **kwargs: Any) -> list[PodInfo]:
    return [a_pod(f"{group}-{i}", group=group, **kwargs) for i in range(size)]
