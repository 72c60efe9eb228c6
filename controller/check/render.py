"""The report as text: kubectl-style aligned tables, or one JSON document."""

from __future__ import annotations

import json
from typing import Sequence

from controller.check.capacity import CapacityRow
from controller.check.report import Report
from controller.state.quota_book import format_units

NONE = "<none>"
GAP = "   "


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell, three spaces apart, as `kubectl get` prints them."""
    cells = [list(headers)] + [[c if c != "" else NONE for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [GAP.join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines)


def _limit(resource: str, value: int | None) -> str:
    return "-" if value is None else format_units(resource, value)


def _capacity_table(rows: Sequence[CapacityRow], with_flavor: bool) -> str:
    headers = (["FLAVOR"] if with_flavor else []) + ["RESOURCE", "NODES", "CAPACITY", "NOT-COUNTED", "NOMINAL",
                                                      "USAGE", "STATUS"]
    body = []
    for row in rows:
        r = row.resource
        status = "OVER-COMMITTED" if row.over_committed else "ok"
        body.append(([row.flavor or ""] if with_flavor else []) + [
            r, str(row.nodes), format_units(r, row.capacity), format_units(r, row.not_counted),
            format_units(r, row.nominal), format_units(r, row.usage), status])
    return table(headers, body)


def render_table(report: Report) -> str:
    counted = sum(v.counted for v in report.nodes)
    out = [f"CAPACITY: {counted} of {len(report.nodes)} node(s) counted as schedulable",
           _capacity_table(report.capacity, False) if report.capacity else "(no ClusterQueue quotas)"]
    if any(row.nodes != counted for row in report.flavor_capacity) or len(
            {row.flavor for row in report.flavor_capacity}) > 1:
        out += ["", "CAPACITY PER FLAVOR", _capacity_table(report.flavor_capacity, True)]
    out += ["", "CLUSTER QUEUES"]
    if report.cluster_queues:
        out.append(table(["NAME", "COHORT", "STATUS", "LOCALQUEUES", "PENDING", "RESERVING", "ADMITTED"], [
            [s.name, s.cohort, "Active" if s.inactive is None else f"Inactive: {s.inactive}", str(s.local_queues),
             str(s.pending), str(s.reserving), str(s.admitted)] for s in report.cluster_queues]))
        out += ["", "QUOTA AND USAGE"]
        out.append(table(["CLUSTERQUEUE", "FLAVOR", "RESOURCE", "NOMINAL", "BORROWING-LIMIT", "LENDING-LIMIT",
                          "USAGE", "BORROWED", "UNUSED-LENDABLE", "AVAILABLE"], [
            [s.name, q.flavor, q.resource, format_units(q.resource, q.nominal),
             _limit(q.resource, q.borrowing_limit), _limit(q.resource, q.lending_limit),
             format_units(q.resource, q.usage), format_units(q.resource, q.borrowed),
             format_units(q.resource, q.unused_lendable), format_units(q.resource, q.available)]
            for s in report.cluster_queues for q in s.rows]))
    else:
        out.append("(none)")
    if report.cohorts:
        out += ["", "COHORTS"]
        out.append(table(["COHORT", "MEMBERS", "FLAVOR", "RESOURCE", "NOMINAL", "USAGE", "BORROWED", "LENDABLE-POOL",
                          "POOL-FREE"], [
            [c.name, ",".join(c.members), r.flavor, r.resource, format_units(r.resource, r.nominal),
             format_units(r.resource, r.usage), format_units(r.resource, r.borrowed),
             format_units(r.resource, r.pool), format_units(r.resource, max(0, r.pool - r.pool_used))]
            for c in report.cohorts for r in c.rows]))
    out += ["", f"PENDING WORKLOADS ({len(report.pending)})"]
    if report.pending:
        out.append(table(["WORKLOAD", "CLUSTERQUEUE", "PRIORITY", "REQUESTS", "REASON"], [
            [p.key.namespaced_name, p.cluster_queue or "", str(p.priority),
             ",".join(f"{r}={format_units(r, v)}" for r, v in p.requests),
             p.reason + (" (computed)" if p.source == "computed" else "")] for p in report.pending]))
    out += ["", "FINDINGS"]
    if report.findings:
        out.append(table(["SEVERITY", "CODE", "SUBJECT", "REASON"],
                         [[f.severity, f.code, f.subject, f.reason] for f in report.findings]))
    counts = {sev: sum(f.severity == sev for f in report.findings) for sev in ("error", "warning", "info")}
    out += ["", f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info"]
    return "\n".join(out)


def render_json(report: Report) -> str:
    return json.dumps(report.to_json(), indent=2)
