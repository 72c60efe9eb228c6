"""Whom to evict so that a workload fits: Kueue's classical preemption (docs/quota.md, "Semantics").

Candidates are the preemptor's own ClusterQueue's lower-priority workloads (withinClusterQueue)
and workloads of cohort members that are borrowing (reclaimWithinCohort). They are removed in
order until the preemptor fits, then added back, newest removal excepted, wherever it still fits,
so the set is minimal. Reclaiming from other queues never combines with borrowing unless
borrowWithinCohort allows it, which keeps two queues from preempting each other in turn.
"""

from __future__ import annotations

import datetime as _dt
from typing import Iterable, Mapping

from batchgate import keys
from batchgate.api.kueue import ClusterQueue
from controller.decisions.quota.fair_sharing import fair_preemptions
from controller.decisions.quota.outcomes import PreemptionTarget
from controller.decisions.quota.victims import settle
from controller.state.quota_book import FlavorResource, UsageOverlay
from controller.state.quota_state import AdmittedWorkload, QuotaState, WorkloadInfo

HUMAN_REASONS = {
    keys.PREEMPTED_IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    keys.PREEMPTED_IN_COHORT_RECLAMATION: "reclamation within the cohort",
    keys.PREEMPTED_IN_COHORT_FAIR_SHARING: "fair sharing within the cohort",
    keys.PREEMPTED_IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
}


def preempted_message(preemptor_uid: str, reason: str) -> str:
    """The Preempted condition message of a victim."""
    return f"Preempted to accommodate a workload (UID: {preemptor_uid}) due to {HUMAN_REASONS[reason]}"


def get_targets(info: WorkloadInfo, cq: ClusterQueue, requests: Mapping[FlavorResource, int],
                needs_preemption: frozenset[FlavorResource], state: QuotaState, view: UsageOverlay,
                now: _dt.datetime) -> list[PreemptionTarget]:
    """The minimal set of workloads to evict for `info` to fit in `cq`; empty if none works."""
    fair = state.fair_sharing.enable
    candidates = _candidates(info, cq, needs_preemption, state, view, fair)
    if not candidates:
        return []
    candidates.sort(key=lambda held: _candidate_order(held, cq.name, now))
    own = [c for c in candidates if c.cluster_queue == cq.name]
    if len(own) == len(candidates):
        return _minimal(requests, cq, view, needs_preemption, candidates, True, None)
    if fair:  # borrowWithinCohort is ignored: taking below-threshold victims against the shares livelocks
        return fair_preemptions(cq.name, requests, needs_preemption, candidates, view, state.fair_sharing)
    threshold = _borrow_within_cohort_threshold(cq, info.priority)
    if threshold is not None:
        if not _under_nominal(cq, needs_preemption, view):
            candidates = [c for c in candidates if c.cluster_queue == cq.name or c.info.priority < threshold]
        return _minimal(requests, cq, view, needs_preemption, candidates, True, threshold)
    if _under_nominal(cq, needs_preemption, view):
        targets = _minimal(requests, cq, view, needs_preemption, candidates, False, None)
        if targets:
            return targets
    return _minimal(requests, cq, view, needs_preemption, own, True, None)


def _candidates(info: WorkloadInfo, cq: ClusterQueue, frs: frozenset[FlavorResource], state: QuotaState,
                view: UsageOverlay, fair: bool) -> list[AdmittedWorkload]:
    out: list[AdmittedWorkload] = []
    policy = cq.preemption
    if policy.within_cluster_queue != "Never":
        same_priority = policy.within_cluster_queue == "LowerOrNewerEqualPriority"
        for held in state.admitted_by_cq.get(cq.name, {}).values():
            p = held.info.priority
            if p > info.priority:
                continue
            if p == info.priority and not (same_priority and info.timestamp < held.info.timestamp):
                continue
            if _uses(held, frs):
                out.append(held)
    # Without fair sharing, another queue's workloads are only ever taken while this one is under
    # nominal quota, or under borrowWithinCohort (see get_targets); else collecting them is wasted.
    reclaim_useful = fair or policy.borrow_within_cohort != "Never" or _under_nominal(cq, frs, view)
    if cq.cohort and policy.reclaim_within_cohort != "Never" and reclaim_useful:
        lower_only = policy.reclaim_within_cohort != "Any"
        for member in sorted(state.book.cohort_members(cq.name)):
            if member == cq.name or not view.is_borrowing(member, frs):
                continue
            for held in state.admitted_by_cq.get(member, {}).values():
                if lower_only and held.info.priority >= info.priority:
                    continue
                if _uses(held, frs):
                    out.append(held)
    return out


def _uses(held: AdmittedWorkload, frs: frozenset[FlavorResource]) -> bool:
    return any(fr in frs for fr in held.usage)


def _candidate_order(held: AdmittedWorkload, cq: str, now: _dt.datetime) -> tuple:
    reserved = held.reserved_at or now
    return (not held.evicted, held.cluster_queue == cq, held.info.priority, -reserved.timestamp(), held.info.uid)


def _borrow_within_cohort_threshold(cq: ClusterQueue, priority: int) -> int | None:
    policy = cq.preemption
    if policy.borrow_within_cohort == "Never":
        return None
    if policy.max_priority_threshold is not None and policy.max_priority_threshold < priority:
        return policy.max_priority_threshold + 1
    return priority


def _under_nominal(cq: ClusterQueue, frs: Iterable[FlavorResource], view: UsageOverlay) -> bool:
    return all(view.usage(cq.name, fr) < view.book.quota(cq.name, fr).nominal for fr in frs)


def _minimal(requests: Mapping[FlavorResource, int], cq: ClusterQueue, view: UsageOverlay,
             frs: frozenset[FlavorResource], candidates: list[AdmittedWorkload], allow_borrowing: bool,
             threshold: int | None) -> list[PreemptionTarget]:
    removed: list[tuple[AdmittedWorkload, str]] = []
    fits = False
    for held in candidates:
        reason = keys.PREEMPTED_IN_CLUSTER_QUEUE
        if held.cluster_queue != cq.name:
            if not view.is_borrowing(held.cluster_queue, frs):
                continue
            reason = keys.PREEMPTED_IN_COHORT_RECLAMATION
            if threshold is not None:
                if held.info.priority >= threshold:
                    allow_borrowing = False
                else:
                    reason = keys.PREEMPTED_IN_COHORT_RECLAIM_WHILE_BORROWING
        view.add(held.cluster_queue, held.usage, -1)
        removed.append((held, reason))
        if view.fits(cq.name, requests, allow_borrowing):
            fits = True
            break
    return settle(removed, fits, cq.name, requests, view, allow_borrowing)
