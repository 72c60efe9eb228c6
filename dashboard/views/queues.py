"""Cohorts, ClusterQueues, LocalQueues and pending Workloads, from the same report as `batchgate check`.

Nothing here computes quota or reasons: `controller.check.report.check` does, so the dashboard
and the checker always say the same thing about a queue and about why a Workload waits.
"""

from __future__ import annotations

import functools

from dataclasses import dataclass

from controller.check.pending import PendingWorkload
from controller.check.queues import ClusterQueueSummary, QuotaRow
from controller.check.report import Report
from controller.state.quota_book import format_units


@dataclass(frozen=True)
class QuotaBar:
    """One flavor/resource of a ClusterQueue, as numbers and as shares of the bar's scale (0-100)."""

    flavor: str
    resource: str
    nominal: str
    used: str
    borrowed: str
    lendable: str  # its unused quota within lendingLimit, offered to the cohort
    available: str
    within_pct: int  # usage up to nominal
    borrowed_pct: int  # usage above nominal
    over: bool  # usage above nominal (borrowing)


def quota_bar(row: QuotaRow) -> QuotaBar:
    scale = max(row.nominal, row.usage, 1)
    within = min(row.usage, row.nominal)

    def fmt(units: int) -> str:
        return format_units(row.resource, units)

    return QuotaBar(row.flavor, row.resource, fmt(row.nominal), fmt(row.usage), fmt(row.borrowed),
                    fmt(row.unused_lendable), fmt(row.available), within * 100 // scale,
                    (row.usage - within) * 100 // scale, row.usage > row.nominal)


@dataclass(frozen=True)
class ClusterQueueCard:
    name: str
    cohort: str
    status: str  # "active" or why it admits nothing
    local_queues: int
    pending: int
    reserving: int
    admitted: int
    weight: str | None  # fair-sharing weight and share, None when fair sharing is off
    share: int | None  # dominant resource share per 1000, as Kueue reports weightedShare
    bars: tuple[QuotaBar, ...]


def cluster_queue_cards(report: Report, shares: dict[str, tuple[str, int]] | None) -> tuple[ClusterQueueCard, ...]:
    """`shares` maps a ClusterQueue to (weight, share) when fair sharing is on."""
    return tuple(_card(s, None if shares is None else shares.get(s.name)) for s in report.cluster_queues)


def _card(s: ClusterQueueSummary, fair: tuple[str, int] | None) -> ClusterQueueCard:
    return ClusterQueueCard(s.name, s.cohort, "active" if s.inactive is None else f"inactive: {s.inactive}",
                            s.local_queues, s.pending, s.reserving, s.admitted,
                            None if fair is None else fair[0], None if fair is None else fair[1],
                            tuple(quota_bar(r) for r in s.rows))


@dataclass(frozen=True)
class CohortCard:
    name: str
    members: tuple[str, ...]
    rows: tuple[tuple[str, str, str, str, str, str], ...]  # flavor, resource, nominal, used, borrowed, pool free


def cohort_cards(report: Report) -> tuple[CohortCard, ...]:
    out = []
    for c in report.cohorts:
        rows = tuple((r.flavor, r.resource, format_units(r.resource, r.nominal), format_units(r.resource, r.usage),
                      format_units(r.resource, r.borrowed), format_units(r.resource, max(0, r.pool - r.pool_used)))
                     for r in c.rows)
        out.append(CohortCard(c.name, c.members, rows))
    return tuple(out)


@dataclass(frozen=True)
class PendingRow:
    position: int  # 1 = the next one its ClusterQueue tries
    name: str  # namespace/name
    local_queue: str  # namespace/name
    cluster_queue: str
    priority: int
    requests: str
    reason: str
    reason_source: str  # "status" (the controller's word) or "computed" (what the next cycle would say)


def pending_rows(pending: tuple[PendingWorkload, ...]) -> tuple[PendingRow, ...]:
    """In admission order: `check` sorts per ClusterQueue as its queue does; positions count per queue."""
    out = []
    position: dict[str, int] = {}
    for p in pending:
        cq = p.cluster_queue or ""
        position[cq] = position.get(cq, 0) + 1
        namespace = p.key.namespace
        out.append(PendingRow(position[cq], p.key.namespaced_name, f"{namespace}/{p.local_queue}", cq or "(none)", p.priority,
                              _requests_text(p.requests), p.reason, p.source))
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def _requests_text(requests: tuple[tuple[str, int], ...]) -> str:
    """Formatted once per distinct request: thousands of pending Workloads share a few shapes."""
    return ", ".join(f"{r}={format_units(r, v)}" for r, v in requests if v)


@dataclass(frozen=True)
class LocalQueueRow:
    name: str  # namespace/name
    cluster_queue: str
    pending: int
    exists: bool  # False: pending Workloads name it but no such LocalQueue exists


def local_queue_rows(local_queues: dict[str, str], pending: tuple[PendingRow, ...]) -> tuple[LocalQueueRow, ...]:
    """`local_queues` maps namespace/name to its ClusterQueue."""
    counts: dict[str, int] = {}
    for p in pending:
        counts[p.local_queue] = counts.get(p.local_queue, 0) + 1
    names = sorted(set(local_queues) | set(counts))
    return tuple(LocalQueueRow(n, local_queues.get(n, ""), counts.get(n, 0), n in local_queues) for n in names)
