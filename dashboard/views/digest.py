"""One digest per observed state: every page's data, computed once and shared by all viewers.

The heavy part is the `batchgate check` report (quota arithmetic and pending reasons over every
Workload); pages only slice the digest, so a viewer's request costs no API call and no recount.
"""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping

from controller.check.findings import Finding
from controller.check.inventory import build_inventory
from controller.check.queues import build_state
from controller.check.report import check
from controller.state.quota_book import UsageOverlay
from controller.state.quota_state import FairSharing
from dashboard.views.appwrappers import AppWrapperDetail, AppWrapperRow, appwrapper_detail, appwrapper_rows
from dashboard.views.audit import AuditView, audit_view
from dashboard.views.nodes import NodeRow, node_rows
from dashboard.views.observed import Obj, Observed
from dashboard.views.queues import (
    ClusterQueueCard, CohortCard, LocalQueueRow, PendingRow, cluster_queue_cards, cohort_cards, local_queue_rows,
    pending_rows,
)

CHECK_KINDS = ("Node", "Namespace", "ResourceFlavor", "WorkloadPriorityClass", "ClusterQueue", "LocalQueue", "Workload")


@dataclass(frozen=True)
class Overview:
    cluster_queues: int
    pending: int
    admitted: int
    appwrapper_phases: tuple[tuple[str, int], ...]
    nodes: int
    nodes_not_schedulable: int
    gpus: int
    gpus_used: int
    errors: int
    warnings: int


@dataclass(frozen=True)
class Digest:
    observed: Observed
    overview: Overview
    cluster_queues: tuple[ClusterQueueCard, ...]
    cohorts: tuple[CohortCard, ...]
    local_queues: tuple[LocalQueueRow, ...]
    pending: tuple[PendingRow, ...]
    appwrappers: tuple[AppWrapperRow, ...]
    nodes: tuple[NodeRow, ...]
    findings: tuple[Finding, ...]
    audit: AuditView | None

    def appwrapper(self, namespace: str, name: str) -> AppWrapperDetail | None:
        """Built on request: only the AppWrapper a viewer opens needs its pods and Events matched."""
        for obj in self.observed.of("AppWrapper"):
            meta = obj.get("metadata") or {}
            if meta.get("namespace") == namespace and meta.get("name") == name:
                return appwrapper_detail(obj, self.observed.of("Pod"), self.observed.of("Event"))
        return None

    def pending_in(self, local_queue: str | None) -> tuple[PendingRow, ...]:
        return self.pending if not local_queue else tuple(p for p in self.pending if p.local_queue == local_queue)


def _with_kind(kind: str, objects: tuple[Obj, ...]) -> list[Mapping[str, Any]]:
    """Listed and watched objects carry no kind; the check's inventory sorts by it."""
    return [obj if obj.get("kind") == kind else {**obj, "kind": kind} for obj in objects]


def digest(observed: Observed, now: _dt.datetime) -> Digest:
    inventory = build_inventory(o for kind in CHECK_KINDS for o in _with_kind(kind, observed.of(kind)))
    fair = FairSharing(enable=observed.fair_sharing)
    report = check(inventory, now, fair)
    shares = None
    if observed.fair_sharing:
        view = UsageOverlay(build_state(inventory, fair).book)
        shares = {name: (str(cq.fair_weight), view.dominant_resource_share(name))
                  for name, cq in inventory.cluster_queues.items()}
    pending = pending_rows(report.pending)
    local_queues = local_queue_rows({f"{ns}/{name}": lq.cluster_queue for (ns, name), lq in inventory.local_queues.items()},
                                    pending)
    aws = appwrapper_rows(observed.of("AppWrapper"))
    nodes = node_rows(inventory.nodes.values(), observed.of("Pod"))
    cards = cluster_queue_cards(report, shares)
    overview = Overview(
        len(cards), len(pending), sum(c.admitted for c in cards),
        tuple(sorted(Counter(a.phase for a in aws).items())),
        len(nodes), sum(n.condition != "schedulable" for n in nodes),
        sum(n.gpus for n in nodes), sum(n.gpus_used for n in nodes),
        sum(f.severity == "error" for f in report.findings), sum(f.severity == "warning" for f in report.findings))
    audit = audit_view(observed.audit_lines) if observed.audit_lines is not None else None
    return Digest(observed, overview, cards, cohort_cards(report), local_queues, pending, aws, nodes,
                  report.findings, audit)



@dataclass(frozen=True)
class Published:
    """A digest and its version: viewers compare versions to know whether to refresh."""

    version: int
    digest: Digest
