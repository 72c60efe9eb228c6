"""One admission cycle and its effects on the quota state: the path `batchgate simulate` and the
controller's admission loop both take (docs/quota.md, docs/simulate.md).

`admission_cycle(state, now)` starts the evictions stopped queues ask for, takes one head per
active ClusterQueue, runs Kueue's cycle (`run_cycle`, which only reads) and then `apply_cycle`,
which records the outcome in the in-memory state — admissions assumed, victims marked Evicted,
where flavor assignment resumes, where each head waits — and returns the `Effects` the caller
carries out: the controller writes them to the API, the simulation reports them. No I/O here.

A cycle that leaves every input of the next one as it found it (nothing admitted, evicted or
parked; flavor progress and preemptors unchanged) marks the state settled: until something else
changes it, another cycle would decide exactly the same, so the controller runs none.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Mapping

from batchgate.frozen import frozen

from controller.decisions.quota.admission import run_cycle
from controller.decisions.quota.outcomes import Admit, CycleResult, Evict, PreemptionTarget
from controller.decisions.quota.stop_policy import drain_evictions
from controller.state.cache import ObjectKey
from controller.state.quota_state import QuotaState, WorkloadInfo


@frozen
class Admission:
    """An admission assumed in the state; `info` is the workload as admitted (for its status)."""

    admit: Admit
    info: WorkloadInfo


@dataclass(frozen=True)
class Preemption:
    """A victim newly marked Evicted; it holds its quota until its pods are gone."""

    target: PreemptionTarget
    preemptor: ObjectKey
    preemptor_uid: str


@dataclass(frozen=True)
class Effects:
    admitted: tuple[Admission, ...] = ()
    preempted: tuple[Preemption, ...] = ()
    drained: tuple[Evict, ...] = ()  # evicted because their ClusterQueue or LocalQueue is drained
    requeued: tuple[ObjectKey, ...] = ()  # heads not admitted: their pending reason may have changed
    skipped_preemptions: Mapping[str, int] = field(default_factory=dict)  # per ClusterQueue
    changed: bool = False  # whether the next cycle can decide differently without a new event


def admission_cycle(state: QuotaState, now: _dt.datetime) -> Effects:
    """Drain stopped queues, run one cycle over the current heads, and apply it."""
    drained = tuple(evict for evict in drain_evictions(state) if state.mark_evicted(evict.workload))
    heads = state.pending.heads(lambda cq: state.inactive_reason(cq) is None)
    return apply_cycle(state, run_cycle(state, heads, now), now, drained)


def apply_cycle(state: QuotaState, result: CycleResult, now: _dt.datetime, drained: tuple[Evict, ...] = ()) -> Effects:
    """Record `result` in `state` and say what must be written.

    A head goes back to its heap or the inadmissible set as `run_cycle` decided; its flavor
    progress is kept so the next attempt resumes after the flavors it tried (Kueue's LastAssignment).
    """
    admitted = []
    for admit in result.admit:
        state.assume(admit.workload, admit.cluster_queue, admit.assignment.usage, admit.assignment.flavors, now)
        admitted.append(Admission(admit, state.workloads[admit.workload]))
    preempted = []
    for preempt in result.preempt:
        uid = state.workloads[preempt.preemptor].uid
        for target in preempt.targets:
            if state.mark_evicted(target.workload):
                preempted.append(Preemption(target, preempt.preemptor, uid))
    resumed = moved = False
    for key, progress in result.flavor_progress.items():
        resumed = resumed or (progress is not None and progress.pending_flavors)
        moved = moved or state.flavor_progress.get(key) != progress
        state.set_progress(key, progress)
    parked = False
    for requeue in result.requeue:
        # once both are known, the rest need not be compared before and after
        before = None if parked and moved else _place(state, requeue.workload)
        state.requeue(requeue.workload, requeue.queue, requeue.reason, preempting=requeue.preempting,
                      no_fit=requeue.no_fit)
        if before is not None:
            parked = parked or (before[0] == "active" and requeue.queue == "inadmissible")
            moved = moved or before != _place(state, requeue.workload)
    changed = bool(admitted or preempted or drained or parked or resumed)
    state.mark_settled(not (changed or moved))
    return Effects(tuple(admitted), tuple(preempted), drained, tuple(r.workload for r in result.requeue),
                   result.skipped_preemptions, changed)


def _place(state: QuotaState, workload: ObjectKey) -> tuple[str | None, tuple[ObjectKey | None, bool]]:
    """Where a pending workload waits and its queue's preemptor: what orders the next cycle's heads."""
    return state.pending.state_of(workload), state.pending.preemption_of(workload)
