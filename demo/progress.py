"""Live progress of quota admission, read from Workloads and ClusterQueues as kubectl returns them.

Pure: a snapshot (the wire dicts) becomes per-job states; two snapshots become the event lines
the demo prints; ClusterQueue status becomes a compact table. The words come from the objects'
own conditions (Kueue's reasons and messages), so what the demo says is what `kubectl describe`
would show.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from batchgate.quantity import parse_quantity

GPU = "nvidia.com/gpu"
PREEMPTOR_UID = re.compile(r"\(UID: (?P<uid>[^,)\s]+)")
PREEMPTION_REASONS = frozenset({"InClusterQueue", "InCohortReclamation", "InCohortFairSharing",
                                "InCohortReclaimWhileBorrowing"})


@dataclass(frozen=True)
class JobState:
    """Where one queued job stands, by its Workload's conditions."""

    job: str  # namespace/name of the job that owns the Workload
    state: str  # pending | admitted | evicting | finished
    cluster_queue: str
    reason: str  # the condition reason that put it there
    message: str
    uid: str


def _conditions(workload: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {c.get("type", ""): c for c in (workload.get("status") or {}).get("conditions") or []}


def _true(conditions: Mapping[str, Mapping[str, Any]], kind: str) -> bool:
    return conditions.get(kind, {}).get("status") == "True"


def job_name(workload: Mapping[str, Any]) -> str:
    """`namespace/name` of the owning job, or of the Workload itself when it has no owner."""
    meta = workload.get("metadata") or {}
    owners = meta.get("ownerReferences") or []
    owner = next((o for o in owners if o.get("controller")), owners[0] if owners else None)
    return f"{meta.get('namespace', '')}/{owner['name'] if owner else meta.get('name', '')}"


def job_state(workload: Mapping[str, Any]) -> JobState:
    conditions = _conditions(workload)
    admission = (workload.get("status") or {}).get("admission") or {}
    if _true(conditions, "Finished"):
        state, cause = "finished", conditions["Finished"]
    elif _true(conditions, "QuotaReserved") and _true(conditions, "Evicted"):
        state, cause = "evicting", conditions["Preempted"] if _true(conditions, "Preempted") else conditions["Evicted"]
    elif _true(conditions, "QuotaReserved"):
        state, cause = "admitted", conditions["QuotaReserved"]
    else:
        state = "pending"
        cause = conditions["Preempted"] if _true(conditions, "Preempted") else conditions.get("QuotaReserved", {})
    return JobState(job_name(workload), state, str(admission.get("clusterQueue", "")), str(cause.get("reason", "")),
                    str(cause.get("message", "")), str((workload.get("metadata") or {}).get("uid", "")))


def job_states(workloads: Sequence[Mapping[str, Any]]) -> dict[str, JobState]:
    return {s.job: s for s in map(job_state, workloads)}


def borrowed_gpus(cluster_queue: Mapping[str, Any]) -> str:
    """GPUs the ClusterQueue holds beyond its nominal quota (status.flavorsReservation), e.g. `16`."""
    return _gpu_reservation(cluster_queue, "borrowed")


def _gpu_reservation(cluster_queue: Mapping[str, Any], figure: str) -> str:
    """One figure (`total`, `borrowed`) of the GPUs in status.flavorsReservation, "0" when absent."""
    for flavor in (cluster_queue.get("status") or {}).get("flavorsReservation") or []:
        for resource in flavor.get("resources") or []:
            if resource.get("name") == GPU:
                return str(resource.get(figure, "0"))
    return "0"


def _preemptor(state: JobState, by_uid: Mapping[str, str]) -> str:
    match = PREEMPTOR_UID.search(state.message)
    return by_uid.get(match["uid"], "") if match else ""


def _line(was: JobState | None, now: JobState, by_uid: Mapping[str, str]) -> str:
    """What to say about one job given its previous state, or "" when nothing worth saying changed."""
    job = now.job
    if was is not None and (was.state, was.reason) == (now.state, now.reason):
        return ""
    if now.state == "admitted":
        return f"admitted   {job} into {now.cluster_queue}"
    if now.state == "evicting" or (now.state == "pending" and now.reason in PREEMPTION_REASONS):
        if was is not None and was.state == "evicting" and now.state == "pending":
            return f"requeued   {job}: its pods are gone, its quota is free, it waits again"
        by = _preemptor(now, by_uid)
        return f"preempted  {job}: {now.reason}{f' (to make room for {by})' if by else ''}"
    if now.state == "pending" and now.message and (was is None or was.state != "pending" or not was.message):
        return f"pending    {job}: {now.message}"
    if now.state == "finished":
        return f"finished   {job}: {now.reason}"
    return ""


def transitions(before: Mapping[str, JobState], after: Mapping[str, JobState],
                cluster_queues: Mapping[str, Mapping[str, Any]],
                queues_before: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """A line per job whose state changed, in the later snapshot's order, then one per ClusterQueue
    that admitted something while holding GPUs beyond its nominal quota, or whose borrowing grew
    since `queues_before` (a queue's status may trail its Workloads' by a poll)."""
    by_uid = {s.uid: s.job for s in [*before.values(), *after.values()]}
    lines: list[str] = []
    admitted_into: list[str] = []
    for job, now in after.items():
        line = _line(before.get(job), now, by_uid)
        if line:
            lines.append(line)
        if line and now.state == "admitted" and now.cluster_queue not in admitted_into:
            admitted_into.append(now.cluster_queue)
    grew = [name for name, queue in cluster_queues.items()
            if parse_quantity(borrowed_gpus(queue)) > parse_quantity(borrowed_gpus(queues_before.get(name, {})))]
    for name in [*admitted_into, *(n for n in grew if n not in admitted_into)]:
        borrowed = borrowed_gpus(cluster_queues.get(name, {}))
        if parse_quantity(borrowed) > 0:
            lines.append(f"borrowing  {name} now holds {borrowed} GPUs beyond its nominal quota, lent by its cohort")
    return lines


def _gpu_quota(cluster_queue: Mapping[str, Any]) -> str:
    for group in (cluster_queue.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for resource in flavor.get("resources") or []:
                if resource.get("name") == GPU:
                    return str(resource.get("nominalQuota", "0"))
    return "0"


def queue_table(cluster_queues: Sequence[Mapping[str, Any]]) -> list[str]:
    """CLUSTERQUEUE, GPUS (reserved/nominal), BORROWED, ADMITTED, PENDING: one row per queue."""
    rows = [("CLUSTERQUEUE", "GPUS", "BORROWED", "ADMITTED", "PENDING")]
    for cq in cluster_queues:
        status = cq.get("status") or {}
        rows.append((str((cq.get("metadata") or {}).get("name", "")), f"{_gpu_reservation(cq, 'total')}/{_gpu_quota(cq)}",
                     borrowed_gpus(cq), str(status.get("admittedWorkloads", 0)), str(status.get("pendingWorkloads", 0))))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
