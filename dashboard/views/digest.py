"""One digest per observed state: every page's data, computed once and shared by all viewers.

The heavy part is the `batchgate check` report (quota arithmetic and pending reasons over every
Workload), kept up to date between change batches (`Digests`); pages only slice the digest, so a
viewer's request costs no API call and no recount.
"""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from dataclasses import dataclass

from controller.check.findings import Finding
from controller.check.inventory import KINDS as CHECK_KINDS
from controller.check.view import CheckView
from controller.state.quota_book import UsageOverlay
from controller.state.quota_state import FairSharing
from dashboard.views.appwrappers import AppWrapperDetail, AppWrapperRow, appwrapper_detail, appwrapper_rows
from dashboard.views.audit import AuditView, audit_view
from dashboard.views.nodes import NodeRow, node_rows
from dashboard.views.observed import Observed
from dashboard.views.queues import (
    ClusterQueueCard, CohortCard, LocalQueueRow, PendingRow, cluster_queue_cards, cohort_cards, local_queue_rows,
    pending_rows,
)

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


class Digests:
    """Digest after digest of one changing cluster: the check's view is kept between them
    (`CheckView`), so a change batch costs what changed, not a check over everything."""

    def __init__(self) -> None:
        self.view = CheckView()

    def next(self, observed: Observed, now: _dt.datetime) -> Digest:
        fair = FairSharing(enable=observed.fair_sharing)
        if fair != self.view.fair_sharing:
            self.view = CheckView(fair)
        self.view.update((kind, obj) for kind in CHECK_KINDS for obj in observed.of(kind))
        return _digest(observed, self.view, now)


def digest(observed: Observed, now: _dt.datetime) -> Digest:
    """One digest from scratch: the first of a fresh `Digests`."""
    return Digests().next(observed, now)


def _digest(observed: Observed, view: CheckView, now: _dt.datetime) -> Digest:
    inventory = view.inventory
    report = view.report(now)
    shares = None
    if observed.fair_sharing:
        overlay = UsageOverlay(view.state.book)
        shares = {name: (str(cq.fair_weight), overlay.dominant_resource_share(name))
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
