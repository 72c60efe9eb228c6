"""Capacity that cannot take new pods, and the slack ClusterQueue's lending limits that follow from it.

Upstream's node monitors (the AppWrapper controller's NodeHealthMonitor and, before v1.1, its
SlackClusterQueueMonitor, internal/controller/appwrapper/slackcq_monitor.go): a node's capacity
is unusable when the node is cordoned or NotReady (every resource but pods), or when a health
label carries a NoSchedule or NoExecute value (its GPUs). The slack ClusterQueue lends only what
is usable: on the first flavor of its first resource group, a resource with unusable capacity
gets `lendingLimit = max(0, nominalQuota - unusable)`, and a resource without any loses its
lendingLimit, so the whole nominal quota can be lent again.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Iterable, Mapping

from batchgate import keys
from batchgate.api.objects import as_mapping
from batchgate.policy import NodeHealth
from batchgate.quantity import QuantityError, Resources, add, format_quantity, parse_quantity

UNSCHEDULABLE_TAINTS = (keys.TAINT_UNREACHABLE, keys.TAINT_NOT_READY)
"""What the node lifecycle controller puts on a node that stopped reporting or is NotReady."""


def unusable(node: Mapping[str, Any], health: NodeHealth, resource: str = keys.GPU_RESOURCE) -> Resources:
    """The capacity of `node` that new pods cannot use; empty when the node is healthy."""
    capacity = _capacity(node)
    if _unschedulable(node):
        return {name: value for name, value in capacity.items() if name != "pods" and value}
    labels = as_mapping(as_mapping(node.get("metadata")).get("labels"))
    flagged = any(labels.get(label) in values for label, values in health.unschedulable.items())
    return {resource: capacity[resource]} if flagged and capacity.get(resource) else {}


def unusable_total(nodes: Iterable[Mapping[str, Any]], health: NodeHealth) -> Resources:
    total: Resources = {}
    for node in nodes:
        total = add(total, unusable(node, health))
    return total


@dataclass(frozen=True)
class LendingChange:
    """One resource's lendingLimit before and after (None: no limit, everything may be lent)."""

    resource: str
    before: Decimal | None
    after: Decimal | None

    def describe(self, unusable_amount: Decimal) -> str:
        after = "removed" if self.after is None else f"set to {format_quantity(self.after, self.resource)}"
        return (f"lendingLimit of {self.resource} {after}: "
                f"{format_quantity(unusable_amount, self.resource)} unusable on unhealthy or unschedulable nodes")


@dataclass(frozen=True)
class SlackUpdate:
    """The ClusterQueue object to write back, and what changed in it."""

    cluster_queue: dict[str, Any]
    changes: tuple[LendingChange, ...]


def slack_lending_limits(cluster_queue: Mapping[str, Any], unusable_now: Resources) -> SlackUpdate | None:
    """The slack ClusterQueue with its lending limits following `unusable_now`; None when nothing changes
    (or the queue has no flavor to adjust)."""
    updated = copy.deepcopy(dict(cluster_queue))
    try:
        resources = updated["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    except (KeyError, IndexError, TypeError):
        return None
    if not isinstance(resources, list):
        return None
    changes = []
    for quota in resources:
        if not isinstance(quota, dict) or not isinstance(quota.get("name"), str):
            continue
        name = quota["name"]
        try:
            nominal = parse_quantity(quota.get("nominalQuota", 0))
            before = None if quota.get("lendingLimit") is None else parse_quantity(quota["lendingLimit"])
        except QuantityError:
            continue  # the API server validates quotas; a value it let through is not ours to fix
        missing = unusable_now.get(name)
        after = None if missing is None else max(Decimal(0), nominal - missing)
        if before == after:
            continue
        if after is None:
            quota.pop("lendingLimit", None)
        else:
            quota["lendingLimit"] = format_quantity(after, name)
        changes.append(LendingChange(name, before, after))
    return SlackUpdate(updated, tuple(changes)) if changes else None


def _unschedulable(node: Mapping[str, Any]) -> bool:
    spec = as_mapping(node.get("spec"))
    if spec.get("unschedulable") is True:
        return True
    if any(isinstance(t, Mapping) and t.get("key") in UNSCHEDULABLE_TAINTS for t in spec.get("taints") or ()):
        return True
    conditions = as_mapping(node.get("status")).get("conditions") or ()
    ready = next((c for c in conditions if isinstance(c, Mapping) and c.get("type") == "Ready"), None)
    return ready is not None and ready.get("status") != "True"


def _capacity(node: Mapping[str, Any]) -> Resources:
    out: Resources = {}
    for name, value in as_mapping(as_mapping(node.get("status")).get("capacity")).items():
        try:
            out[name] = parse_quantity(value)
        except QuantityError:
            continue
    return out


