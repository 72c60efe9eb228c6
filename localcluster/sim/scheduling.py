"""The default scheduler's decision: filter nodes as kube-scheduler's default plugins do, score, pick.

Filters run per node in the default profile's order and stop at the first failure, so each node
contributes one reason (or one `Insufficient <r>` per missing resource), and the FailedScheduling
message is the real one's histogram: `0/3 nodes are available: 1 Insufficient nvidia.com/gpu,
2 node(s) had untolerated taint {gpu: true}.` Scoring is LeastAllocated on cpu and memory plus
preferred node affinity and PreferNoSchedule taints; ties go to the node name, so runs repeat.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Iterable, Mapping, Sequence

from localcluster.sim.matching import node_matches_pod_affinity, preferred_affinity_score, tolerates, untolerated_taints
from localcluster.sim.resources import Resources, node_allocatable, pod_requests, sum_requests
from localcluster.sim.units import UnitError

DEFAULT_SCHEDULER = "default-scheduler"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
REASON_UNSCHEDULABLE_NODE = "node(s) were unschedulable"
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_TOO_MANY_PODS = "Too many pods"
# The scheduler's stand-in request for scoring pods that request nothing (non-zero defaults).
_SCORING_DEFAULTS = {"cpu": Decimal("0.1"), "memory": Decimal(200 * 2**20)}

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Bind:
    """Bind the pod to the node (POST pods/binding, event `Scheduled`)."""

    namespace: str
    name: str
    node: str

    @property
    def message(self) -> str:
        return f"Successfully assigned {self.namespace}/{self.name} to {self.node}"


@dataclass(frozen=True)
class Unschedulable:
    """Leave the pod Pending: PodScheduled=False reason Unschedulable, event FailedScheduling."""

    namespace: str
    name: str
    message: str


@dataclass
class NodeState:
    """A node and what the pods already on it hold; updated as the cycle binds."""

    node: Obj
    allocatable: Resources
    used: Resources = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.node["metadata"]["name"]


def is_for_default_scheduler(pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    return (spec.get("schedulerName") or DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER


def needs_scheduling(pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    phase = (pod.get("status") or {}).get("phase")
    return (
        not spec.get("nodeName")
        and not meta.get("deletionTimestamp")
        and phase not in ("Succeeded", "Failed")
        and not spec.get("schedulingGates")
        and is_for_default_scheduler(pod)
    )


def holds_resources(pod: Obj) -> bool:
    """Bound pods that are not finished hold their node's resources (terminating ones too)."""
    return bool((pod.get("spec") or {}).get("nodeName")) and (pod.get("status") or {}).get("phase") not in (
        "Succeeded",
        "Failed",
    )


def node_states(nodes: Iterable[Obj], pods: Iterable[Obj],
                requests_of: Callable[[Obj], Resources] = pod_requests) -> list[NodeState]:
    """Each node with what its bound, unfinished pods hold (`requests_of` lets callers memoise)."""
    by_node: dict[str, list[Obj]] = {}
    for pod in pods:
        if holds_resources(pod):
            by_node.setdefault(pod["spec"]["nodeName"], []).append(pod)
    states = []
    for node in nodes:
        name = node["metadata"]["name"]
        states.append(NodeState(node, node_allocatable(node), sum_requests(by_node.get(name, []), requests_of)))
    return sorted(states, key=lambda s: s.name)


def filter_reasons(pod: Obj, wanted: Resources, state: NodeState) -> list[str]:
    """Why the pod cannot go on this node; empty when it fits."""
    node = state.node
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    cordon = {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}
    if (node.get("spec") or {}).get("unschedulable") and not any(tolerates(t, cordon) for t in tolerations):
        return [REASON_UNSCHEDULABLE_NODE]
    taints = untolerated_taints(pod, node, ("NoSchedule", "NoExecute"))
    if taints:
        taint = taints[0]
        return [f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value', '')}}}"]
    if not node_matches_pod_affinity(pod, node):
        return [REASON_AFFINITY]
    reasons = []
    if state.used.get("pods", Decimal(0)) + 1 > state.allocatable.get("pods", Decimal(110)):
        reasons.append(REASON_TOO_MANY_PODS)
    for resource, amount in sorted(wanted.items()):
        free = state.allocatable.get(resource, Decimal(0)) - state.used.get(resource, Decimal(0))
        if amount > free:
            reasons.append(f"Insufficient {resource}")
    return reasons


def score(pod: Obj, wanted: Resources, state: NodeState) -> float:
    """Higher is better: free cpu/memory after placement (0..100 each), affinity, fewer soft taints."""
    total = 0.0
    for resource, default in _SCORING_DEFAULTS.items():
        capacity = state.allocatable.get(resource, Decimal(0))
        if capacity <= 0:
            continue
        asked = wanted.get(resource) or default
        after = state.used.get(resource, Decimal(0)) + asked
        total += float(max(capacity - after, Decimal(0)) * 100 / capacity)
    total += preferred_affinity_score(pod, state.node)
    total -= 10 * len(untolerated_taints(pod, state.node, ("PreferNoSchedule",)))
    return total


def failure_message(node_count: int, reasons: Counter[str]) -> str:
    if node_count == 0:
        return "no nodes available to schedule pods"
    parts = sorted(f"{count} {reason}" for reason, count in reasons.items())
    return f"0/{node_count} nodes are available: {', '.join(parts)}."


def place(pod: Obj, states: Sequence[NodeState]) -> Bind | Unschedulable:
    """Decide one pod against the current node states (not updated here)."""
    meta = pod["metadata"]
    try:
        wanted = pod_requests(pod)
    except UnitError as err:
        return Unschedulable(meta.get("namespace", ""), meta["name"], f"invalid resource request: {err}")
    histogram: Counter[str] = Counter()
    best: tuple[float, str] | None = None
    for state in states:
        reasons = filter_reasons(pod, wanted, state)
        if reasons:
            histogram.update(reasons)
            continue
        candidate = (score(pod, wanted, state), state.name)
        if best is None or candidate[0] > best[0]:
            best = candidate
    if best is None:
        return Unschedulable(meta.get("namespace", ""), meta["name"], failure_message(len(states), histogram))
    return Bind(meta.get("namespace", ""), meta["name"], best[1])


def schedule_cycle(pending: Sequence[Obj], states: Sequence[NodeState]) -> list[Bind | Unschedulable]:
    """Place pods in queue order (priority, then creation), each seeing the ones bound before it."""
    by_name = {s.name: s for s in states}
    decisions: list[Bind | Unschedulable] = []
    for pod in sorted(pending, key=queue_order):
        decision = place(pod, states)
        if isinstance(decision, Bind):
            state = by_name[decision.node]
            for resource, amount in sum_requests([pod]).items():
                state.used[resource] = state.used.get(resource, Decimal(0)) + amount
        decisions.append(decision)
    return decisions


def queue_order(pod: Obj) -> tuple[int, str, str]:
    meta = pod.get("metadata") or {}
    priority = int((pod.get("spec") or {}).get("priority") or 0)
    return (-priority, meta.get("creationTimestamp") or "", f"{meta.get('namespace', '')}/{meta.get('name', '')}")
