"""`check(inventory, now) -> Report`: the whole cluster check as one value.

Capacity of schedulable nodes against nominal quotas, queue and cohort usage, pending work
with its reason, and the findings (error / warning / info, each with a reason). The report has
an error finding exactly when something is broken for users: over-committed quota, a queue
that cannot admit, work that can never be admitted, or an object that does not parse.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any, Callable

from batchgate import keys
from batchgate.api.kueue import validate_cluster_queue
from controller.check import findings as codes
from controller.check.capacity import CapacityRow, NodeVerdict, capacity_findings, capacity_rows, judge_nodes
from controller.check.findings import Finding, sort_findings
from controller.check.inventory import Inventory
from controller.check.pending import Kept, PendingWorkload, explain, pending_findings, pending_workloads
from controller.check.queues import ClusterQueueSummary, CohortSummary, build_state, summarize_queues
from batchgate.policy import FairSharing
from controller.state.cache import ObjectKey
from controller.state.quota_state import QuotaState


@dataclass(frozen=True)
class Report:
    capacity: tuple[CapacityRow, ...]
    flavor_capacity: tuple[CapacityRow, ...]
    nodes: tuple[NodeVerdict, ...]
    cluster_queues: tuple[ClusterQueueSummary, ...]
    cohorts: tuple[CohortSummary, ...]
    pending: tuple[PendingWorkload, ...]
    findings: tuple[Finding, ...]

    @property
    def has_errors(self) -> bool:
        return any(f.severity == "error" for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "capacity": [row.to_json() for row in self.capacity],
            "flavorCapacity": [row.to_json() for row in self.flavor_capacity],
            "nodes": [{"name": v.name, "counted": v.counted, "reason": v.reason, "flavors": list(v.flavors)}
                      for v in self.nodes],
            "clusterQueues": [s.to_json() for s in self.cluster_queues],
            "cohorts": [c.to_json() for c in self.cohorts],
            "pending": [p.to_json() for p in self.pending],
            "findings": [f.to_json() for f in self.findings],
            "summary": {sev: sum(f.severity == sev for f in self.findings) for sev in ("error", "warning", "info")},
        }


def check(inv: Inventory, now: _dt.datetime, fair_sharing: FairSharing = FairSharing()) -> Report:
    """`fair_sharing` is the controller's configuration; it changes computed pending reasons only."""
    state = build_state(inv, fair_sharing)
    return report_of(inv, state, now, lambda key: explain(state, key, now))


def report_of(inv: Inventory, state: QuotaState, now: _dt.datetime, reason: Callable[[ObjectKey], str],
              kept: Kept | None = None) -> Report:
    """The report over `state` (the quota state of `inv`); `reason(key)` is `explain`'s, maybe
    remembered, and `kept` the last report's pending rows (see `pending_workloads`)."""
    tolerations = {repr(t): t for key, wl in inv.workloads.items() if key not in state.finished
                   for ps in wl.pod_sets for t in ps.tolerations}.values()  # distinct ones: many pods share them
    verdicts = judge_nodes(inv.nodes.values(), inv.flavors, tolerations)
    usage: dict[tuple[str, str], int] = {}
    for per_cq in state.book.usage.values():
        for fr, value in per_cq.items():
            usage[fr] = usage.get(fr, 0) + value
    cluster, per_flavor = capacity_rows(inv.nodes, verdicts, inv.cluster_queues.values(), usage)
    queues, cohorts = summarize_queues(inv, state)
    pending = pending_workloads(inv, state, reason, kept)
    found = list(inv.findings)
    if inv.ignored:
        kinds = ", ".join(f"{kind} ({count})" for kind, count in sorted(inv.ignored.items()))
        found.append(Finding("info", codes.IGNORED_OBJECTS, "input", f"objects of kinds the check does not read: {kinds}"))
    found += capacity_findings(cluster, per_flavor, verdicts, inv.flavors)
    found += queue_findings(inv, state)
    found += pending_findings(state, pending)
    return Report(tuple(cluster), tuple(per_flavor), tuple(verdicts), tuple(queues), tuple(cohorts),
                  tuple(pending), tuple(sort_findings(found)))


def _stopped(subject: str, stop_policy: str) -> list[Finding]:
    """A ClusterQueue or LocalQueue whose stopPolicy (Hold, HoldAndDrain) keeps it from admitting."""
    if stop_policy == "None":
        return []
    return [Finding("warning", codes.STOPPED_QUEUE, subject, f"stopPolicy is {stop_policy}: it admits nothing new")]


def queue_findings(inv: Inventory, state: QuotaState) -> list[Finding]:
    """What is wrong with the queues themselves, whatever the workloads."""
    out = []
    served = {lq.cluster_queue for lq in inv.local_queues.values()}
    for name in sorted(inv.cluster_queues):
        cq = inv.cluster_queues[name]
        subject = f"ClusterQueue {name}"
        for error in validate_cluster_queue(cq):
            out.append(Finding("error", codes.INVALID_CLUSTER_QUEUE, subject, str(error)))
        for flavor in state.missing_flavors(cq):
            out.append(Finding("error", codes.MISSING_FLAVOR, subject,
                               f"references ResourceFlavor {flavor}, which does not exist: "
                               f"the ClusterQueue is inactive and admits nothing"))
        out.extend(_stopped(subject, cq.stop_policy))
        if cq.namespace_selector is None:
            out.append(Finding("warning", codes.NO_NAMESPACE_SELECTOR, subject,
                               "spec.namespaceSelector is unset, so no namespace may use it "
                               "(use {} to allow every namespace)"))
        if name not in served:
            out.append(Finding("info", codes.NO_LOCAL_QUEUE, subject,
                               "no LocalQueue points at it: it only lends its quota to its cohort"
                               if cq.cohort else "no LocalQueue points at it and it has no cohort: its quota is unused"))
    for (namespace, lq_name), lq in sorted(inv.local_queues.items()):
        subject = f"LocalQueue {namespace}/{lq_name}"
        target = inv.cluster_queues.get(lq.cluster_queue)
        if target is None:
            out.append(Finding("error", codes.MISSING_CLUSTER_QUEUE, subject,
                               f"points at ClusterQueue {lq.cluster_queue!r}, which does not exist: "
                               f"its workloads stay pending"))
        elif (target.namespace_selector is not None
              and not target.namespace_selector.matches(inv.namespaces.get(namespace, {}))):
            out.append(Finding("warning", codes.NAMESPACE_NOT_SELECTED, subject,
                               f"ClusterQueue {target.name}'s namespaceSelector does not select namespace {namespace}: "
                               f"its workloads stay pending"))
        out.extend(_stopped(subject, lq.stop_policy))
    for key in sorted(state.admitted, key=lambda k: k.namespaced_name):
        held = state.admitted[key]
        if held.cluster_queue not in inv.cluster_queues:
            out.append(Finding("warning", codes.ORPHANED_ADMISSION, f"Workload {key.namespaced_name}",
                               f"holds quota in ClusterQueue {held.cluster_queue}, which does not exist"))
        elif inv.workloads[key].is_true(keys.COND_EVICTED):
            out.append(Finding("info", codes.EVICTION_IN_PROGRESS, f"Workload {key.namespaced_name}",
                               "is evicted but still holds its quota until its pods are gone"))
    return out
