"""What the status of ClusterQueues, LocalQueues and Workloads should say, computed from state.

The pure half of status writing: these functions return wire-shaped status values with Kueue's
reasons and messages; the status writer (an adapter) diffs them against the object and patches
`/status`. Condition times move only when a condition's status changes, so a restarted
controller writes the same values and nothing flaps.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Iterable

from batchgate import keys
from batchgate.api.conditions import Condition, merge
from controller.decisions.quota.preemption import preempted_message
from controller.state.quota_book import format_units
from controller.state.quota_state import QuotaState

PENDING_REASON = "Pending"  # Kueue v0.10's QuotaReserved=False reason for a workload waiting for quota
NOT_YET_TRIED = "Workload is waiting for quota"  # the pending message of a workload no cycle looked at yet


def cluster_queue_status(state: QuotaState, name: str) -> dict[str, Any]:
    """status of a ClusterQueue: counts, flavorsReservation/flavorsUsage, the Active condition."""
    cq = state.cluster_queues[name]
    held = list(state.admitted_by_cq.get(name, {}).values())
    usage = state.book.usage.get(name, {})
    flavors = []
    for rg in cq.resource_groups:
        for fq in rg.flavors:
            resources = []
            for rq in fq.resources:
                total = usage.get((fq.name, rq.name), 0)
                nominal = state.book.quota(name, (fq.name, rq.name)).nominal
                resources.append({"name": rq.name, "total": format_units(rq.name, total),
                                  "borrowed": format_units(rq.name, max(0, total - nominal))})
            flavors.append({"name": fq.name, "resources": resources})
    queue = state.pending.queues.get(name)
    reason, message = _cluster_queue_active(state, name)
    return {
        "pendingWorkloads": len(queue) if queue is not None else 0,
        "reservingWorkloads": len(held),
        "admittedWorkloads": len(held),  # no admission checks: reserved quota is admitted at once
        "flavorsReservation": flavors,
        "flavorsUsage": flavors,
        "conditions": [_condition_dict(keys.COND_ACTIVE, reason == "Ready", reason, message)],
    }


def _cluster_queue_active(state: QuotaState, name: str) -> tuple[str, str]:
    cq = state.cluster_queues[name]
    reasons, messages = [], []
    if cq.stop_policy != "None":
        reasons.append("Stopped")
        messages.append("is stopped")
    missing = state.missing_flavors(cq)
    if missing:
        reasons.append("FlavorNotFound")
        messages.append(f"references missing ResourceFlavor(s): [{' '.join(missing)}]")
    if not reasons:
        return "Ready", "Can admit new workloads"
    return reasons[0], f"Can't admit new workloads: {', '.join(messages)}."


def local_queue_status(state: QuotaState, namespace: str, name: str) -> dict[str, Any]:
    """status of a LocalQueue: counts of its workloads, their flavor usage, the Active condition."""
    lq = state.local_queues[(namespace, name)]
    mine = [h for h in state.admitted_by_cq.get(lq.cluster_queue, {}).values()
            if (h.info.namespace, h.info.queue_name) == (namespace, name)]
    pending = state.pending_in(namespace, name)
    totals: dict[tuple[str, str], int] = {}
    for held in mine:
        for fr, value in held.usage.items():
            totals[fr] = totals.get(fr, 0) + value
    flavors: dict[str, list[dict[str, str]]] = {}
    for (flavor, resource), value in sorted(totals.items()):
        flavors.setdefault(flavor, []).append({"name": resource, "total": format_units(resource, value)})
    usage = [{"name": f, "resources": r} for f, r in flavors.items()]
    if lq.stop_policy != "None":
        active = (False, "Stopped", "LocalQueue is stopped")
    elif lq.cluster_queue not in state.cluster_queues:
        active = (False, "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue")
    elif state.inactive_reason(lq.cluster_queue) is not None:
        active = (False, "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue")
    else:
        active = (True, "Ready", "Can submit new workloads to clusterQueue")
    return {"pendingWorkloads": pending, "reservingWorkloads": len(mine), "admittedWorkloads": len(mine),
            "flavorsReservation": usage, "flavorUsage": usage,
            "conditions": [_condition_dict(keys.COND_ACTIVE, *active)]}


def _condition_dict(type_: str, status: bool, reason: str, message: str) -> dict[str, str]:
    return {"type": type_, "status": "True" if status else "False", "reason": reason, "message": message}


# --- Workload conditions ----------------------------------------------------------------------
def _set(conditions: Iterable[Condition], new: Condition) -> tuple[Condition, ...]:
    """apimeta.SetStatusCondition by the one merge rule; `new` carries the time stamped if its status flips."""
    assert new.last_transition_time is not None
    return merge(tuple(conditions), [new], new.last_transition_time)


def admitted_conditions(conditions: Iterable[Condition], cluster_queue: str, now: _dt.datetime) -> tuple[Condition, ...]:
    """QuotaReserved and Admitted set; an earlier Evicted / Preempted becomes False "Previously: ..."."""
    out = tuple(conditions)
    out = _set(out, Condition(keys.COND_QUOTA_RESERVED, "True", "QuotaReserved",
                                       f"Quota reserved in ClusterQueue {cluster_queue}", now))
    out = _set(out, Condition(keys.COND_ADMITTED, "True", "Admitted", "The workload is admitted", now))
    for type_ in (keys.COND_EVICTED, keys.COND_PREEMPTED):
        old = next((c for c in out if c.type == type_ and c.status == "True"), None)
        if old is not None:
            out = _set(out, Condition(type_, "False", "QuotaReserved", f"Previously: {old.message}", now))
    return out


def pending_conditions(conditions: Iterable[Condition], message: str, now: _dt.datetime) -> tuple[Condition, ...]:
    """A workload still waiting: QuotaReserved=False, reason Pending, the assigner's message."""
    return _set(tuple(conditions), Condition(keys.COND_QUOTA_RESERVED, "False", PENDING_REASON, message, now))


def preempted_conditions(conditions: Iterable[Condition], reason: str, preemptor_uid: str,
                         now: _dt.datetime) -> tuple[Condition, ...]:
    """Evicted=True (Preempted) and Preempted=True with the Kueue reason; quota is still held."""
    message = preempted_message(preemptor_uid, reason)
    out = _set(tuple(conditions), Condition(keys.COND_EVICTED, "True", keys.EVICTED_BY_PREEMPTION,
                                                     message, now))
    return _set(out, Condition(keys.COND_PREEMPTED, "True", reason, message, now))


def evicted_conditions(conditions: Iterable[Condition], reason: str, message: str,
                       now: _dt.datetime) -> tuple[Condition, ...]:
    """Evicted=True for a reason other than preemption (ClusterQueueStopped, LocalQueueStopped)."""
    return _set(tuple(conditions), Condition(keys.COND_EVICTED, "True", reason, message, now))


def released_conditions(conditions: Iterable[Condition], now: _dt.datetime) -> tuple[Condition, ...]:
    """The evicted workload's pods are gone: quota released, requeued (Requeued=True after preemption)."""
    out = tuple(conditions)
    evicted = next((c for c in out if c.type == keys.COND_EVICTED and c.status == "True"), None)
    out = _set(out, Condition(keys.COND_QUOTA_RESERVED, "False", PENDING_REASON,
                                       evicted.message if evicted else "", now))
    out = _set(out, Condition(keys.COND_ADMITTED, "False", "NoReservation",
                                       "The workload has no reservation", now))
    preempted = evicted is not None and evicted.reason == keys.EVICTED_BY_PREEMPTION
    return _set(out, Condition(keys.COND_REQUEUED, "True" if preempted else "False",
                                        evicted.reason if evicted else "", evicted.message if evicted else "", now))
