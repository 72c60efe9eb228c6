"""The last step of every preemption search: keep only the victims that are really needed.

The search removed candidates (in the overlay) until the preemptor fitted; now, newest removal
excepted, each one is put back if the preemptor still fits without taking it, and the overlay is
restored, so the caller's view is as it was.
"""

from __future__ import annotations

from typing import Mapping

from controller.decisions.quota.outcomes import PreemptionTarget
from controller.state.quota_book import FlavorResource, UsageOverlay
from controller.state.quota_state import AdmittedWorkload


def settle(removed: list[tuple[AdmittedWorkload, str]], fits: bool, cq: str, requests: Mapping[FlavorResource, int],
           view: UsageOverlay, allow_borrowing: bool = True) -> list[PreemptionTarget]:
    """The minimal targets (empty if the preemptor did not fit); `removed` is (victim, reason)."""
    if fits:
        for i in range(len(removed) - 2, -1, -1):
            held = removed[i][0]
            view.add(held.cluster_queue, held.usage)
            if view.fits(cq, requests, allow_borrowing):
                removed.pop(i)
            else:
                view.add(held.cluster_queue, held.usage, -1)
    for held, _ in removed:
        view.add(held.cluster_queue, held.usage)
    if not fits:
        return []
    return [PreemptionTarget(held.info.key, held.cluster_queue, reason) for held, reason in removed]
