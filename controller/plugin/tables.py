"""The rows of `kubectl batchgate list`, with kueuectl's columns, and kubectl's ways of printing them.

Cells are computed from the objects as read (raw wire dicts: a list shows what is there, even an
object the controller could not parse); the positions and reasons of pending Workloads come from
the `check` report, so the list, `why`, `check` and the dashboard agree.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import yaml

from batchgate import keys
from batchgate.api.conditions import condition_of, is_true
from batchgate.api.objects import metadata
from batchgate.clock import parse_time
from batchgate.durations import human_duration
from dashboard.views.queues import PendingRow

Obj = Mapping[str, Any]
# kubectl's tabwriter: a cell is at least 10 wide, columns 3 apart
MIN_WIDTH, PADDING = 10, 3


@dataclass(frozen=True)
class Table:
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    wide: int = 0  # how many trailing columns only `-o wide` shows


def render(table: Table, wide: bool, namespaces: Sequence[str] | None = None) -> str:
    """kubectl's table: upper-case headers, left-aligned, with a NAMESPACE column under `-A`."""
    keep = len(table.headers) - (0 if wide else table.wide)
    lines = [tuple(h.upper() for h in table.headers[:keep])] + [row[:keep] for row in table.rows]
    if namespaces is not None:
        lines = [("NAMESPACE", *lines[0])] + [(ns, *row) for ns, row in zip(namespaces, lines[1:])]
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    out = []
    for line in lines:
        cells = [cell.ljust(max(width + PADDING, MIN_WIDTH)) for cell, width in zip(line[:-1], widths)]
        out.append("".join(cells) + line[-1])
    return "\n".join(out) + "\n"


def as_list(objects: Sequence[Obj], output: str) -> str:
    """`-o json|yaml`: a v1 List, as kubectl prints several objects."""
    listing = {"apiVersion": "v1", "kind": "List", "items": [dict(o) for o in objects], "metadata": {"resourceVersion": ""}}
    return json.dumps(listing, indent=4) + "\n" if output == "json" else yaml.safe_dump(listing, sort_keys=False)


def as_object(obj: Obj, output: str) -> str:
    """`-o json|yaml` of one object, as kubectl prints one."""
    return json.dumps(dict(obj), indent=4) + "\n" if output == "json" else yaml.safe_dump(dict(obj), sort_keys=False)


def names(objects: Sequence[Obj], group: str) -> str:
    """`-o name`: `kind.group/name`, one a line."""
    return "".join(f"{str(o.get('kind', '')).lower()}.{group}/{metadata(o).get('name', '')}\n" for o in objects)


def age(obj: Obj, now: _dt.datetime) -> str:
    return _since(metadata(obj).get("creationTimestamp"), now)


def _since(timestamp: Any, now: _dt.datetime) -> str:
    try:
        return human_duration(now - parse_time(str(timestamp))) if timestamp else "<unknown>"
    except ValueError:
        return "<unknown>"


def _spec(obj: Obj) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _status(obj: Obj) -> Mapping[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, Mapping) else {}


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def workload_status(wl: Obj) -> str:
    """Kueue's workload.Status: the furthest of finished, admitted, quotaReserved, pending."""
    for condition, status in ((keys.COND_FINISHED, "finished"), (keys.COND_ADMITTED, "admitted"),
                              (keys.COND_QUOTA_RESERVED, "quotaReserved")):
        if is_true(wl, condition):
            return status
    return "pending"


def admitted_cluster_queue(wl: Obj) -> str:
    admission = _status(wl).get("admission")
    return _text(admission.get("clusterQueue")) if isinstance(admission, Mapping) else ""


def exec_time(wl: Obj, now: _dt.datetime) -> str:
    """How long it has run since admission (until it finished), as kueuectl's Exec Time."""
    admitted = condition_of(wl, keys.COND_ADMITTED)
    if admitted is None or admitted.status != "True" or admitted.last_transition_time is None:
        return ""
    finished = condition_of(wl, keys.COND_FINISHED)
    end = (finished.last_transition_time if finished is not None and finished.status == "True"
           and finished.last_transition_time is not None else now)
    return human_duration(end - admitted.last_transition_time)


def _owners(wl: Obj) -> list[Mapping[str, Any]]:
    refs = metadata(wl).get("ownerReferences")
    return [r for r in refs if isinstance(r, Mapping)] if isinstance(refs, list) else []


def _job_type(ref: Mapping[str, Any]) -> str:
    """`singular.group` of an owner, as kueuectl prints a Job Type (`job.batch`)."""
    api_version = _text(ref.get("apiVersion"))
    group = api_version.rpartition("/")[0]
    return ".".join(part for part in (_text(ref.get("kind")).lower(), group) if part)


def workload_table(workloads: Sequence[Obj], lq_cluster_queue: Mapping[tuple[str, str], str],
                   pending: Mapping[str, PendingRow], now: _dt.datetime) -> Table:
    """kueuectl's columns; `-o wide` adds the priority and why a pending one waits."""
    rows = []
    for wl in workloads:
        meta, spec = metadata(wl), _spec(wl)
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        lq = _text(spec.get("queueName"))
        cq = admitted_cluster_queue(wl) or lq_cluster_queue.get((_text(meta.get("namespace")), lq), "")
        waiting = pending.get(key)
        rows.append((_text(meta.get("name")), ", ".join(sorted({_job_type(r) for r in _owners(wl)})),
                     ", ".join(sorted({_text(r.get("name")) for r in _owners(wl)})), lq, cq,
                     workload_status(wl).upper(), str(waiting.position) if waiting else "", exec_time(wl, now),
                     age(wl, now), _text(spec.get("priority")), waiting.reason if waiting else ""))
    return Table(("Name", "Job Type", "Job Name", "LocalQueue", "ClusterQueue", "Status", "Position in Queue",
                  "Exec Time", "Age", "Priority", "Reason"), tuple(rows), wide=2)


def local_queue_table(local_queues: Sequence[Obj], now: _dt.datetime) -> Table:
    rows = tuple((_text(metadata(lq).get("name")), _text(_spec(lq).get("clusterQueue")),
                  _text(_status(lq).get("pendingWorkloads", 0)), _text(_status(lq).get("admittedWorkloads", 0)),
                  age(lq, now), _text(_spec(lq).get("stopPolicy") or "None")) for lq in local_queues)
    return Table(("Name", "ClusterQueue", "Pending Workloads", "Admitted Workloads", "Age", "Stop Policy"), rows, wide=1)


def cluster_queue_active(cq: Obj) -> bool:
    return is_true(cq, "Active")


def cluster_queue_table(cluster_queues: Sequence[Obj], now: _dt.datetime) -> Table:
    rows = tuple((_text(metadata(cq).get("name")), _text(_spec(cq).get("cohort")),
                  _text(_status(cq).get("pendingWorkloads", 0)), _text(_status(cq).get("admittedWorkloads", 0)),
                  str(cluster_queue_active(cq)).lower(), age(cq, now), _text(_spec(cq).get("stopPolicy") or "None"))
                 for cq in cluster_queues)
    return Table(("Name", "Cohort", "Pending Workloads", "Admitted Workloads", "Active", "Age", "Stop Policy"),
                 rows, wide=1)


def resource_flavor_table(flavors: Sequence[Obj], now: _dt.datetime) -> Table:
    rows = []
    for rf in flavors:
        labels = _spec(rf).get("nodeLabels")
        pairs = sorted(f"{k}={v}" for k, v in labels.items()) if isinstance(labels, Mapping) else []
        rows.append((_text(metadata(rf).get("name")), ", ".join(pairs), age(rf, now)))
    return Table(("Name", "Node Labels", "Age"), tuple(rows))


def filter_workloads(workloads: Sequence[Obj], local_queue: str, cluster_queue: str,
                     statuses: frozenset[str]) -> list[Obj]:
    """kueuectl's filters: `--clusterqueue` matches the ClusterQueue a Workload is admitted to."""
    return [wl for wl in workloads
            if (not local_queue or _text(_spec(wl).get("queueName")) == local_queue)
            and (not cluster_queue or admitted_cluster_queue(wl) == cluster_queue)
            and (not statuses or "all" in statuses or workload_status(wl).lower() in statuses)]
