"""Fair-sharing preemption (Kueue's `fairPreemptions`, docs/quota.md).

With fair sharing on, a workload may take quota from cohort members whose dominant resource
share (DRS) stays at least as high as its own queue's would become: candidate queues are
visited highest share first, and a victim is taken only when a strategy allows it
(`LessThanOrEqualToFinalShare`: the preemptor's new share is not above the victim queue's share
without the victim; then `LessThanInitialShare`: below the victim queue's current share).
borrowWithinCohort has no say here, as in Kueue since kubernetes-sigs/kueue#4165: a victim taken
below its priority threshold but against the shares wins readmission on fair-sharing order, and
the preemptor takes it again, forever.

Named fix kubernetes-sigs/kueue#9494 (Kueue v0.17's gate FairSharingPreemptWithinNominal, policy
`fairSharing.preemptWithinNominal`): a preemptor whose ClusterQueue, the workload included, stays
within its nominal quota in every resource needing preemption is owed that quota, so victims of
other queues are taken in share order without asking the strategies, as InCohortReclamation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from batchgate import keys
from controller.decisions.quota.outcomes import PreemptionTarget
from controller.decisions.quota.victims import settle
from controller.state.quota_book import FlavorResource, UsageOverlay
from batchgate.policy import FAIR_SHARING_STRATEGIES as STRATEGIES, FairSharing
from controller.state.quota_state import AdmittedWorkload

Strategy = Callable[[int, int, int], bool]  # (preemptor new share, victim CQ old share, victim CQ new share)
_RULES: dict[str, Strategy] = {
    "LessThanOrEqualToFinalShare": lambda new, _old, victim_new: new <= victim_new,
    "LessThanInitialShare": lambda new, victim_old, _victim_new: new < victim_old,
}


@dataclass
class _CandidateQueue:
    name: str
    share: int
    workloads: list[AdmittedWorkload] = field(default_factory=list)


def fair_preemptions(cq: str, requests: Mapping[FlavorResource, int], frs: frozenset[FlavorResource],
                     candidates: list[AdmittedWorkload], view: UsageOverlay, settings: FairSharing) -> list[PreemptionTarget]:
    """Victims in the cohort, fairest first; empty if the preemptor still would not fit."""
    rules = [_RULES[s] for s in settings.preemption_strategies] or [_RULES[s] for s in STRATEGIES]
    owed = settings.preempt_within_nominal and not any(view.borrowing_with(cq, fr, requests.get(fr, 0)) for fr in frs)
    queues = _by_queue(candidates, view, first_only=False)
    new_share = view.dominant_resource_share(cq, requests)
    removed: list[tuple[AdmittedWorkload, str]] = []
    retry: list[AdmittedWorkload] = []
    fits = False
    while queues and not fits:
        cand = _pop_highest(queues)
        own = cand.name == cq
        if own or owed:  # no strategy asked: the preemptor's own queue, or a borrower of quota it is owed
            held = cand.workloads.pop(0)
            view.add(held.cluster_queue, held.usage, -1)
            removed.append((held, keys.PREEMPTED_IN_CLUSTER_QUEUE if own else keys.PREEMPTED_IN_COHORT_RECLAMATION))
            if view.fits(cq, requests):
                fits = True
                break
            if own:
                new_share = view.dominant_resource_share(cq, requests)
            if cand.workloads and (own or view.is_borrowing(cand.name, frs)):
                cand.share = view.dominant_resource_share(cand.name)
                queues[cand.name] = cand
            continue
        for i, held in enumerate(cand.workloads):
            victim_new = view.dominant_resource_share(cand.name, held.usage, -1)
            if rules[0](new_share, cand.share, victim_new):
                view.add(held.cluster_queue, held.usage, -1)
                removed.append((held, keys.PREEMPTED_IN_COHORT_FAIR_SHARING))
                if view.fits(cq, requests):
                    fits = True
                    break
                cand.workloads = cand.workloads[i + 1:]
                if cand.workloads and view.is_borrowing(cand.name, frs):
                    cand.share = victim_new
                    queues.setdefault(cand.name, cand)
                break  # shares changed: pick the queue to visit again
            retry.append(held)
    if not fits and len(rules) > 1:
        queues = _by_queue(retry, view, first_only=True)
        while queues and not fits:
            cand = _pop_highest(queues)
            if rules[1](new_share, cand.share, 0):
                held = cand.workloads[0]
                view.add(held.cluster_queue, held.usage, -1)
                removed.append((held, keys.PREEMPTED_IN_COHORT_FAIR_SHARING))
                fits = view.fits(cq, requests)
    return settle(removed, fits, cq, requests, view)


def _by_queue(candidates: list[AdmittedWorkload], view: UsageOverlay, *, first_only: bool) -> dict[str, _CandidateQueue]:
    queues: dict[str, _CandidateQueue] = {}
    for held in candidates:
        cand = queues.get(held.cluster_queue)
        if cand is None:
            queues[held.cluster_queue] = _CandidateQueue(held.cluster_queue, view.dominant_resource_share(held.cluster_queue),
                                                         [held])
        elif not first_only:
            cand.workloads.append(held)
    return queues


def _pop_highest(queues: dict[str, _CandidateQueue]) -> _CandidateQueue:
    name = min(queues, key=lambda n: (-queues[n].share, n))
    return queues.pop(name)
