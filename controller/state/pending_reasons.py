"""Which pending Workloads' reasons may have changed since they were last written, and to what.

A pending reason is informative: it is flushed now and then from spare capacity, not on every
change. Changes mark Workloads (one Workload observed, the heads a cycle requeued, the members of a
class parked with its head) or everything (a queue, flavor or namespace changed, so any reason may
have); a flush first notes the messages
the quota state gives the marked Workloads, then hands them out one by one, skipping any that
stopped pending meanwhile.
"""

from __future__ import annotations

from typing import Iterable

from controller.state.cache import ObjectKey
from controller.state.quota_state import QuotaState


class PendingReasons:
    def __init__(self) -> None:
        self._marked: set[ObjectKey] = set()
        self._everything = False
        self._due: dict[ObjectKey, str] = {}  # workload -> the message to write

    def mark(self, workloads: Iterable[ObjectKey]) -> None:
        self._marked.update(workloads)

    def mark_everything(self) -> None:
        self._everything = True

    def note(self, state: QuotaState) -> None:
        """Take the current message of every marked Workload that is still pending (empty for one
        no cycle has looked at yet: `admission_status.pending_patch` says what that one shows)."""
        self._marked.update(state.pending.take_retold())
        if self._everything:
            self._marked.update(key for key in state.workloads if state.is_pending(key))
            self._everything = False
        for key in self._marked:
            if state.is_pending(key):
                self._due[key] = state.pending_reason(key)[1]
        self._marked.clear()

    def next_due(self, state: QuotaState) -> tuple[ObjectKey, str] | None:
        """One noted (workload, message) to write, if any is left that still pends."""
        while self._due:
            key, message = self._due.popitem()
            if state.is_pending(key):
                return key, message
        return None
