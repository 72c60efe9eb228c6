"""Which pending Workloads' reasons may have changed since they were last written.

A pending reason is informative: it is flushed now and then from spare capacity, not on every
change. Changes mark Workloads (one Workload observed, the heads a cycle requeued, the members of a
class parked with its head) or everything (a queue, flavor or namespace changed, so any reason may
have); a flush hands the marked ones out one by one with the message the quota state gives each
then, skipping any that stopped pending meanwhile. The message is read when its turn comes, not
when marked, and a parked class's members are listed only then.
"""

from __future__ import annotations

from typing import Iterable

from controller.state.cache import ObjectKey
from controller.state.pending_queues import ClassRef
from controller.state.quota_state import QuotaState


class PendingReasons:
    def __init__(self) -> None:
        # marked workloads, and classes whose members all are, in order (a set that pops the latest)
        self._due: dict[ObjectKey | ClassRef, None] = {}
        self._everything = False

    def mark(self, workloads: Iterable[ObjectKey]) -> None:
        self._due.update(dict.fromkeys(workloads))

    def mark_everything(self) -> None:
        self._everything = True

    def note(self, state: QuotaState) -> None:
        """Before a flush: mark what the state says changed wholesale (classes parked since the last
        flush, or everything). A class is marked as one entry, its members taken when its turn
        comes: a busy queue's classes park again every second, hundreds of members each, and most
        wait for spare capacity past several flushes."""
        self._due.update(dict.fromkeys(state.pending.take_retold()))
        if self._everything:
            self.mark(key for key in state.workloads if state.is_pending(key))
            self._everything = False

    def next_due(self, state: QuotaState) -> tuple[ObjectKey, str] | None:
        """One marked workload that still pends and its current message (empty for one no cycle has
        looked at yet: `admission_status.pending_patch` says what that one shows), if any is left."""
        due = self._due
        while due:
            key, _ = due.popitem()
            if isinstance(key, ClassRef):
                self._list(key, state)
                continue
            if (ref := state.pending.class_of(key)) in due:  # marked with its class: written once, with it
                del due[ref]
                due[key] = None
                self._list(ref, state)
                continue
            if state.is_pending(key):
                return key, state.pending_reason(key)[1]
        return None

    def _list(self, ref: ClassRef, state: QuotaState) -> None:
        """A marked class's members come next, those not marked on their own already."""
        due = self._due
        due.update((member, None) for member in state.pending.members(ref) if member not in due)
