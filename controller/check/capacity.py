"""Which nodes count as capacity, and how the sum of nominal quotas compares with it.

A node counts when the work admitted by quota could run there: it is not cordoned, it is
Ready, it is not marked GPU-unhealthy by Autopilot (MLBatch's generated pods avoid those), and
at least one ResourceFlavor can use it: the node has the flavor's `nodeLabels`, and every
NoSchedule/NoExecute taint on it is tolerated by the flavor's `tolerations`, is one of the
flavor's `nodeTaints` (Kueue only gives that flavor to pods tolerating them), or is tolerated by
the pod templates of the Workloads themselves (GPU nodes are often tainted for GPU pods only).
With no ResourceFlavor at all, the same holds without the flavor's part.
MLBatch's rule (QUOTA_MAINTENANCE.md): the sum of nominal quotas must stay within capacity.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable, Iterable, Mapping

from batchgate import keys
from batchgate.api.kueue import ClusterQueue, ResourceFlavor, Taint
from batchgate.api.node import Node, tolerates
from controller.check.findings import NO_NODES, NODE_NOT_COUNTED, OVER_COMMITTED, UNQUOTED_CAPACITY, Finding
from controller.state.quota_book import format_units, quotas_of, to_units

UNHEALTHY_GPU_VALUES = ("ERR", "TESTING", "EVICT")  # the values MLBatch's pod affinity keeps pods off
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
Toleration = Mapping[str, Any]


@dataclass(frozen=True)
class NodeVerdict:
    name: str
    counted: bool
    reason: str  # why it is not counted; "" when counted
    flavors: tuple[str, ...]  # the flavors whose pods may run there


@dataclass(frozen=True)
class CapacityRow:
    """One resource, cluster-wide (`flavor` None) or for the nodes one flavor can use; integer units."""

    resource: str
    flavor: str | None
    nodes: int
    capacity: int
    not_counted: int  # allocatable on nodes left out of `capacity`
    nominal: int
    usage: int

    @property
    def over_committed(self) -> bool:
        return self.nominal > self.capacity

    def to_json(self) -> dict[str, object]:
        r = self.resource
        out: dict[str, object] = {"resource": r}
        if self.flavor is not None:
            out["flavor"] = self.flavor
        out.update({"nodes": self.nodes, "capacity": format_units(r, self.capacity),
                    "notCounted": format_units(r, self.not_counted), "nominalQuota": format_units(r, self.nominal),
                    "usage": format_units(r, self.usage), "overCommitted": self.over_committed})
        return out


def _taint_text(taint: Taint) -> str:
    return f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"


def node_exclusion(node: Node) -> str | None:
    """Why no admitted pod can run on this node whatever its flavor, or None."""
    if node.unschedulable:
        return "cordoned (spec.unschedulable)"
    if not node.ready:
        return "not Ready"
    health = node.labels.get(keys.AUTOPILOT_GPU_HEALTH_LABEL)
    if health in UNHEALTHY_GPU_VALUES:
        return f"labelled {keys.AUTOPILOT_GPU_HEALTH_LABEL}={health}"
    return None


def untolerated_taint(node: Node, tolerations: Iterable[Toleration], own_taints: tuple[Taint, ...] = ()) -> str | None:
    """The first NoSchedule/NoExecute taint on `node` that nothing tolerates, as `key=value:Effect`."""
    tolerations = tuple(tolerations)
    for taint in node.taints:
        if taint.effect not in BLOCKING_EFFECTS or taint in own_taints:
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return _taint_text(taint)
    return None


def flavor_refusal(flavor: ResourceFlavor, node: Node, workload_tolerations: tuple[Toleration, ...] = ()) -> str | None:
    """Why pods admitted with `flavor` cannot run on `node`, or None when they can."""
    for key, value in flavor.node_labels.items():
        if node.labels.get(key) != value:
            return f"lacks the flavor's node label {key}={value}"
    taint = untolerated_taint(node, (*flavor.tolerations, *workload_tolerations), flavor.node_taints)
    return None if taint is None else f"taint {taint} is not tolerated"


def judge_nodes(nodes: Iterable[Node], flavors: Mapping[str, ResourceFlavor],
                workload_tolerations: Iterable[Toleration] = ()) -> list[NodeVerdict]:
    """Which nodes count; `workload_tolerations` are those of the observed Workloads' pod templates."""
    pod_tolerations = tuple(workload_tolerations)
    verdicts = []
    for node in sorted(nodes, key=lambda n: n.name):
        excluded = node_exclusion(node)
        if excluded is not None:
            verdicts.append(NodeVerdict(node.name, False, excluded, ()))
            continue
        if not flavors:
            taint = untolerated_taint(node, pod_tolerations)
            reason = "" if taint is None else f"taint {taint} is not tolerated (and there is no ResourceFlavor)"
            verdicts.append(NodeVerdict(node.name, taint is None, reason, ()))
            continue
        refusals = {name: flavor_refusal(rf, node, pod_tolerations) for name, rf in sorted(flavors.items())}
        usable = tuple(name for name, why in refusals.items() if why is None)
        reason = "" if usable else "no ResourceFlavor can use it: " + "; ".join(
            f"{name}: {why}" for name, why in refusals.items())
        verdicts.append(NodeVerdict(node.name, bool(usable), reason, usable))
    return verdicts


def capacity_rows(nodes: Mapping[str, Node], verdicts: list[NodeVerdict], cluster_queues: Iterable[ClusterQueue],
                  usage: Mapping[tuple[str, str], int]) -> tuple[list[CapacityRow], list[CapacityRow]]:
    """Cluster-wide rows per covered resource, and per-flavor rows; `usage` is per (flavor, resource)."""
    nominal: dict[tuple[str, str], int] = {}
    for cq in cluster_queues:
        for fr, quota in quotas_of(cq).items():
            nominal[fr] = nominal.get(fr, 0) + quota.nominal
    resources = sorted({r for _, r in nominal})

    def allocatable(names: Iterable[str], resource: str) -> int:
        return sum(to_units(resource, nodes[n].allocatable.get(resource, Decimal(0))) for n in names)

    counted = [v.name for v in verdicts if v.counted]
    left_out = [v.name for v in verdicts if not v.counted]
    cluster = [CapacityRow(r, None, len(counted), allocatable(counted, r), allocatable(left_out, r),
                           sum(v for (_, res), v in nominal.items() if res == r),
                           sum(v for (_, res), v in usage.items() if res == r))
               for r in resources]
    per_flavor = []
    for flavor in sorted({f for f, _ in nominal}):
        usable = [v.name for v in verdicts if flavor in v.flavors]
        other = sorted(set(nodes) - set(usable))
        for r in resources:
            if (flavor, r) in nominal:
                per_flavor.append(CapacityRow(r, flavor, len(usable), allocatable(usable, r), allocatable(other, r),
                                              nominal[(flavor, r)], usage.get((flavor, r), 0)))
    return cluster, per_flavor


def _formatter(resource: str) -> Callable[[int], str]:
    return lambda units: format_units(resource, units)


def capacity_findings(cluster: list[CapacityRow], per_flavor: list[CapacityRow], verdicts: list[NodeVerdict],
                      flavors: Mapping[str, ResourceFlavor]) -> list[Finding]:
    if not verdicts:
        return [Finding("warning", NO_NODES, "cluster",
                        "no Node objects were read, so quotas cannot be compared with capacity")] if cluster else []
    out = []
    for row in cluster:
        r = row.resource
        fmt = _formatter(r)
        if row.over_committed:
            out.append(Finding("error", OVER_COMMITTED, f"resource {r}",
                               f"the nominal quotas sum to {fmt(row.nominal)} but schedulable nodes have "
                               f"{fmt(row.capacity)} allocatable: admitted work may find no node "
                               f"(the sum of nominal quotas must stay within cluster capacity)"))
        elif row.capacity > row.nominal:
            out.append(Finding("info", UNQUOTED_CAPACITY, f"resource {r}",
                               f"{fmt(row.capacity - row.nominal)} of the {fmt(row.capacity)} allocatable on "
                               f"schedulable nodes is in no ClusterQueue's nominal quota"))
    every_counted = sum(v.counted for v in verdicts)
    for row in per_flavor:
        # A flavor usable on every counted node is the cluster-wide row again; a missing one is
        # a MissingFlavor finding of its own.
        restricted = row.flavor in flavors and row.nodes != every_counted
        if row.over_committed and restricted:
            fmt = _formatter(row.resource)
            out.append(Finding("error", OVER_COMMITTED, f"ResourceFlavor {row.flavor} resource {row.resource}",
                               f"the nominal quotas in this flavor sum to {fmt(row.nominal)} but the "
                               f"{row.nodes} node(s) it can use have {fmt(row.capacity)} allocatable"))
    for v in verdicts:
        if not v.counted:
            out.append(Finding("info", NODE_NOT_COUNTED, f"Node {v.name}", f"not counted as capacity: {v.reason}"))
    return out
