"""Why each pending Workload waits.

The controller's own word comes first: the Workload's QuotaReserved=False message. When there
is none (the controller has not tried it yet, or is not running), the reason is computed by
running the quota admission cycle over the observed state with that Workload as the only head,
so the answer is the one the next cycle would give if it reached it.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Callable, Literal

from batchgate import keys
from batchgate.api.kueue import Workload
from controller.check.findings import MISSING_LOCAL_QUEUE, UNCOVERED_RESOURCE, Finding
from controller.check.inventory import Inventory
from controller.decisions.quota.admission import run_cycle
from controller.state.quota_book import format_units
from controller.state.cache import ObjectKey
from controller.state.quota_state import QuotaState

Source = Literal["status", "computed"]


@dataclass(frozen=True)
class PendingWorkload:
    key: ObjectKey
    local_queue: str
    cluster_queue: str | None
    priority: int
    requests: tuple[tuple[str, int], ...]  # total over pod sets, integer units
    reason: str
    source: Source

    def to_json(self) -> dict[str, object]:
        return {"name": self.key.namespaced_name, "localQueue": self.local_queue, "clusterQueue": self.cluster_queue,
                "priority": self.priority, "requests": {r: format_units(r, v) for r, v in self.requests},
                "reason": self.reason, "reasonSource": self.source}


def explain(state: QuotaState, key: ObjectKey, now: _dt.datetime) -> str:
    """The reason the next cycle would give for `key` if it were the only head."""
    if key in state.blocked:
        return state.blocked[key]
    cq = state.cluster_queue_of(key)
    inactive = state.inactive_reason(cq) if cq else None
    if inactive is not None:
        return inactive
    result = run_cycle(state, [key], now)
    if result.admit:
        return (f"fits now in ClusterQueue {result.admit[0].cluster_queue}; nothing in the quotas holds it back "
                f"(is the controller running?)")
    if result.preempt:
        return result.preempt[0].reason
    return result.requeue[0].reason if result.requeue else ""


Kept = dict[ObjectKey, tuple[Workload, "PendingWorkload"]]


def pending_workloads(inv: Inventory, state: QuotaState, reason_of: Callable[[ObjectKey], str],
                      kept: Kept | None = None) -> list[PendingWorkload]:
    """Every pending Workload with its reason: its status message, else `reason_of` (`explain`'s).

    `kept` (updated here) holds the last call's rows by Workload, reused while the Workload object,
    its ClusterQueue, priority and reason stay the same."""
    out = []
    last = kept if kept is not None else {}
    fresh: Kept = {}
    for key, info in state.workloads.items():
        if not state.is_pending(key):
            continue
        wl = inv.workloads[key]
        cq = state.cluster_queue_of(key)
        cond = wl.condition(keys.COND_QUOTA_RESERVED)
        source: Source
        if cond is not None and cond.status == "False" and cond.message:
            reason, source = cond.message, "status"
        else:
            reason, source = reason_of(key), "computed"
        hit = last.get(key)
        if hit is not None and hit[0] is wl and (hit[1].cluster_queue, hit[1].priority, hit[1].reason) == (
                cq, info.priority, reason):
            out.append(hit[1])
            fresh[key] = hit
            continue
        totals: dict[str, int] = {}
        for ps in info.pod_sets:
            for resource, value in ps.total.items():
                totals[resource] = totals.get(resource, 0) + value
        entry = PendingWorkload(key, wl.queue_name, cq, info.priority, tuple(sorted(totals.items())), reason, source)
        out.append(entry)
        fresh[key] = (wl, entry)
    out.sort(key=lambda p: (p.cluster_queue or "", -p.priority, state.workloads[p.key].timestamp, p.key.namespaced_name))
    if kept is not None:
        kept.clear()
        kept.update(fresh)
    return out


def pending_findings(state: QuotaState, pending: list[PendingWorkload]) -> list[Finding]:
    """Pending work that can never be admitted as things stand: no LocalQueue, or an uncovered resource."""
    covered_by: dict[str, list[str]] = {}
    for cq in sorted(state.cluster_queues.values(), key=lambda c: c.name):
        for resource in cq.group_of:
            covered_by.setdefault(resource, []).append(cq.name)
    out = []
    for p in pending:
        subject = f"Workload {p.key.namespaced_name}"
        namespace = p.key.namespace
        if (namespace, p.local_queue) not in state.local_queues:
            what = f"LocalQueue {p.local_queue!r}" if p.local_queue else "no LocalQueue (spec.queueName is empty)"
            out.append(Finding("error", MISSING_LOCAL_QUEUE, subject,
                               f"names {what}, which does not exist in namespace {namespace}: it will never be admitted"))
        own = state.cluster_queues.get(p.cluster_queue or "")
        for resource, value in p.requests:
            if not value:
                continue
            if resource not in covered_by:
                out.append(Finding("error", UNCOVERED_RESOURCE, subject,
                                   f"requests {resource}, which no ClusterQueue covers: it will never be admitted"))
            elif own is not None and resource not in own.group_of:
                out.append(Finding("error", UNCOVERED_RESOURCE, subject,
                                   f"requests {resource}, which its ClusterQueue {own.name} does not cover "
                                   f"(covered by {', '.join(covered_by[resource])})"))
    return out
