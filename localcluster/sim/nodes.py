"""Simulated nodes: what they are (from flags or a nodes file), how their kubelet reports, and how
the node lifecycle controller turns silence or NotReady into taints and evictions.

A node's health is steered with one label, so `kubectl label node n1
localcluster.batchgate.dev/health=not-ready` (kubelet posts Ready=False) or `=unreachable`
(kubelet stops posting; after the 40s grace the node goes Unknown) fails it, and removing the
label heals it. Taints follow as kube-controller-manager sets them (`node.kubernetes.io/not-ready`
or `unreachable`, NoSchedule and NoExecute; `unschedulable` for cordon), and the taint manager
evicts pods that do not tolerate a NoExecute taint, after their tolerationSeconds
(300s by default, as the DefaultTolerationSeconds admission plugin gives every pod).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import yaml

from localcluster.sim.conditions import deleting, ended
from localcluster.sim.matching import tolerates
from localcluster.sim.units import UnitError, format_micro_time, format_time, parse_quantity, parse_time

HEALTH_LABEL = "localcluster.batchgate.dev/health"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
LEASE_NAMESPACE = "kube-node-lease"
LEASE_SECONDS = 40
HEARTBEAT = dt.timedelta(seconds=10)
GRACE = dt.timedelta(seconds=LEASE_SECONDS)
DEFAULT_TOLERATION_SECONDS = 300
KUBELET_VERSION = "v1.32.4"
_NODE_KEYS = {"name", "labels", "taints", "capacity", "count"}
_TAINT_EFFECTS = {"NoSchedule", "PreferNoSchedule", "NoExecute"}

Obj = Mapping[str, Any]


class NodesError(ValueError):
    """A nodes file or node flag that cannot describe a node; the message names the node and field."""


@dataclass(frozen=True)
class NodeSpec:
    name: str
    capacity: dict[str, str]
    labels: dict[str, str]
    taints: tuple[dict[str, str], ...] = ()


def _check_capacity(where: str, capacity: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    for resource, value in capacity.items():
        try:
            amount = parse_quantity(value, f"{where} capacity {resource}")
        except UnitError as err:
            raise NodesError(str(err)) from None
        if amount < 0:
            raise NodesError(f"{where} capacity {resource}: must not be negative, got {value!r}")
        out[str(resource)] = str(value)
    out.setdefault("pods", "110")
    return out


def nodes_from_flags(count: int, cpu: str, memory: str, gpus: int, prefix: str = "node") -> list[NodeSpec]:
    """`--nodes N --node-cpu C --node-memory M --node-gpus G`: N identical nodes."""
    if count < 0:
        raise NodesError(f"--nodes must not be negative, got {count}")
    if gpus < 0:
        raise NodesError(f"--node-gpus must not be negative, got {gpus}")
    capacity: dict[str, Any] = {"cpu": cpu, "memory": memory}
    if gpus:
        capacity["nvidia.com/gpu"] = str(gpus)
    checked = _check_capacity("--node-cpu/--node-memory", capacity)
    labels = {"nvidia.com/gpu.present": "true"} if gpus else {}
    return [NodeSpec(f"{prefix}-{i}", dict(checked), dict(labels)) for i in range(count)]


def parse_nodes_file(text: str, source: str = "nodes file") -> list[NodeSpec]:
    """A YAML list (or {nodes: [...]}) of {name, count?, labels?, taints?, capacity}."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise NodesError(f"{source}: not YAML: {err}") from None
    if isinstance(raw, dict) and set(raw) == {"nodes"}:
        raw = raw["nodes"]
    if not isinstance(raw, list) or not raw:
        raise NodesError(f"{source}: expected a non-empty list of nodes (or a mapping with key 'nodes')")
    out: list[NodeSpec] = []
    for i, item in enumerate(raw):
        where = f"{source}: nodes[{i}]"
        if not isinstance(item, dict):
            raise NodesError(f"{where}: must be a mapping with name and capacity")
        unknown = sorted(set(item) - _NODE_KEYS)
        if unknown:
            raise NodesError(f"{where}: unknown field(s) {', '.join(unknown)}")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise NodesError(f"{where}.name: required")
        if not isinstance(item.get("capacity"), dict):
            raise NodesError(f"{where}.capacity: required mapping like {{cpu: '8', memory: 32Gi}}")
        capacity = _check_capacity(f"{where} ({name})", item["capacity"])
        labels = {str(k): str(v) for k, v in (item.get("labels") or {}).items()}
        taints = tuple(_check_taint(f"{where}.taints[{j}]", t) for j, t in enumerate(item.get("taints") or []))
        count = item.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise NodesError(f"{where}.count: must be a positive integer, got {count!r}")
        names = [name] if count == 1 else [f"{name}-{k}" for k in range(count)]
        out += [NodeSpec(n, dict(capacity), dict(labels), taints) for n in names]
    seen: set[str] = set()
    for spec in out:
        if spec.name in seen:
            raise NodesError(f"{source}: node name {spec.name!r} appears twice")
        seen.add(spec.name)
    return out


def _check_taint(where: str, taint: Any) -> dict[str, str]:
    if not isinstance(taint, dict) or not taint.get("key"):
        raise NodesError(f"{where}: a taint needs key and effect")
    if taint.get("effect") not in _TAINT_EFFECTS:
        raise NodesError(f"{where}.effect: must be one of {', '.join(sorted(_TAINT_EFFECTS))}, got {taint.get('effect')!r}")
    return {k: str(v) for k, v in taint.items() if k in ("key", "value", "effect")}


def node_ip(index: int) -> str:
    return f"10.0.{index // 250}.{index % 250 + 2}"


def new_node(spec: NodeSpec, index: int, now: dt.datetime, address: str = "", kubelet_port: int = 0) -> dict[str, Any]:
    """The Node a kubelet registers; `address` (else a private address of its own) is its InternalIP,
    `kubelet_port` the port its kubelet serves logs on (kube-apiserver dials InternalIP:port)."""
    labels = {
        "kubernetes.io/hostname": spec.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
        **spec.labels,
    }
    body: dict[str, Any] = {"podCIDR": f"10.244.{index}.0/24", "podCIDRs": [f"10.244.{index}.0/24"]}
    if spec.taints:
        body["taints"] = [dict(t) for t in spec.taints]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": spec.name, "labels": labels},
        "spec": body,
        "status": {
            "capacity": dict(spec.capacity),
            "allocatable": dict(spec.capacity),
            "addresses": [{"type": "InternalIP", "address": address or node_ip(index)}, {"type": "Hostname", "address": spec.name}],
            "nodeInfo": {"kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": KUBELET_VERSION, "operatingSystem": "linux",
                         "architecture": "amd64", "containerRuntimeVersion": "localcluster://1", "osImage": "localcluster",
                         "kernelVersion": "simulated", "machineID": spec.name, "systemUUID": spec.name, "bootID": spec.name},
            "conditions": kubelet_conditions(None, True, now),
            **({"daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}}} if kubelet_port else {}),
        },
    }


def kubelet_conditions(previous: Sequence[Obj] | None, ready: bool, now: dt.datetime) -> list[dict[str, Any]]:
    """The conditions a kubelet posts with each heartbeat; transition times move only on change."""
    old = {c.get("type"): c for c in previous or []}
    stamp = format_time(now)

    def cond(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
        before = old.get(kind) or {}
        since = before.get("lastTransitionTime") if before.get("status") == status else stamp
        return {"type": kind, "status": status, "reason": reason, "message": message,
                "lastHeartbeatTime": stamp, "lastTransitionTime": since or stamp}

    return [
        cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        cond("Ready", "True", "KubeletReady", "kubelet is posting ready status") if ready
        else cond("Ready", "False", "KubeletNotReady", "container runtime network not ready: simulated failure"),
    ]


def kubelet_health(node: Obj) -> str:
    """`ok`, `not-ready` or `unreachable`, from the node's health label."""
    value = ((node.get("metadata") or {}).get("labels") or {}).get(HEALTH_LABEL, "ok")
    return value if value in ("not-ready", "unreachable") else "ok"


def lease(node: Obj, now: dt.datetime) -> dict[str, Any]:
    """A node's heartbeat Lease, owned by its Node as the kubelet writes it, so the garbage
    collector removes it with the Node (and any renewal that raced the Node's deletion)."""
    meta = node["metadata"]
    owner = {"apiVersion": "v1", "kind": "Node", "name": meta["name"], "uid": meta.get("uid", "")}
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": meta["name"], "namespace": LEASE_NAMESPACE, "ownerReferences": [owner]},
            "spec": {"holderIdentity": meta["name"], "leaseDurationSeconds": LEASE_SECONDS,
                     "renewTime": format_micro_time(now)}}


@dataclass(frozen=True)
class NodeHealth:
    """What the node lifecycle controller wants on a node: its taints and (if stale) Ready=Unknown."""

    taints: list[dict[str, str]]
    ready_unknown: bool
    wake_at: dt.datetime | None


def node_health(node: Obj, renew_time: dt.datetime | None, now: dt.datetime, *, disrupted: bool = False) -> NodeHealth:
    """Taints and Ready for one node. `disrupted` (every node unhealthy at once, which points at the
    control plane rather than the nodes) keeps NoExecute taints off, as the node lifecycle
    controller's full-disruption mode does, so nothing is evicted."""
    conditions = (node.get("status") or {}).get("conditions") or []
    ready: Mapping[str, Any] = next((c for c in conditions if c.get("type") == "Ready"), {})
    heard = renew_time
    beat = ready.get("lastHeartbeatTime")
    if beat and (heard is None or parse_time(beat) > heard):
        heard = parse_time(beat)
    stale = heard is None or now - heard >= GRACE
    status = "Unknown" if stale else ready.get("status", "Unknown")
    old = [t for t in (node.get("spec") or {}).get("taints") or []
           if t.get("key") not in (NOT_READY_TAINT, UNREACHABLE_TAINT, UNSCHEDULABLE_TAINT)]
    managed: list[dict[str, str]] = []
    if status == "False":
        managed = [{"key": NOT_READY_TAINT, "effect": "NoSchedule"}, {"key": NOT_READY_TAINT, "effect": "NoExecute"}]
    elif status == "Unknown":
        managed = [{"key": UNREACHABLE_TAINT, "effect": "NoSchedule"}, {"key": UNREACHABLE_TAINT, "effect": "NoExecute"}]
    if disrupted:
        managed = [t for t in managed if t["effect"] != "NoExecute"]
    if (node.get("spec") or {}).get("unschedulable"):
        managed.append({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"})
    current = {(t.get("key"), t.get("effect")): t for t in (node.get("spec") or {}).get("taints") or []}
    for taint in managed:
        kept = current.get((taint["key"], taint["effect"]))
        if taint["effect"] == "NoExecute":
            taint["timeAdded"] = (kept or {}).get("timeAdded") or format_time(now)
    wake = None if stale or heard is None else heard + GRACE
    return NodeHealth(old + managed, stale and ready.get("status") != "Unknown", wake)


def unhealthy(node: Obj, renew_time: dt.datetime | None, now: dt.datetime) -> bool:
    """Ready is not True, or nothing was heard from the kubelet for the grace period."""
    return any(t["effect"] == "NoExecute" for t in node_health(node, renew_time, now).taints
               if t["key"] in (NOT_READY_TAINT, UNREACHABLE_TAINT))


def full_disruption(unhealthy_flags: Sequence[bool]) -> bool:
    return bool(unhealthy_flags) and all(unhealthy_flags)


def with_default_tolerations(pod: Obj) -> list[dict[str, Any]]:
    """The pod's tolerations plus the 300s not-ready/unreachable ones the admission plugin adds."""
    tolerations = list((pod.get("spec") or {}).get("tolerations") or [])
    for key in (NOT_READY_TAINT, UNREACHABLE_TAINT):
        if not any(tolerates(t, {"key": key, "effect": "NoExecute"}) for t in tolerations):
            tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})
    return tolerations


@dataclass(frozen=True)
class Eviction:
    namespace: str
    name: str
    taint: str
    message: str = "Taint manager: deleting due to NoExecute taint"


def evictions(node: Obj, pods: Sequence[Obj], now: dt.datetime) -> tuple[list[Eviction], dt.datetime | None]:
    """Pods on the node to delete now for its NoExecute taints, and when to look again."""
    taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("effect") == "NoExecute"]
    due: list[Eviction] = []
    wake: dt.datetime | None = None
    if not taints:
        return due, None
    for pod in pods:
        meta = pod.get("metadata") or {}
        if deleting(pod) or ended(pod):
            continue
        tolerations = with_default_tolerations(pod)
        evict_now = next((t["key"] for t in taints if not any(tolerates(x, t) for x in tolerations)), None)
        deadline: dt.datetime | None = None
        for taint in taints:
            added = parse_time(taint["timeAdded"]) if taint.get("timeAdded") else now
            for toleration in tolerations:
                if tolerates(toleration, taint) and toleration.get("tolerationSeconds") is not None:
                    until = added + dt.timedelta(seconds=max(int(toleration["tolerationSeconds"]), 0))
                    deadline = until if deadline is None else min(deadline, until)
        if evict_now is None and deadline is not None:
            if now >= deadline:
                evict_now = taints[0]["key"]
            elif wake is None or deadline < wake:
                wake = deadline
        if evict_now is not None:
            due.append(Eviction(meta.get("namespace", ""), meta["name"], evict_now))
    return due, wake
