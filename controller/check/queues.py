"""Per ClusterQueue and per cohort: quota, usage, borrowing and lending, from the quota state.

The figures are the quota admission code's own arithmetic (`QuotaBook`, `UsageOverlay`), so
"available" here is exactly what the next cycle would offer. Kueue pools lent quota in the
cohort: a borrower's excess is not drawn from one named lender, so per queue we show what it
borrows and what it puts at the cohort's disposal (its unused quota within `lendingLimit`, some
of which borrowers may be using), and per cohort how much of the pool is borrowed and free.
"""

from __future__ import annotations

from dataclasses import dataclass

from batchgate import keys
from controller.check.inventory import Inventory
from controller.state.quota_book import UsageOverlay, format_units, quotas_of
from batchgate.policy import FairSharing
from controller.state.quota_state import QuotaState


def build_state(inv: Inventory, fair_sharing: FairSharing = FairSharing()) -> QuotaState:
    """The quota admission state as the controller would hold it after observing the inventory."""
    state = QuotaState()
    state.fair_sharing = fair_sharing
    for name, labels in inv.namespaces.items():
        state.put_namespace(name, labels)
    for rf in inv.flavors.values():
        state.put_flavor(rf)
    for wpc in inv.priority_classes.values():
        state.put_priority_class(wpc)
    for cq in inv.cluster_queues.values():
        state.put_cluster_queue(cq)
    for lq in inv.local_queues.values():
        state.put_local_queue(lq)
    for wl in inv.workloads.values():
        state.put_workload(wl)
    return state


@dataclass(frozen=True)
class QuotaRow:
    """One (flavor, resource) of a ClusterQueue; integer units, None = no limit."""

    flavor: str
    resource: str
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None
    usage: int
    borrowed: int  # usage above nominal, taken from the cohort
    unused_lendable: int  # its unused quota within lendingLimit: what it offers the cohort now
    available: int  # what the next admission may still take, borrowing included

    def to_json(self) -> dict[str, object]:
        r = self.resource

        def fmt(v: int | None) -> str | None:
            return None if v is None else format_units(r, v)

        return {"flavor": self.flavor, "resource": r, "nominalQuota": fmt(self.nominal),
                "borrowingLimit": fmt(self.borrowing_limit), "lendingLimit": fmt(self.lending_limit),
                "usage": fmt(self.usage), "borrowed": fmt(self.borrowed), "unusedLendable": fmt(self.unused_lendable),
                "available": fmt(self.available)}


@dataclass(frozen=True)
class ClusterQueueSummary:
    name: str
    cohort: str
    inactive: str | None  # why it admits nothing, None when active
    local_queues: int
    pending: int
    reserving: int
    admitted: int
    rows: tuple[QuotaRow, ...]

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "cohort": self.cohort, "active": self.inactive is None,
                "inactiveReason": self.inactive, "localQueues": self.local_queues, "pendingWorkloads": self.pending,
                "reservingWorkloads": self.reserving, "admittedWorkloads": self.admitted,
                "resources": [row.to_json() for row in self.rows]}


@dataclass(frozen=True)
class CohortRow:
    flavor: str
    resource: str
    nominal: int
    usage: int
    borrowed: int
    pool: int  # the members' lendable quota (nominal above each one's guaranteed part)
    pool_used: int  # usage spilling above the members' guaranteed parts

    def to_json(self) -> dict[str, object]:
        r = self.resource
        return {"flavor": self.flavor, "resource": r, "nominalQuota": format_units(r, self.nominal),
                "usage": format_units(r, self.usage), "borrowed": format_units(r, self.borrowed),
                "lendablePool": format_units(r, self.pool), "poolUsed": format_units(r, self.pool_used),
                "poolFree": format_units(r, max(0, self.pool - self.pool_used))}


@dataclass(frozen=True)
class CohortSummary:
    name: str
    members: tuple[str, ...]
    rows: tuple[CohortRow, ...]

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "members": list(self.members), "resources": [r.to_json() for r in self.rows]}


def summarize_queues(inv: Inventory, state: QuotaState) -> tuple[list[ClusterQueueSummary], list[CohortSummary]]:
    view = UsageOverlay(state.book)
    lq_count: dict[str, int] = {}
    for lq in inv.local_queues.values():
        lq_count[lq.cluster_queue] = lq_count.get(lq.cluster_queue, 0) + 1
    pending_count: dict[str, int] = {}
    for key in state.workloads:
        queue_name = state.cluster_queue_of(key) if state.is_pending(key) else None
        if queue_name is not None:
            pending_count[queue_name] = pending_count.get(queue_name, 0) + 1
    summaries = []
    for name in sorted(state.cluster_queues):
        cq = state.cluster_queues[name]
        held = state.admitted_by_cq.get(name, {})
        admitted = sum(1 for k in held if inv.workloads[k].is_true(keys.COND_ADMITTED))
        rows: list[QuotaRow] = []
        for (flavor, resource), quota in quotas_of(cq).items():
            fr = (flavor, resource)
            used = view.usage(name, fr)
            g = quota.guaranteed
            lendable = max(0, (quota.nominal - g) - max(0, used - g)) if cq.cohort else 0
            rows.append(QuotaRow(flavor, resource, quota.nominal, quota.borrowing_limit, quota.lending_limit, used,
                                 max(0, used - quota.nominal) if cq.cohort else 0, lendable,
                                 view.available(name, fr)))
        summaries.append(ClusterQueueSummary(name, cq.cohort, state.inactive_reason(name), lq_count.get(name, 0),
                                             pending_count.get(name, 0), len(held), admitted, tuple(rows)))
    cohorts = []
    by_cq = {s.name: s for s in summaries}
    for cohort in sorted(state.book.members):
        members = tuple(sorted(state.book.members[cohort]))
        totals: dict[tuple[str, str], list[int]] = {}
        for member in members:
            for row in by_cq[member].rows:
                t = totals.setdefault((row.flavor, row.resource), [0, 0, 0])
                t[0] += row.nominal
                t[1] += row.usage
                t[2] += row.borrowed
        cohort_rows = tuple(CohortRow(flavor, resource, n, u, b,
                                      state.book.cohort_quota[cohort].get((flavor, resource), 0),
                                      state.book.cohort_usage[cohort].get((flavor, resource), 0))
                            for (flavor, resource), (n, u, b) in totals.items())
        cohorts.append(CohortSummary(cohort, members, cohort_rows))
    return summaries, cohorts
