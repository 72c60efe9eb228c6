"""The status writes that carry admission decisions to the API, as minimal merge patches.

The values come from `queue_status.py` beside it (Kueue's conditions, reasons and messages, and
the ClusterQueue / LocalQueue status); this module reads each object as last observed and
returns None when it already says what the decision says, so a repeated cycle — or a retry
after a conflict — writes nothing twice.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Callable, Iterable, Mapping

from batchgate import keys
from batchgate.api.conditions import Condition, condition_of, conditions_of, is_true, merge, to_wire
from batchgate.api.kueue import holds_quota
from controller.decisions.quota import queue_status as qs
from controller.decisions.quota.outcomes import Admit, Evict, PreemptionTarget
from batchgate.api.objects import controller_owner
from controller.state.quota_book import format_units
from controller.state.quota_state import WorkloadInfo

Patch = dict[str, Any]


def _with(workload: Mapping[str, Any], transition: Callable[[Iterable[Condition]], tuple[Condition, ...]]) -> list[dict[str, Any]]:
    return to_wire(transition(conditions_of(workload)))


def admission_patch(workload: Mapping[str, Any], admit: Admit, info: WorkloadInfo, now: _dt.datetime) -> Patch | None:
    """status.admission plus QuotaReserved/Admitted; a past eviction is marked as past."""
    if holds_quota(workload):
        return None
    assignments = []
    for ps in info.pod_sets:
        flavors = dict(admit.assignment.flavors.get(ps.name, {}))
        usage = {r: format_units(r, units) for r, units in sorted(ps.total.items()) if r in flavors}
        assignments.append({"name": ps.name, "flavors": flavors, "resourceUsage": usage, "count": ps.count})
    conditions = _with(workload, lambda c: qs.admitted_conditions(c, admit.cluster_queue, now))
    return {"status": {"admission": {"clusterQueue": admit.cluster_queue, "podSetAssignments": assignments},
                       "conditions": conditions}}


def preemption_patch(workload: Mapping[str, Any], target: PreemptionTarget, preemptor_uid: str,
                     now: _dt.datetime) -> Patch | None:
    if is_true(workload, keys.COND_EVICTED) or not is_true(workload, keys.COND_QUOTA_RESERVED):
        return None
    return {"status": {"conditions": _with(workload, lambda c: qs.preempted_conditions(c, target.reason, preemptor_uid, now))}}


def stop_eviction_patch(workload: Mapping[str, Any], evict: Evict, now: _dt.datetime) -> Patch | None:
    if is_true(workload, keys.COND_EVICTED) or not is_true(workload, keys.COND_QUOTA_RESERVED):
        return None
    return {"status": {"conditions": _with(workload, lambda c: qs.evicted_conditions(c, evict.reason, evict.message, now))}}


def pending_patch(workload: Mapping[str, Any], message: str, now: _dt.datetime) -> Patch | None:
    """QuotaReserved=False, reason Pending, with the reason the workload waits (v0.10 wording).

    An empty `message` is a workload no cycle has tried yet: it keeps the pending message it has
    (a released victim's eviction message, which Kueue's job integration leaves there until the
    next attempt), and one with none says that it waits (Kueue writes nothing then).
    """
    if is_true(workload, keys.COND_QUOTA_RESERVED) or is_true(workload, keys.COND_FINISHED):
        return None
    old = condition_of(workload, keys.COND_QUOTA_RESERVED)
    if not message:
        if old is not None and old.status == "False" and old.message:
            return None
        message = qs.NOT_YET_TRIED
    if old is not None and old.status == "False" and old.message == message:
        return None
    return {"status": {"conditions": _with(workload, lambda c: qs.pending_conditions(c, message, now))}}


def release_patch(workload: Mapping[str, Any], now: _dt.datetime) -> Patch | None:
    """An evicted Workload whose pods are gone (or that has none) gives its quota back."""
    if not (workload.get("status") or {}).get("admission") or not is_true(workload, keys.COND_EVICTED):
        return None
    return {"status": {"admission": None, "conditions": _with(workload, lambda c: qs.released_conditions(c, now))}}


def released_at_once(workload: Mapping[str, Any], patch: Patch | None, now: _dt.datetime) -> Patch | None:
    """A Workload no job owns has no pods to wait for: the write that evicts it also frees its quota."""
    if patch is None or controller_owner(workload) is not None:
        return patch
    evicted = {**workload, "status": {**(workload.get("status") or {}), "conditions": patch["status"]["conditions"]}}
    return release_patch(evicted, now) or patch


def status_patch(observed: Mapping[str, Any], wanted: Mapping[str, Any], now: _dt.datetime) -> Patch | None:
    """A queue's status, only the changed fields; the Active condition keeps its time unless it flips."""
    status = observed.get("status") or {}
    patch: dict[str, Any] = {k: v for k, v in wanted.items() if k != "conditions" and status.get(k) != v}
    (active,) = wanted["conditions"]
    old = condition_of(observed, keys.COND_ACTIVE)
    if old is None or (old.status, old.reason, old.message) != (active["status"], active["reason"], active["message"]):
        wanted_active = Condition(keys.COND_ACTIVE, active["status"], active["reason"], active["message"])
        patch["conditions"] = to_wire(merge(conditions_of(observed), [wanted_active], now))
    return {"status": patch} if patch else None
