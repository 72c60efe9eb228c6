"""The check kept up to date object by object, for a caller that re-checks after every change batch.

`batchgate check` builds its report once; the dashboard re-builds it after each change batch of
a live cluster. `CheckView` gives the second the same report for a fraction of the work: objects
it has seen are not parsed again (`ParseMemo`), the quota state takes only the Workloads that
changed (`QuotaState.put_workload`/`forget`, as the controller feeds it) and is rebuilt only when
a queue, flavor, namespace or priority class changed, and a pending reason is recomputed only
when its cohort's held quota changed or the Workload itself did. A reason's quota cycle reads the
Workload and the quota held in its cohort, nothing else that a Workload change can touch.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Iterable, Mapping

from batchgate.policy import FairSharing
from controller.check.inventory import Inventory, ParseMemo, inventory_of
from controller.check.pending import Kept, explain
from controller.check.queues import build_state
from controller.check.report import Report, report_of
from controller.state.cache import ObjectKey


def _queue_objects(inv: Inventory) -> tuple[object, ...]:
    """What the quota state takes besides Workloads: any change rebuilds it."""
    return inv.namespaces, inv.flavors, inv.priority_classes, inv.cluster_queues, inv.local_queues


class CheckView:
    def __init__(self, fair_sharing: FairSharing = FairSharing()) -> None:
        self.fair_sharing = fair_sharing
        self._memo = ParseMemo()
        self.inventory = Inventory()
        self.state = build_state(self.inventory, fair_sharing)
        self._reasons: dict[ObjectKey, str] = {}  # computed pending reasons still valid
        self._rows: Kept = {}  # the last report's pending rows

    def update(self, objects: Iterable[tuple[str, Mapping[str, Any]]]) -> None:
        """Take the whole observed state as (kind, object) pairs; only what changed since the last
        update costs work."""
        inv = inventory_of(objects, self._memo)
        if _queue_objects(inv) != _queue_objects(self.inventory):
            self.state = build_state(inv, self.fair_sharing)
            self._reasons.clear()
        else:
            self._take_workloads(inv)
        self.inventory = inv

    def report(self, now: _dt.datetime) -> Report:
        by_now = {member for cq, held in self.state.admitted_by_cq.items()
                  if any(h.reserved_at is None for h in held.values())
                  for member in (cq, *self.state.book.cohort_members(cq))}
        return report_of(self.inventory, self.state, now, lambda key: self._reason(key, now, by_now),
                         self._rows)

    def _take_workloads(self, inv: Inventory) -> None:
        old = self.inventory.workloads
        changed = [key for key, wl in inv.workloads.items() if old.get(key) is not wl]
        changed += [key for key in old if key not in inv.workloads]
        touched: set[str] = set()  # ClusterQueues whose held quota changed
        for key in changed:
            held_before = self.state.admitted.get(key)
            if key in inv.workloads:
                self.state.put_workload(inv.workloads[key])
            else:
                self.state.forget(key)
            held_after = self.state.admitted.get(key)
            if held_before != held_after:
                touched.update(h.cluster_queue for h in (held_before, held_after) if h is not None)
            self._reasons.pop(key, None)
        cohorts = {member for cq in touched for member in (cq, *self.state.book.cohort_members(cq))}
        if cohorts:
            self._reasons = {key: reason for key, reason in self._reasons.items()
                             if self.state.cluster_queue_of(key) not in cohorts}

    def _reason(self, key: ObjectKey, now: _dt.datetime, by_now: set[str]) -> str:
        """`explain`, kept while its inputs stay; not kept in a cohort where a held Workload has no
        reservation time (preemption then orders candidates by `now`)."""
        if key in self._reasons:
            return self._reasons[key]
        reason = explain(self.state, key, now)
        if self.state.cluster_queue_of(key) not in by_now:
            self._reasons[key] = reason
        return reason
