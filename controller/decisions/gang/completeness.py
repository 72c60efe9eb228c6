"""A gang that can never be complete: reported, and its quota given back instead of held forever.

A PodGroup asks for `minMember` pods placed at once. The controller sizes its own PodGroups by the
pods their workload still has to run, but a PodGroup the user wrote (or one sized before part of
its Job finished) may ask for more pods than the admitted workload will ever make: its pods then
wait for siblings that never come while the Workload holds quota for as long as anyone waits.
Such a workload is deactivated as Kueue deactivates one (`spec.active: false`, Evicted with
reason InactiveWorkload): its job stops, its quota is released once its pods are gone, and it
stays out of the queue until the user fixes the gang and sets `active` back to true.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any, Mapping

from batchgate import keys
from batchgate.api.conditions import is_true
from batchgate.kinds import Kind
from controller.decisions.gang.podgroups import PodGroupInfo, gang_size
from controller.decisions.jobs.podsets import PodSetError
from controller.decisions.quota.admission_status import stop_eviction_patch
from controller.decisions.quota.outcomes import Evict
from controller.state.quota_state import workload_key

REASON = "GangNeverComplete"


@dataclass(frozen=True)
class Deactivate:
    """Take the workload out of the queue: a spec patch (active false) and a status patch (Evicted)."""

    workload_name: str
    spec_patch: Mapping[str, Any]
    status_patch: Mapping[str, Any] | None
    message: str
    reason: str = REASON


def never_complete(group: PodGroupInfo, job: Mapping[str, Any], kind: Kind, workload: Mapping[str, Any] | None,
                   now: _dt.datetime, *, ours: bool) -> Deactivate | None:
    """Deactivate when `job` holds quota, runs, and will never make `group.min_member` pods of the group.

    `ours`: the controller made the PodGroup for this job, and resizes it with the job instead.
    """
    if ours or workload is None or not is_true(workload, keys.COND_QUOTA_RESERVED) or is_true(workload, keys.COND_EVICTED):
        return None
    if kind.is_suspended(job) or (workload.get("spec") or {}).get("active") is False:
        return None
    try:
        size = gang_size(job, kind, group.name)
    except PodSetError:
        return None  # the job integration reports an unreadable template
    if size >= group.min_member:
        return None
    message = (f"The workload is deactivated: PodGroup {group.namespace}/{group.name} needs {group.min_member} pods "
               f"placed at once, but {kind.kind} {group.name} has only {size} left to run, so the gang can never "
               f"be complete; its quota is released")
    evict = Evict(workload_key(group.namespace, workload["metadata"]["name"]), keys.EVICTED_BY_DEACTIVATION, message)
    return Deactivate(workload["metadata"]["name"], {"spec": {"active": False}},
                      stop_eviction_patch(workload, evict, now), message)
