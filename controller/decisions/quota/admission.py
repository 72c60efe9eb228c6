"""One quota admission cycle, Kueue's `schedule` made pure (docs/quota.md, "Semantics").

`run_cycle(state, heads, now)` reads the state and returns decisions; it changes nothing.
`decisions/quota/cycle.apply_cycle` records the result in the state (assumes each `Admit`,
marks `Preempt` targets evicted, keeps flavor progress, requeues the rest where each `Requeue`
says) for both the controller and `batchgate simulate`. The phases are Kueue's:
nominate every head against the same snapshot, order the entries (preemptors waiting for their
victims first, then non-borrowing, then
the lower dominant resource share under fair sharing, then priority, then queue-order time),
then process them in order on a running overlay of usage, so two heads that compete for the
same cohort capacity are settled by that order.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Hashable, Mapping

from controller.decisions.quota.flavor_assignment import (
    FIT, NO_CANDIDATES, NO_FIT, PREEMPT, RECLAIM, FlavorAssignment, assign_flavors,
)
from controller.decisions.quota.outcomes import Admit, CycleResult, Preempt, PreemptionTarget, QueueName, Requeue
from controller.decisions.quota.preemption import get_targets
from controller.state.cache import ObjectKey
from controller.state.quota_book import UsageOverlay
from controller.state.quota_state import FlavorProgress, QuotaState, WorkloadInfo

# Why a head goes back (Kueue's RequeueReason); decides heap vs inadmissible set.
GENERIC, NAMESPACE_MISMATCH, FAILED_AFTER_NOMINATION, PENDING_PREEMPTION = (
    "Generic", "NamespaceMismatch", "FailedAfterNomination", "PendingPreemption")


@dataclass(slots=True)
class _Entry:
    info: WorkloadInfo
    cluster_queue: str
    message: str = ""
    cause: str = GENERIC
    assignment: FlavorAssignment | None = None
    targets: tuple[PreemptionTarget, ...] = ()  # shared by recalled entries, so never changed
    nominated: bool = False  # reached processing (Kueue: status nominated or skipped)
    share: int = 0  # dominant resource share with this workload admitted (fair sharing only)
    progress: FlavorProgress | None = None  # where flavor assignment resumes next time

    @property
    def mode(self) -> int:
        return NO_FIT if self.assignment is None else self.assignment.mode

    def recalled_for(self, info: WorkloadInfo) -> "_Entry":
        """This fresh nomination's entry for another workload of the same shape."""
        return _Entry(info, self.cluster_queue, message=self.message, cause=self.cause, assignment=self.assignment,
                      targets=self.targets, share=self.share, progress=self.progress)


def run_cycle(state: QuotaState, heads: list[ObjectKey], now: _dt.datetime) -> CycleResult:
    """Decide, for one head per ClusterQueue, admit / preempt / requeue."""
    view = UsageOverlay(state.book)
    entries = [_recalled(state, key, view, now) for key in heads if state.is_pending(key)]
    # Preemptors waiting for their victims go first (Kueue#13797), so the room their victims free
    # is theirs; then Kueue's order.
    preemptors = state.pending.preemptors()
    entries.sort(key=lambda e: (e.info.key not in preemptors,
                                e.assignment is not None and e.assignment.borrows, e.share, -e.info.priority,
                                e.info.timestamp, e.info.key.namespaced_name))
    admitted: list[Admit] = []
    preempted: list[Preempt] = []
    claimed: set[ObjectKey] = set()
    skipped: dict[str, int] = {}
    for e in entries:
        if e.mode == NO_FIT:
            continue
        assert e.assignment is not None
        cq = state.cluster_queues[e.cluster_queue]
        if e.mode == PREEMPT and not e.targets:
            if cq.preemption.reclaim_within_cohort != "Any":  # it could not reclaim this later
                view.add(cq.name, _to_reserve(e.assignment, cq.name, view))
            continue
        target_keys = {t.workload for t in e.targets}
        if target_keys & claimed:
            _skip(e, "Workload has overlapping preemption targets with another workload")
            skipped[cq.name] = skipped.get(cq.name, 0) + 1
            continue
        net = _net_usage(e, state)
        if not view.fits(cq.name, net):
            _skip(e, "Workload no longer fits after processing another workload")
            if e.mode == PREEMPT:
                skipped[cq.name] = skipped.get(cq.name, 0) + 1
            continue
        claimed |= target_keys
        view.add(cq.name, net)
        if e.mode == PREEMPT:
            e.message += f". Pending the preemption of {len(e.targets)} workload(s)"
            e.cause = PENDING_PREEMPTION
            e.progress = None  # once victims are gone, every flavor is worth trying again
            preempted.append(Preempt(e.info.key, e.targets, e.message))
            continue
        admitted.append(Admit(e.info.key, cq.name, e.assignment.to_assignment()))
    done = {a.workload for a in admitted}
    requeued = tuple(Requeue(e.info.key, _queue_for(state, e), e.message, e.cause == PENDING_PREEMPTION, _no_fit(e))
                     for e in entries if e.info.key not in done)
    progress = {e.info.key: e.progress for e in entries if e.assignment is not None and e.info.key not in done}
    return CycleResult(tuple(admitted), tuple(preempted), requeued, skipped, progress)


def _recalled(state: QuotaState, key: ObjectKey, view: UsageOverlay, now: _dt.datetime) -> _Entry:
    """`_nominate`'s entry, recalled when a workload of the same shape was nominated in the same
    ClusterQueue while nothing it reads has changed (`controller/state/recall.py`). The view is
    the book itself here: nominations come before any entry is processed."""
    info = state.workloads[key]
    cq_name = state.cluster_queue_of(key) or ""
    scope, version = state.nomination_scope(cq_name)
    kept = state.nominations.kept(scope, version)
    if kept.reads_now is None:  # victims without a reservation time are ordered by now
        kept.reads_now = state.holds_unreserved(cq_name)
    shape = _shape(state, info, cq_name, now if kept.reads_now else None)
    recalled = kept.results.get(shape)
    if not isinstance(recalled, _Entry):
        recalled = kept.results[shape] = _nominate(state, key, view, now)
    return recalled.recalled_for(info)


def _shape(state: QuotaState, info: WorkloadInfo, cq_name: str, now: _dt.datetime | None) -> Hashable:
    """Everything of the workload a nomination reads: its namespace (the queue's selector), its
    requests, priority and flavor progress; its creation time only where it can pick victims
    (LowerOrNewerEqualPriority), and `now` where a victim without a reservation time is ordered by it."""
    cq = state.cluster_queues.get(cq_name)
    newer_equal = cq is not None and cq.preemption.within_cluster_queue == "LowerOrNewerEqualPriority"
    progress = state.current_progress(info.key, cq_name)
    return (cq_name, info.namespace, info.priority, info.timestamp if newer_equal else None, info.requests_key,
            None if progress is None else progress.shape, now)


def _nominate(state: QuotaState, key: ObjectKey, view: UsageOverlay, now: _dt.datetime) -> _Entry:
    info = state.workloads[key]
    cq_name = state.cluster_queue_of(key) or ""
    entry = _Entry(info, cq_name)
    inactive = state.inactive_reason(cq_name)
    if inactive is not None:
        entry.message = inactive
        return entry
    cq = state.cluster_queues[cq_name]
    labels = state.namespace_labels(info.namespace)
    if cq.namespace_selector is None or not cq.namespace_selector.matches(labels):
        entry.message = "Workload namespace doesn't match ClusterQueue selector"
        entry.cause = NAMESPACE_MISMATCH
        return entry

    searched: dict[tuple[tuple[tuple[tuple[str, str], int], ...], frozenset[tuple[str, str]]], tuple[PreemptionTarget, ...]] = {}

    def targets_for(usage: Mapping[tuple[str, str], int], needs: frozenset[tuple[str, str]]) -> tuple[PreemptionTarget, ...]:
        """A search leaves the view as it found it, so one nomination makes each search once (the
        oracle's single-resource search is most often the one the preemption needs again)."""
        key = (tuple(sorted(usage.items())), needs)
        if key not in searched:
            searched[key] = tuple(get_targets(info, cq, usage, needs, state, view, now))
        return searched[key]

    def simulate_preemption(fr: tuple[str, str], value: int) -> int:
        """Kueue's preemption oracle since kubernetes-sigs/kueue#5529: the victims the search
        would take for this flavor resource alone say whether preemption can make room there."""
        targets = targets_for({fr: value}, frozenset({fr}))
        if not targets:
            return NO_CANDIDATES
        return PREEMPT if any(t.cluster_queue == cq.name for t in targets) else RECLAIM

    fair = state.fair_sharing.enable
    entry.assignment = assign_flavors(info, cq, state.flavors, view, simulate_preemption, fair,
                                      state.current_progress(key, cq_name))
    entry.message = entry.assignment.message
    entry.progress = FlavorProgress(state.generation.get(cq_name, 0), entry.assignment.tried)
    if fair and entry.assignment.mode != NO_FIT:
        entry.share = view.dominant_resource_share(cq.name, entry.assignment.usage)
    if entry.assignment.mode == PREEMPT:
        entry.targets = targets_for(entry.assignment.usage, entry.assignment.needs_preemption)
    return entry


def _skip(entry: _Entry, message: str) -> None:
    entry.message = message
    entry.nominated = True
    entry.progress = None  # retry every flavor next time


def _net_usage(entry: _Entry, state: QuotaState) -> dict[tuple[str, str], int]:
    """The request minus what its victims free: what the cycle must still find for it."""
    assert entry.assignment is not None
    usage = dict(entry.assignment.usage)
    if entry.mode == FIT:
        return usage
    for target in entry.targets:
        for fr, value in state.admitted[target.workload].usage.items():
            if fr in usage:
                usage[fr] = max(0, usage[fr] - value)
    return usage


def _to_reserve(assignment: FlavorAssignment, cq: str, view: UsageOverlay) -> dict[tuple[str, str], int]:
    """Capacity held back for a preemptor that found no victims, so lower entries can't take it."""
    out = {}
    for fr, value in assignment.usage.items():
        quota = view.book.quota(cq, fr)
        used = view.usage(cq, fr)
        if assignment.borrows:
            limit = value if quota.borrowing_limit is None else quota.nominal + quota.borrowing_limit - used
            out[fr] = max(0, min(value, limit))
        else:
            out[fr] = max(0, min(value, quota.nominal - used))
    return out


def _no_fit(entry: _Entry) -> bool:
    """Kueue's RequeueReasonNoFit and RequeueReasonPreemptionNoCandidates: flavor assignment found
    no room, or found room only behind victims and no victim to take. A workload of the same shape
    would meet the same answer; a head turned away for its namespace, an inactive ClusterQueue or a
    lost race would not, so only these park its equivalents (kubernetes-sigs/kueue#11097)."""
    if entry.nominated or entry.assignment is None:
        return False
    return entry.assignment.mode == NO_FIT or (entry.assignment.mode == PREEMPT and not entry.targets)


def _queue_for(state: QuotaState, entry: _Entry) -> QueueName:
    """Kueue's RequeueIfNotPresent: where a head that was not admitted waits next."""
    cause = entry.cause
    if entry.nominated and cause == GENERIC:
        cause = FAILED_AFTER_NOMINATION
    cq = state.cluster_queues.get(entry.cluster_queue)
    strict = cq is not None and cq.queueing_strategy == "StrictFIFO"
    if strict:
        return "inadmissible" if cause == NAMESPACE_MISMATCH else "active"
    if cause in (FAILED_AFTER_NOMINATION, PENDING_PREEMPTION):
        return "active"
    if entry.progress is not None and entry.progress.pending_flavors:
        return "active"  # Kueue's LastAssignment.PendingFlavors(): the next attempt tries later flavors
    return "inadmissible"
