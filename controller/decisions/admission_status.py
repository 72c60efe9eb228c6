"""The status writes that carry admission decisions to the API, as minimal merge patches.

Each builder reads the Workload as last observed and returns None when the object already says
what the decision says, so a repeated cycle (or a retry after a conflict) writes nothing twice.
Condition types, reasons and messages are Kueue's (research/kueue.md 1.4).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Mapping

from batchgate import keys
from batchgate.clock import format_time
from controller.decisions.job_integration import condition, is_true, merge_conditions
from controller.decisions.outcomes import Admit, Evict, PreemptionTarget
from controller.decisions.preemption import preempted_message
from controller.state.quota_book import format_units
from controller.state.quota_state import QuotaState, WorkloadInfo

Patch = dict[str, Any]


def _cond(type_: str, status: str, reason: str, message: str, now: _dt.datetime) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": format_time(now)}


def admission_patch(workload: Mapping[str, Any], admit: Admit, info: WorkloadInfo, now: _dt.datetime) -> Patch | None:
    """status.admission plus QuotaReserved/Admitted; a past eviction is marked as past."""
    if (workload.get("status") or {}).get("admission") and is_true(workload, keys.COND_QUOTA_RESERVED):
        return None
    assignments = []
    for ps in info.pod_sets:
        flavors = dict(admit.assignment.flavors.get(ps.name, {}))
        usage = {r: format_units(r, units) for r, units in sorted(ps.total.items()) if r in flavors}
        assignments.append({"name": ps.name, "flavors": flavors, "resourceUsage": usage, "count": ps.count})
    updates = [
        _cond(keys.COND_QUOTA_RESERVED, "True", "QuotaReserved", f"Quota reserved in ClusterQueue {admit.cluster_queue}", now),
        _cond(keys.COND_ADMITTED, "True", "Admitted", "The workload is admitted", now),
    ]
    for type_ in (keys.COND_EVICTED, keys.COND_PREEMPTED):
        old = condition(workload, type_)
        if old is not None and old.get("status") == "True":
            updates.append(_cond(type_, "False", "QuotaReserved", f"Previously: {old.get('message', '')}", now))
    return {"status": {"admission": {"clusterQueue": admit.cluster_queue, "podSetAssignments": assignments},
                       "conditions": merge_conditions(workload, updates)}}


def preemption_patch(workload: Mapping[str, Any], target: PreemptionTarget, preemptor_uid: str,
                     now: _dt.datetime) -> Patch | None:
    if is_true(workload, keys.COND_EVICTED) or not is_true(workload, keys.COND_QUOTA_RESERVED):
        return None
    message = preempted_message(preemptor_uid, target.reason)
    return {"status": {"conditions": merge_conditions(workload, [
        _cond(keys.COND_EVICTED, "True", keys.EVICTED_BY_PREEMPTION, message, now),
        _cond(keys.COND_PREEMPTED, "True", target.reason, message, now),
    ])}}


def stop_eviction_patch(workload: Mapping[str, Any], evict: Evict, now: _dt.datetime) -> Patch | None:
    if is_true(workload, keys.COND_EVICTED) or not is_true(workload, keys.COND_QUOTA_RESERVED):
        return None
    return {"status": {"conditions": merge_conditions(workload, [
        _cond(keys.COND_EVICTED, "True", evict.reason, evict.message, now)])}}


def pending_patch(workload: Mapping[str, Any], message: str, now: _dt.datetime) -> Patch | None:
    """QuotaReserved=False, reason Pending, with the reason the workload waits (v0.10 wording)."""
    if is_true(workload, keys.COND_QUOTA_RESERVED) or is_true(workload, keys.COND_FINISHED):
        return None
    old = condition(workload, keys.COND_QUOTA_RESERVED)
    if old is not None and old.get("status") == "False" and old.get("message") == message:
        return None
    return {"status": {"conditions": merge_conditions(workload, [
        _cond(keys.COND_QUOTA_RESERVED, "False", "Pending", message, now)])}}


def release_patch(workload: Mapping[str, Any], now: _dt.datetime) -> Patch | None:
    """An evicted Workload without pods to wait for gives its quota back at once."""
    if not (workload.get("status") or {}).get("admission"):
        return None
    evicted = condition(workload, keys.COND_EVICTED) or {}
    return {"status": {"admission": None, "conditions": merge_conditions(workload, [
        _cond(keys.COND_QUOTA_RESERVED, "False", "Pending", evicted.get("message") or "The workload was evicted", now),
        _cond(keys.COND_ADMITTED, "False", "NoReservation", "The workload has no reservation", now),
        _cond(keys.COND_REQUEUED, "True" if evicted.get("reason") == keys.EVICTED_BY_PREEMPTION else "False",
              evicted.get("reason") or "Evicted", evicted.get("message") or "", now),
    ])}}


def cluster_queue_status(state: QuotaState, name: str) -> dict[str, Any]:
    """Counts and flavor usage of one ClusterQueue, in the shape of its `status`."""
    queue = state.pending.queues.get(name)
    held = state.admitted_by_cq.get(name, {})
    reserving = len(held)
    admitted = sum(1 for h in held.values() if not h.evicted)
    pending = len(queue.active) + len(queue.inadmissible) if queue else 0
    usage = state.book.usage.get(name, {})
    quotas = state.book.quotas.get(name, {})
    flavors: dict[str, list[dict[str, Any]]] = {}
    for (flavor, resource), quota in sorted(quotas.items()):
        used = usage.get((flavor, resource), 0)
        flavors.setdefault(flavor, []).append({
            "name": resource, "total": format_units(resource, used),
            "borrowed": format_units(resource, max(0, used - quota.nominal))})
    by_flavor = [{"name": f, "resources": r} for f, r in flavors.items()]
    cq = state.cluster_queues.get(name)
    inactive = state.inactive_reason(name) if cq else None
    active = {"type": keys.COND_ACTIVE, "status": "False" if inactive else "True",
              "reason": ("Stopped" if cq and cq.stop_policy != "None" else "FlavorNotFound") if inactive else "Ready",
              "message": inactive or "Can admit new workloads"}
    return {"pendingWorkloads": pending, "reservingWorkloads": reserving, "admittedWorkloads": admitted,
            "flavorsReservation": by_flavor, "flavorsUsage": by_flavor, "conditions": [active]}


def cluster_queue_patch(observed: Mapping[str, Any], wanted: Mapping[str, Any], now: _dt.datetime) -> Patch | None:
    """Only the changed fields; the Active condition keeps its transition time unless it flips."""
    status = observed.get("status") or {}
    patch: dict[str, Any] = {k: v for k, v in wanted.items() if k != "conditions" and status.get(k) != v}
    (active,) = wanted["conditions"]
    old = condition(observed, keys.COND_ACTIVE)
    if old is None or any(old.get(k) != active[k] for k in ("status", "reason", "message")):
        patch["conditions"] = merge_conditions(observed, [{**active, "lastTransitionTime": format_time(now)}])
    return {"status": patch} if patch else None


def local_queue_statuses(state: QuotaState) -> dict[tuple[str, str], dict[str, Any]]:
    """Counts and flavor usage per LocalQueue, in one pass over the workloads."""
    counts: dict[tuple[str, str], dict[str, int]] = {key: {"pending": 0, "reserving": 0, "admitted": 0}
                                                     for key in state.local_queues}
    usage: dict[tuple[str, str], dict[tuple[str, str], int]] = {key: {} for key in state.local_queues}
    for key, info in state.workloads.items():
        lq = (info.namespace, info.queue_name)
        if lq not in counts:
            continue
        held = state.admitted.get(key)
        if held is not None:
            counts[lq]["reserving"] += 1
            counts[lq]["admitted"] += not held.evicted
            for fr, units in held.usage.items():
                usage[lq][fr] = usage[lq].get(fr, 0) + units
        elif state.is_pending(key) and state.pending.state_of(key) is not None:
            counts[lq]["pending"] += 1
    out = {}
    for lq, c in counts.items():
        flavors: dict[str, list[dict[str, Any]]] = {}
        for (flavor, resource), units in sorted(usage[lq].items()):
            flavors.setdefault(flavor, []).append({"name": resource, "total": format_units(resource, units)})
        by_flavor = [{"name": f, "resources": r} for f, r in flavors.items()]
        out[lq] = {"pendingWorkloads": c["pending"], "reservingWorkloads": c["reserving"],
                   "admittedWorkloads": c["admitted"], "flavorsReservation": by_flavor, "flavorUsage": by_flavor}
    return out


def counts_patch(observed: Mapping[str, Any], wanted: Mapping[str, Any]) -> Patch | None:
    status = observed.get("status") or {}
    patch = {k: v for k, v in wanted.items() if status.get(k) != v}
    return {"status": patch} if patch else None
