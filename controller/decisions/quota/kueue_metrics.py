"""The figures behind Kueue's Prometheus metrics, computed from the quota state.

MLBatch's Grafana dashboards and alerts read Kueue v0.10's metric names; these functions give the
values those gauges and histograms carry, in Kueue's units (CPU in cores, other resources in
whole units, times in seconds), so the adapter only sets them. One ClusterQueue's figures come
from the same state the admission cycle reads; nothing here touches Prometheus.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Mapping

from batchgate import keys
from batchgate.api.conditions import condition_of
from batchgate.api.objects import metadata
from batchgate.clock import parse_time
from controller.decisions.quota.cycle import Effects
from controller.state.quota_book import FlavorResource, UsageOverlay, to_units
from controller.state.quota_state import QuotaState

ACTIVE, PENDING = "active", "pending"
CQ_STATUSES = (PENDING, ACTIVE, "terminating")  # Kueue's CQStatuses; batchgate deletes queues at once
SUCCESS, INADMISSIBLE = "success", "inadmissible"  # Kueue's AdmissionResult values


def wait_buckets(count: int) -> tuple[float, ...]:
    """Kueue's generateExponentialBuckets: 1, then 2.5 doubling, `count` buckets in all."""
    return (1.0, *(2.5 * 2 ** i for i in range(count - 1)))


@dataclass(frozen=True)
class ResourceFigures:
    """One flavor and resource of a ClusterQueue: its quota and what is held (Kueue's floats)."""

    nominal: float
    borrowing_limit: float  # 0 when unlimited, as Kueue reports a nil limit
    lending_limit: float
    reservation: float
    usage: float


@dataclass(frozen=True)
class ClusterQueueFigures:
    name: str
    cohort: str
    status: str  # active | pending (Kueue's cluster_queue_status)
    pending_active: int
    pending_inadmissible: int
    reserving: int
    admitted: int
    resources: Mapping[FlavorResource, ResourceFigures]
    weighted_share: int | None = None  # fair sharing only, as Kueue reports it


def cluster_queue_figures(state: QuotaState, name: str) -> ClusterQueueFigures:
    """What Kueue's per-ClusterQueue gauges say for `name` (which must exist in `state`)."""
    cq = state.cluster_queues[name]
    held = state.admitted_by_cq.get(name, {})
    used = state.book.usage.get(name, {})
    resources: dict[FlavorResource, ResourceFigures] = {}
    for rg in cq.resource_groups:
        for fq in rg.flavors:
            for rq in fq.resources:
                fr = (fq.name, rq.name)
                quota = state.book.quota(name, fr)
                total = as_float(rq.name, used.get(fr, 0))
                # No admission checks: reserved quota is admitted at once, so usage equals reservation.
                resources[fr] = ResourceFigures(
                    nominal=as_float(rq.name, quota.nominal),
                    borrowing_limit=as_float(rq.name, quota.borrowing_limit or 0),
                    lending_limit=as_float(rq.name, quota.lending_limit or 0),
                    reservation=total, usage=total)
    queue = state.pending.queues.get(name)
    return ClusterQueueFigures(
        name=name, cohort=cq.cohort or "",
        status=ACTIVE if state.inactive_reason(name) is None else PENDING,
        pending_active=queue.active_count if queue else 0,
        pending_inadmissible=queue.parked_count if queue else 0,
        reserving=len(held), admitted=len(held), resources=resources,
        weighted_share=UsageOverlay(state.book).dominant_resource_share(name) if state.fair_sharing.enable else None)


def as_float(resource: str, units: int) -> float:
    """Integer quota units back to Kueue's float view of the quantity (milli-CPU -> cores)."""
    return units / to_units(resource, Decimal(1))


def attempt_result(effects: Effects) -> str | None:
    """Kueue counts one admission attempt per cycle that had heads: a success when anything was
    admitted. None for a cycle that looked at no head (Kueue returns before counting)."""
    if effects.admitted:
        return SUCCESS
    return INADMISSIBLE if effects.preempted or effects.requeued else None


def preemptions(state: QuotaState, effects: Effects) -> dict[tuple[str, str], int]:
    """kueue_preempted_workloads_total increments: (preempting ClusterQueue, reason) -> count."""
    out: dict[tuple[str, str], int] = {}
    for preemption in effects.preempted:
        preempting = (state.cluster_queue_of(preemption.preemptor) if preemption.preemptor in state.workloads
                      else None) or ""
        key = (preempting, preemption.target.reason)
        out[key] = out.get(key, 0) + 1
    return out


def queued_wait_seconds(workload: Mapping[str, Any], now: _dt.datetime) -> float:
    """Kueue v0.10's QueuedWaitTime: since the Requeued condition last changed, else since creation.
    Read from the Workload as observed, these two fields only: each admission asks, and parsing
    the whole Workload cost more than the rest of recording its admission."""
    requeued = condition_of(workload, keys.COND_REQUEUED)
    since = requeued.last_transition_time if requeued is not None else None
    if since is None:
        created = metadata(workload).get("creationTimestamp")
        since = parse_time(created) if isinstance(created, str) else None
    return max(0.0, (now - since).total_seconds()) if since is not None else 0.0
