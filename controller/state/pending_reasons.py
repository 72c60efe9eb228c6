"""Which pending Workloads' reasons may have changed since they were last written.

A pending reason is informative: it is flushed now and then from spare capacity, not on every
change. Changes mark Workloads (one Workload observed, the heads a cycle requeued, the members of a
class parked with its head) or everything (a queue, flavor or namespace changed, so any reason may
have); a flush hands the marked ones out one by one with the message the quota state gives each
then, skipping any that stopped pending meanwhile. The message is read when its turn comes, not
when marked: a parked class's members are marked again each time it parks, hundreds a flush on a
busy queue, and most wait for spare capacity past several flushes.
"""

from __future__ import annotations

from typing import Iterable

from controller.state.cache import ObjectKey
from controller.state.quota_state import QuotaState


class PendingReasons:
    def __init__(self) -> None:
        self._due: dict[ObjectKey, None] = {}  # marked workloads, in order (a set that pops the latest)
        self._everything = False

    def mark(self, workloads: Iterable[ObjectKey]) -> None:
        self._due.update(dict.fromkeys(workloads))

    def mark_everything(self) -> None:
        self._everything = True

    def note(self, state: QuotaState) -> None:
        """Before a flush: mark what the state says changed wholesale (classes parked since the last
        flush, or everything)."""
        self.mark(state.pending.take_retold())
        if self._everything:
            self.mark(key for key in state.workloads if state.is_pending(key))
            self._everything = False

    def next_due(self, state: QuotaState) -> tuple[ObjectKey, str] | None:
        """One marked workload that still pends and its current message (empty for one no cycle has
        looked at yet: `admission_status.pending_patch` says what that one shows), if any is left."""
        while self._due:
            key, _ = self._due.popitem()
            if state.is_pending(key):
                return key, state.pending_reason(key)[1]
        return None
