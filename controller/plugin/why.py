"""`why KIND/NAME`: one Workload's queue, position, why it waits and what would let it in.

Nothing here decides anything new: the reason and position are the `check` report's (the same
the dashboard shows), the blockers are the report's findings about the Workload and its queues,
and the quota shortfall compares its requests with what the report says its ClusterQueue has free.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping

from controller.check.findings import STOPPED_QUEUE
from controller.check.pending import PendingWorkload
from controller.check.report import Report
from controller.state.quota_book import format_units
from dashboard.views.queues import pending_rows


@dataclass(frozen=True)
class Why:
    workload: str  # namespace/name
    owner: str  # "job/train" when asked about the job, "" when asked about the Workload
    local_queue: str  # namespace/name
    cluster_queue: str  # "" when its LocalQueue names none that exists
    status: str  # PENDING, QUOTARESERVED, ADMITTED, FINISHED
    position: int | None  # in its ClusterQueue's admission order, 1 = next; None unless pending
    reason: str  # why it waits, "" unless pending
    reason_source: str  # "status" (the controller's word) or "computed" (what the next cycle would say)
    let_in: tuple[str, ...]  # what would let it in

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["let_in"] = list(self.let_in)
        return {"".join(w.title() if i else w for i, w in enumerate(k.split("_"))): v for k, v in out.items()}


def why(report: Report, key: str, spec: Mapping[str, Any], status: str, cluster_queue: str, owner: str = "",
        no_controller: str = "") -> Why:
    """`spec` is the Workload's spec as read; `status` its kueue status, upper case; `cluster_queue`
    the one it is admitted to or its LocalQueue points at; `no_controller` why no batchgate
    controller admits anything now ("" when one runs or it cannot be told)."""
    namespace = key.split("/", 1)[0]
    lq = str(spec.get("queueName") or "")
    rows = {row.name: (row, p) for row, p in zip(pending_rows(report.pending), report.pending)}
    row, pending = rows.get(key, (None, None))
    if status in ("ADMITTED", "FINISHED", "QUOTARESERVED"):
        return Why(key, owner, f"{namespace}/{lq}", cluster_queue, status, None, "", "",
                   (f"nothing: it is {status.lower()}",))
    let_in = [f"a running batchgate controller: {no_controller}"] if no_controller else []
    subjects = {f"Workload {key}", f"LocalQueue {namespace}/{lq}", f"ClusterQueue {cluster_queue}"}
    let_in += [f"{f.subject}: {f.reason}" for f in report.findings
               if f.subject in subjects and f.severity in ("error", "warning")]
    if spec.get("active") is False:
        let_in.append(f"it is stopped (spec.active: false): kubectl batchgate resume workload {key.split('/', 1)[1]} "
                      f"-n {namespace}")
    let_in += _resume_queues(report, namespace, lq, cluster_queue)
    if pending is not None:
        let_in += _shortfall(report, pending)
    if row is not None and row.position > 1:
        ahead = row.position - 1
        let_in.append(f"{ahead} workload{'s' if ahead > 1 else ''} ahead of it in ClusterQueue {cluster_queue} "
                      f"go first (higher priority, or queued earlier)")
    return Why(key, owner, f"{namespace}/{lq}", cluster_queue, status, row.position if row else None,
               row.reason if row else "", row.reason_source if row else "", tuple(let_in))


def _resume_queues(report: Report, namespace: str, lq: str, cluster_queue: str) -> list[str]:
    out = []
    for f in report.findings:
        if f.code == STOPPED_QUEUE and f.subject == f"LocalQueue {namespace}/{lq}":
            out.append(f"resume its LocalQueue: kubectl batchgate resume localqueue {lq} -n {namespace}")
        elif f.code == STOPPED_QUEUE and f.subject == f"ClusterQueue {cluster_queue}":
            out.append(f"resume its ClusterQueue: kubectl batchgate resume clusterqueue {cluster_queue}")
    return out


def _shortfall(report: Report, pending: PendingWorkload) -> list[str]:
    """Each resource it asks more of than its ClusterQueue can give now (its best flavor)."""
    summary = next((s for s in report.cluster_queues if s.name == pending.cluster_queue), None)
    if summary is None:
        return []
    out = []
    for resource, wanted in pending.requests:
        rows = [r for r in summary.rows if r.resource == resource]
        best = max(rows, key=lambda r: r.available, default=None)
        if wanted and best is not None and wanted > best.available:
            out.append(f"{format_units(resource, wanted - best.available)} more {resource} free in ClusterQueue "
                       f"{summary.name} (it asks {format_units(resource, wanted)}, flavor {best.flavor} has "
                       f"{format_units(resource, best.available)}): as admitted workloads finish, or with more quota")
    return out


def render_text(w: Why) -> str:
    lines = [f"Workload:      {w.workload}" + (f" (of {w.owner})" if w.owner else ""),
             f"LocalQueue:    {w.local_queue}",
             f"ClusterQueue:  {w.cluster_queue or '(none)'}"]
    if w.position is not None:
        lines.append(f"Status:        {w.status}, position {w.position} in ClusterQueue {w.cluster_queue}")
    else:
        lines.append(f"Status:        {w.status}")
    if w.reason:
        source = "the controller's word" if w.reason_source == "status" else "computed by the admission code"
        lines.append(f"Waits because: {w.reason} ({source})")
    lines.append("What would let it in:")
    lines += [f"  - {item}" for item in w.let_in] or ["  - nothing found in the quotas or queues: "
                                                     "is the batchgate controller running?"]
    return "\n".join(lines) + "\n"
