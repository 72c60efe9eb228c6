"""The KubeRay operator's RayCluster reconcile, reduced to a pure step: (cluster, its pods, its
Services, now) -> what to create and delete, the status and the events.

Conventions kept from ray-project/kuberay (ray-operator/controllers/ray/raycluster_controller.go,
common/pod.go, common/service.go, utils/util.go, utils/validation.go): one head pod
(`<cluster>-head-xxxxx`) and, per worker group, `clamp(replicas, minReplicas, maxReplicas) *
numOfHosts` worker pods (`<cluster>-<group>-worker-xxxxx`; none for a suspended group), labelled
`ray.io/cluster`, `ray.io/node-type`, `ray.io/group` (`headgroup` for the head),
`ray.io/is-ray-node: yes` and `ray.io/identifier`; the head Service `<cluster>-head-svc` with the
client (10001), gcs-server (6379), dashboard (8265) and metrics (8080) ports unless the head
container names its own; a pod that ended is deleted and made again; `spec.suspend` deletes every
pod and keeps the object. Status: `state` `ready` once the head and every wanted worker are
running and ready (`suspended` once suspended with no pod left), the worker counts, `head.podIP`,
`head.serviceIP` and `endpoints`. A spec KubeRay's validation refuses gets an
`InvalidRayClusterSpec` Warning and nothing is made. Not modelled: autoscaling, GCS fault
tolerance, ingress, multi-host replica naming.
"""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from localcluster.sim.conditions import Event, controlled_by, controller_ref, deleting, ended, running_and_ready
from localcluster.sim.units import format_time

CLUSTER_LABEL = "ray.io/cluster"
NODE_TYPE_LABEL = "ray.io/node-type"
GROUP_LABEL = "ray.io/group"
IS_RAY_NODE_LABEL = "ray.io/is-ray-node"
IDENTIFIER_LABEL = "ray.io/identifier"
HEAD_GROUP = "headgroup"
DEFAULT_PORTS = (("client", 10001), ("gcs-server", 6379), ("dashboard", 8265), ("metrics", 8080))
MAX_REPLICAS = 2**31 - 1

Obj = Mapping[str, Any]


@dataclass
class RayClusterStep:
    status: dict[str, Any]
    create_pods: list[dict[str, Any]] = field(default_factory=list)
    delete_pods: list[str] = field(default_factory=list)
    create_services: list[dict[str, Any]] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


@dataclass(frozen=True)
class WorkerGroup:
    name: str
    template: Obj
    desired: int
    min: int
    max: int


def head_service_name(cluster: str) -> str:
    return f"{cluster}-head-svc"


def validate(spec: Obj) -> str | None:
    """KubeRay's ValidateRayClusterSpec, the rules a user can break here; None when valid."""
    head = spec.get("headGroupSpec")
    if not isinstance(head, Mapping) or not _containers(head.get("template")):
        return "headGroupSpec should have at least one container"
    for group in spec.get("workerGroupSpecs") or []:
        name = group.get("groupName", "") if isinstance(group, Mapping) else ""
        if not isinstance(group, Mapping) or not _containers(group.get("template")):
            return "workerGroupSpec should have at least one container"
        low, high = _int(group.get("minReplicas"), 0), _int(group.get("maxReplicas"), MAX_REPLICAS)
        if low < 0:
            return f"worker group {name} has negative minReplicas {low}"
        if high < 0:
            return f"worker group {name} has negative maxReplicas {high}"
        if low > high:
            return f"worker group {name} has minReplicas {low} greater than maxReplicas {high}"
    return None


def worker_groups(spec: Obj) -> list[WorkerGroup]:
    """Each group with its desired pod count, as GetWorkerGroupDesiredReplicas computes it."""
    out = []
    for group in spec.get("workerGroupSpecs") or []:
        low, high = _int(group.get("minReplicas"), 0), _int(group.get("maxReplicas"), MAX_REPLICAS)
        replicas = group.get("replicas")
        wanted = low if not isinstance(replicas, int) or replicas < low else min(replicas, high)
        desired = 0 if group.get("suspend") is True else wanted * max(_int(group.get("numOfHosts"), 1), 1)
        suspended = group.get("suspend") is True
        out.append(WorkerGroup(str(group.get("groupName", "")), group.get("template") or {}, desired,
                               0 if suspended else low, 0 if suspended else high))
    return out


def reconcile_raycluster(cluster: Obj, pods: Sequence[Obj], services: Sequence[Obj], now: dt.datetime) -> RayClusterStep:
    meta, spec = cluster["metadata"], cluster.get("spec") or {}
    name, uid = meta["name"], meta.get("uid", "")
    mine = [p for p in pods if controlled_by(p, uid)]
    old_status = dict(cluster.get("status") or {})
    problem = validate(spec)
    if problem is not None:
        step = RayClusterStep(old_status)
        if old_status.get("reason") != problem:
            step.events.append(Event("Warning", "InvalidRayClusterSpec", problem))
        step.status = {**old_status, "reason": problem}
        return step
    step = RayClusterStep({})
    groups = worker_groups(spec)
    suspended = spec.get("suspend") is True
    if suspended:
        step.delete_pods = [p["metadata"]["name"] for p in mine if not deleting(p)]
    else:
        _head(cluster, mine, step)
        for group in groups:
            _workers(cluster, group, mine, step)
        if not any(controlled_by(s, uid) and s["metadata"]["name"] == head_service_name(name) for s in services):
            step.create_services.append(head_service(cluster))
    step.status = _status(cluster, groups, mine, step, services, suspended, now)
    return step


def head_service(cluster: Obj) -> dict[str, Any]:
    name = cluster["metadata"]["name"]
    head = (cluster.get("spec") or {}).get("headGroupSpec") or {}
    declared = [p for c in _containers(head.get("template")) for p in c.get("ports") or [] if p.get("name")]
    ports = [{"name": p["name"], "port": p["containerPort"], "targetPort": p["containerPort"], "protocol": "TCP",
              "appProtocol": "tcp"} for p in declared] or [
        {"name": port_name, "port": port, "targetPort": port, "protocol": "TCP", "appProtocol": "tcp"}
        for port_name, port in DEFAULT_PORTS]
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": head_service_name(name), "namespace": cluster["metadata"].get("namespace", ""),
                     "labels": {CLUSTER_LABEL: name, NODE_TYPE_LABEL: "head", IDENTIFIER_LABEL: f"{name}-head"},
                     "ownerReferences": [controller_ref(cluster)]},
        "spec": {"type": "ClusterIP", "selector": {CLUSTER_LABEL: name, NODE_TYPE_LABEL: "head"}, "ports": ports},
    }


def _head(cluster: Obj, mine: Sequence[Obj], step: RayClusterStep) -> None:
    heads = [p for p in mine if _labels(p).get(NODE_TYPE_LABEL) == "head" and not deleting(p)]
    gone = [p for p in heads if ended(p)]
    step.delete_pods += [p["metadata"]["name"] for p in gone]
    live = [p for p in heads if p not in gone]
    if not live:
        template = ((cluster.get("spec") or {}).get("headGroupSpec") or {}).get("template") or {}
        step.create_pods.append(_pod(cluster, template, "head", HEAD_GROUP, f"{cluster['metadata']['name']}-head-"))
    step.delete_pods += [p["metadata"]["name"] for p in _newest_first(live)[: max(len(live) - 1, 0)]]


def _workers(cluster: Obj, group: WorkerGroup, mine: Sequence[Obj], step: RayClusterStep) -> None:
    members = [p for p in mine if _labels(p).get(NODE_TYPE_LABEL) == "worker"
               and _labels(p).get(GROUP_LABEL) == group.name and not deleting(p)]
    gone = [p for p in members if ended(p)]
    step.delete_pods += [p["metadata"]["name"] for p in gone]
    live = [p for p in members if p not in gone]
    prefix = f"{cluster['metadata']['name']}-{group.name}-worker-"
    step.create_pods += [_pod(cluster, group.template, "worker", group.name, prefix)
                         for _ in range(group.desired - len(live))]
    step.delete_pods += [p["metadata"]["name"] for p in _newest_first(live)[: max(len(live) - group.desired, 0)]]


def _status(cluster: Obj, groups: list[WorkerGroup], mine: Sequence[Obj], step: RayClusterStep,
            services: Sequence[Obj], suspended: bool, now: dt.datetime) -> dict[str, Any]:
    name = cluster["metadata"]["name"]
    old = dict(cluster.get("status") or {})
    kept = [p for p in mine if not deleting(p) and p["metadata"]["name"] not in step.delete_pods]
    workers = [p for p in kept if _labels(p).get(NODE_TYPE_LABEL) == "worker"]
    head = next((p for p in kept if _labels(p).get(NODE_TYPE_LABEL) == "head"), None)
    desired = sum(g.desired for g in groups)
    state = old.get("state", "")
    if not suspended and not step.create_pods and len(kept) == desired + 1 and all(running_and_ready(p) for p in kept):
        state = "ready"
    if suspended and not mine:
        state = "suspended"
    service = next((s for s in services if s["metadata"]["name"] == head_service_name(name)), None)
    status: dict[str, Any] = {
        "observedGeneration": cluster["metadata"].get("generation", 1),
        "readyWorkerReplicas": sum(1 for p in workers if running_and_ready(p)),
        "availableWorkerReplicas": sum(1 for p in workers if (p.get("status") or {}).get("phase") == "Running"),
        "desiredWorkerReplicas": desired,
        "minWorkerReplicas": sum(g.min for g in groups),
        "maxWorkerReplicas": min(sum(g.max for g in groups), MAX_REPLICAS),
        "head": {"podName": head["metadata"]["name"] if head else "",
                 "podIP": ((head or {}).get("status") or {}).get("podIP", ""),
                 "serviceName": head_service_name(name) if service else "",
                 "serviceIP": ((service or {}).get("spec") or {}).get("clusterIP", "")},
    }
    if service is not None:
        status["endpoints"] = {str(p.get("name")): str(p.get("targetPort", p.get("port")))
                               for p in (service.get("spec") or {}).get("ports") or [] if p.get("name")}
    if state:
        status["state"] = state
        times = dict(old.get("stateTransitionTimes") or {})
        if old.get("state") != state:
            times[state] = format_time(now)
        status["stateTransitionTimes"] = times
    return status


def _pod(cluster: Obj, template: Obj, node_type: str, group: str, prefix: str) -> dict[str, Any]:
    body = copy.deepcopy(dict(template))
    tmeta = body.get("metadata") or {}
    name = cluster["metadata"]["name"]
    labels = {**(tmeta.get("labels") or {}), CLUSTER_LABEL: name, NODE_TYPE_LABEL: node_type, GROUP_LABEL: group,
              IS_RAY_NODE_LABEL: "yes", IDENTIFIER_LABEL: f"{name}-{node_type}",
              "app.kubernetes.io/name": "kuberay", "app.kubernetes.io/created-by": "kuberay-operator"}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": prefix, "namespace": cluster["metadata"].get("namespace", ""),
                         "labels": labels, "annotations": dict(tmeta.get("annotations") or {}),
                         "ownerReferences": [controller_ref(cluster)]},
            "spec": body.get("spec") or {}}


def _containers(template: Any) -> list[Obj]:
    spec = template.get("spec") if isinstance(template, Mapping) else None
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    return [c for c in containers if isinstance(c, Mapping)] if isinstance(containers, list) else []


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _labels(pod: Obj) -> Mapping[str, str]:
    return (pod.get("metadata") or {}).get("labels") or {}


def _newest_first(pods: Sequence[Obj]) -> list[Obj]:
    return sorted(pods, key=lambda p: ((p.get("metadata") or {}).get("creationTimestamp") or "",
                                       (p.get("metadata") or {}).get("name", "")), reverse=True)
