"""Admissions assumed in the quota state but not yet seen on the API: which Workload events to hold back.

An admission is assumed the moment a cycle decides it and written in the background. Until it
is seen coming back, a watch event of its Workload that predates the write (typically the late
echo of a pending reason written just before) must not reach the quota state: it would undo the
assumption and hand the quota out twice. As in Kueue, where a pending-to-pending update leaves
the cache's assumed workload alone, such an event is kept aside; it is fed to the state after
all if the write fails. The decisions (`on_event`, `on_written`) are pure functions of what was
written and what is observed; `AssumedAdmissions` keeps one `Waiting` per Workload and the
admission loop carries the decisions out under its lock.
"""

from __future__ import annotations

from dataclasses import dataclass

from batchgate.api.kueue import holds_quota
from controller.state.cache import Obj, ObjectKey, revision


@dataclass(frozen=True)
class Waiting:
    """An admission not yet seen: the revision its write made (None while in flight) and the
    latest event of its Workload held back meanwhile."""

    written: int | None = None
    late: Obj | None = None


def on_event(waiting: Waiting, event: Obj) -> Waiting | None:
    """The wait once `event` arrives: still waiting with `event` held back, or None when the event
    ends the wait (it shows the admission, or is not older than the write) and goes to the state."""
    version = revision(event)
    if not holds_quota(event) and (waiting.written is None or (version is not None and version < waiting.written)):
        return Waiting(waiting.written, event)
    return None


def on_written(waiting: Waiting, written: int | None) -> tuple[Waiting | None, Obj | None]:
    """The wait once the write ended, and the held-back event to feed the state now.

    `written` is the revision the write made, or None when it failed (or its result was not
    seen). After a success the wait goes on for events older than the write (one held back that
    is older is superseded and dropped); otherwise the wait ends and any held-back event is fed.
    """
    late = waiting.late
    if written is not None and (late is None or (revision(late) or written) < written):
        return Waiting(written), None
    return None, late


class AssumedAdmissions:
    """The Workloads whose admission is in flight or written and not yet observed."""

    def __init__(self) -> None:
        self._waiting: dict[ObjectKey, Waiting] = {}

    def __contains__(self, key: ObjectKey) -> bool:
        return key in self._waiting

    def assume(self, key: ObjectKey) -> None:
        """A cycle decided this admission; its write has not started."""
        self._waiting[key] = Waiting()

    def hold_back(self, key: ObjectKey, event: Obj) -> bool:
        """Whether `event` is kept aside rather than fed to the state (`on_event`)."""
        waiting = self._waiting.get(key)
        if waiting is None:
            return False
        after = on_event(waiting, event)
        if after is None:
            del self._waiting[key]
            return False
        self._waiting[key] = after
        return True

    def written(self, key: ObjectKey, version: int | None) -> Obj | None:
        """The write ended (`on_written`); returns the held-back event the state must now take."""
        waiting = self._waiting.pop(key, Waiting())
        after, feed = on_written(waiting, version)
        if after is not None:
            self._waiting[key] = after
        return feed

    def forget(self, key: ObjectKey) -> None:
        """The Workload is gone: nothing more to wait for."""
        self._waiting.pop(key, None)
