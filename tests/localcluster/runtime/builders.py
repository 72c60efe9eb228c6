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


def a_job(name: str = "job", *, namespace: str = "default", uid: str = "job-uid", status: dict | None = None, **spec: Any) -> dict[str, Any]:
    template = spec.pop("template", None) or {
        "metadata": {"labels": {"app": name}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "uid": uid, "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"template": template, **spec},
        "status": dict(status or {}),
    }


def job_pod(
    job: dict[str, Any],
    name: str,
    phase: str = "Running",
    *,
    index: int | None = None,
    ready: bool = True,
    exit_code: int | None = None,
    finished: float = 0,
    tracked: bool = True,
    deleting: bool = False,
    failures: int | None = None,
    conditions: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """A pod as the Job controller would see it, in the given phase."""
    from localcluster.sim.job_pods import COMPLETION_INDEX, INDEX_FAILURE_COUNT, TRACKING_FINALIZER, new_pod

    pod = new_pod(job, index, failures or 0)
    meta = pod["metadata"]
    meta["name"] = name
    meta["uid"] = f"uid-{name}"
    meta["creationTimestamp"] = "2026-01-01T00:00:00Z"
    if not tracked:
        meta["finalizers"] = []
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:30Z"
    if failures is not None:
        meta["annotations"][INDEX_FAILURE_COUNT] = str(failures)
    if index is not None:
        assert meta["annotations"][COMPLETION_INDEX] == str(index)
    state: dict[str, Any] = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
    if phase in ("Succeeded", "Failed"):
        code = exit_code if exit_code is not None else (0 if phase == "Succeeded" else 1)
        state = {"terminated": {"exitCode": code, "finishedAt": (T0 + dt.timedelta(seconds=finished)).strftime("%Y-%m-%dT%H:%M:%SZ")}}
    pod["status"] = {
        "phase": phase,
        "conditions": (conditions or []) + [{"type": "Ready", "status": "True" if ready and phase == "Running" else "False"}],
        "containerStatuses": [{"name": "main", "state": state}],
    }
    return pod


def a_pytorchjob(name: str = "sample-pytorchjob") -> dict[str, Any]:
    """A queued PyTorchJob as MLBatch users write one: a master and a worker, one container each."""

    def replicas(count: int) -> dict[str, Any]:
        return {"replicas": count, "restartPolicy": "OnFailure", "template": {"spec": {"containers": [{
            "name": "pytorch", "image": "docker.io/pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
            "command": ["torchrun", "train.py"], "resources": {"requests": {"cpu": "100m"}}}]}}}

    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "default-queue"}},
            "spec": {"pytorchReplicaSpecs": {"Master": replicas(1), "Worker": replicas(1)}}}
