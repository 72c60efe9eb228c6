"""Small builders for wire-form pods, nodes and workloads used by the simulation tests."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def a_node(
    name: str,
    *,
    cpu: str = "8",
    memory: str = "32Gi",
    gpus: int = 0,
    pods: str = "110",
    labels: dict[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
    unschedulable: bool = False,
) -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": memory, "pods": pods}
    if gpus:
        capacity["nvidia.com/gpu"] = str(gpus)
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {"capacity": dict(capacity), "allocatable": dict(capacity)},
    }


def a_container(name: str = "main", *, requests: dict | None = None, limits: dict | None = None, **extra: Any) -> dict:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": name, "image": "busybox", "resources": resources, **extra}


def a_pod(
    name: str,
    *,
    namespace: str = "default",
    requests: dict | None = None,
    limits: dict | None = None,
    containers: list[dict] | None = None,
    init_containers: list[dict] | None = None,
    node: str | None = None,
    phase: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec_extra: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": containers or [a_container(requests=requests, limits=limits)],
        "restartPolicy": spec_extra.pop("restartPolicy", "Always"),
        **spec_extra,
    }
    if init_containers:
        spec["initContainers"] = init_containers
    if node:
        spec["nodeName"] = node
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "labels": dict(labels or {}),
            "annotations": dict(annotations or {}),
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": spec,
        "status": {"phase": phase or "Pending"},
    }
    return pod


def with_status(obj: dict[str, Any], **status: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out.setdefault("status", {}).update(status)
    return out


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> dict[str, str]:
    out = {"key": key, "effect": effect}
    if value:
        out["value"] = value
    return out
