"""Can this pod go on that node? kube-scheduler's filters, and MLBatch's GPU packing score.

Pods and nodes are parsed once into small frozen values, so a placement over thousands of nodes
compares tuples and Decimals instead of walking wire dicts. The filters run in the default
profile's order (NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit) and stop at
the first failing one, so every node contributes one reason — or one `Insufficient <resource>`
per missing resource — and the FailedScheduling message is kube-scheduler's histogram:
`0/5 nodes are available: 2 Insufficient nvidia.com/gpu, 3 node(s) didn't match Pod's node
affinity/selector.`

The score is the one MLBatch configures for its coscheduler (docs/gang.md, "What it does"):
NodeResourcesFit with RequestedToCapacityRatio on `nvidia.com/gpu`, shape 0% -> 0, 100% -> 10,
so the node whose GPUs would be fullest after placement wins (packing); a pod that asks for no
GPU scores 0 everywhere.
"""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Iterable, Mapping

from batchgate import keys
from batchgate.api import kueue_fields as f
from batchgate.api import pod_requests as arithmetic
from batchgate.api.kueue import Taint
from batchgate.api.node_affinity import NodeAffinity, parse_node_affinity
from batchgate.api.node import Node, tolerates
from batchgate.quantity import Resources

__all__ = ["PodInfo", "node_reason", "resource_reasons", "free_of",
           "failure_message", "gpu_score", "parse_pod"]

PODS = "pods"
# kube-scheduler's default when a node does not report allocatable pods.
DEFAULT_MAX_PODS = Decimal(110)
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_NOT_READY = "node(s) were not ready"
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_TOO_MANY_PODS = "Too many pods"
TERMINAL_PHASES = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Constraints:
    """Everything but the requests that decides which nodes a pod may use; pods of one gang share it."""

    affinity: NodeAffinity = NodeAffinity()
    tolerations: tuple[tuple[tuple[str, str], ...], ...] = ()


@dataclass(frozen=True)
class PodInfo:
    """A pod as the placement sees it, parsed once from the wire dict."""

    namespace: str
    name: str
    uid: str
    scheduler_name: str
    node_name: str
    phase: str
    priority: int
    created: _dt.datetime | None
    group: str  # the scheduling.x-k8s.io/pod-group label, "" when none
    requests: tuple[tuple[str, Decimal], ...]  # includes ("pods", 1)
    constraints: Constraints
    deleting: bool = False
    gated: bool = False
    owner: str = ""  # "namespace/name" of the controller owner, for PodGroup occupiedBy

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES

    @property
    def holds_resources(self) -> bool:
        """Bound pods that have not finished use their node's capacity (terminating ones too)."""
        return bool(self.node_name) and not self.terminal

    def needs_placement(self, scheduler_name: str) -> bool:
        return (self.scheduler_name == scheduler_name and not self.node_name and not self.terminal
                and not self.deleting and not self.gated)


def parse_pod(raw: Mapping[str, Any]) -> PodInfo:
    """A wire Pod -> PodInfo; bad input raises FieldError naming the field path."""
    meta = f.mapping(raw.get("metadata"), "metadata", required=True)
    spec = f.mapping(raw.get("spec"), "spec")
    status = f.mapping(raw.get("status"), "status")
    labels = f.string_map(meta.get("labels"), "metadata.labels")
    requests = arithmetic.pod_requests(spec, "spec")
    requests[PODS] = requests.get(PODS, Decimal(0)) + 1
    owner = ""
    for ref in f.sequence(meta.get("ownerReferences"), "metadata.ownerReferences"):
        if isinstance(ref, Mapping) and ref.get("controller"):
            owner = f"{meta.get('namespace') or ''}/{ref.get('name') or ''}"
    return PodInfo(
        namespace=f.string(meta.get("namespace"), "metadata.namespace", default=""),
        name=f.string(meta.get("name"), "metadata.name", default=""),
        uid=f.string(meta.get("uid"), "metadata.uid", default=""),
        scheduler_name=f.string(spec.get("schedulerName"), "spec.schedulerName", default="") or keys.DEFAULT_SCHEDULER,
        node_name=f.string(spec.get("nodeName"), "spec.nodeName", default=""),
        phase=f.string(status.get("phase"), "status.phase", default="Pending"),
        priority=f.integer(spec.get("priority"), "spec.priority", default=0),
        created=f.timestamp(meta.get("creationTimestamp"), "metadata.creationTimestamp"),
        group=labels.get(keys.POD_GROUP_LABEL, ""),
        requests=tuple(sorted((name, value) for name, value in requests.items() if value)),
        constraints=_constraints(spec),
        deleting=bool(meta.get("deletionTimestamp")),
        gated=bool(f.sequence(spec.get("schedulingGates"), "spec.schedulingGates")),
        owner=owner,
    )


def _constraints(spec: Mapping[str, Any]) -> Constraints:
    tolerations = []
    for i, raw in enumerate(f.sequence(spec.get("tolerations"), "spec.tolerations")):
        toleration = f.mapping(raw, f"spec.tolerations[{i}]", required=True)
        tolerations.append(tuple(sorted((k, str(v)) for k, v in toleration.items()
                                        if k in ("key", "operator", "value", "effect") and v is not None)))
    return Constraints(parse_node_affinity(spec, "spec"), tuple(tolerations))


def node_reason(constraints: Constraints, node: Node) -> str | None:
    """The first filter this node fails for pods with these constraints, ignoring resources; None: passes."""
    tolerations = [dict(t) for t in constraints.tolerations]
    if node.unschedulable and not any(tolerates(t, UNSCHEDULABLE_TAINT) for t in tolerations):
        return REASON_UNSCHEDULABLE
    for taint in node.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not any(tolerates(t, taint) for t in tolerations):
            return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
    if not node.ready:
        return REASON_NOT_READY
    if not constraints.affinity.matches(node.labels, node.name):
        return REASON_AFFINITY
    return None


def free_of(node: Node, used: Mapping[str, Decimal]) -> Resources:
    """What is left of the node's allocatable after `used` (pods default to kube's 110)."""
    free = {name: value - used.get(name, Decimal(0)) for name, value in node.allocatable.items()}
    if PODS not in node.allocatable:
        free[PODS] = DEFAULT_MAX_PODS - used.get(PODS, Decimal(0))
    return free


def resource_reasons(requests: Iterable[tuple[str, Decimal]], free: Mapping[str, Decimal]) -> list[str]:
    """NodeResourcesFit: `Too many pods` and one `Insufficient <r>` per resource that does not fit."""
    reasons = []
    for name, amount in requests:
        if amount > free.get(name, Decimal(0)):
            reasons.append(REASON_TOO_MANY_PODS if name == PODS else f"Insufficient {name}")
    return reasons


def gpu_score(requests: Mapping[str, Decimal], node: Node, free: Mapping[str, Decimal]) -> int:
    """RequestedToCapacityRatio on nvidia.com/gpu, 0..100: GPU utilisation after placing the pod."""
    wanted = requests.get(keys.GPU_RESOURCE, Decimal(0))
    capacity = node.allocatable.get(keys.GPU_RESOURCE, Decimal(0))
    if wanted <= 0 or capacity <= 0:
        return 0
    used_after = capacity - free.get(keys.GPU_RESOURCE, Decimal(0)) + wanted
    return min(100, int(used_after * 100 // capacity))


def failure_message(node_count: int, reasons: Counter[str]) -> str:
    """kube-scheduler's FailedScheduling text: counts per reason, sorted as it sorts them."""
    if node_count == 0:
        return "no nodes available to schedule pods"
    parts = sorted(f"{count} {reason}" for reason, count in reasons.items())
    return f"0/{node_count} nodes are available: {', '.join(parts)}."
