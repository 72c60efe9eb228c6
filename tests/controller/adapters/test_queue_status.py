"""The queue status reconciler: one writer for ClusterQueue and LocalQueue status (issue 26 section 4).

It writes what `decisions/quota/queue_status.py` computes from the quota state, only what changed
since its last write, and only while the rate limiter has capacity to spare. Run against the
recording API, whose writes come back to the store as watch events.
"""

from __future__ import annotations

from typing import Any, Mapping

from batchgate.clock import FakeClock
from controller.adapters.queue_status import QueueStatusReconciler, wanted_statuses
from controller.adapters.store import SharedStore
from controller.adapters.writer import Writer
from controller.state.quota_state import QuotaState
from tests.controller.decisions.trace_builders import T0, basic, workload
from tests.controller.recording_api import RecordingApi


class World:
    def __init__(self) -> None:
        self.clock = FakeClock(T0)
        self.store, self.state, self.spare = SharedStore(), QuotaState(), True
        self.api = RecordingApi(self._deliver)
        writer = Writer(self.api, lambda: True)  # type: ignore[arg-type]
        self.queues = QueueStatusReconciler(self.store, writer, self.clock, lambda: wanted_statuses(self.state),
                                            lambda: self.spare, lambda: True)

    def _deliver(self, kind: str, event: str, obj: Mapping[str, Any]) -> None:
        self.store.apply(kind, event, obj)
        self.state.observe(obj, self.clock.now())

    def written(self) -> list[tuple[str, str, str]]:
        return [(w.kind, w.namespace, w.name) for w in self.api.writes]

    def status(self, kind: str) -> Mapping[str, Any]:
        (obj,) = self.api.find(kind)
        return obj.get("status") or {}


def world_with_a_pending_workload() -> World:
    w = World()
    for obj in [*basic(), workload("w", cpu=1)]:
        w.api.put(obj)
    return w


def test_both_queue_kinds_get_their_status_from_the_one_writer() -> None:
    w = world_with_a_pending_workload()
    w.queues.write(w.clock.now())
    assert sorted(w.written()) == [("ClusterQueue", "", "cq"), ("LocalQueue", "ns", "lq")]
    assert w.status("ClusterQueue")["pendingWorkloads"] == 1 and w.status("LocalQueue")["pendingWorkloads"] == 1


def test_a_status_unchanged_since_the_last_write_costs_no_request() -> None:
    w = world_with_a_pending_workload()
    w.queues.write(w.clock.now())
    before = len(w.api.writes)
    w.queues.write(w.clock.now())
    assert len(w.api.writes) == before
    w.api.put(workload("v", cpu=1, created=2))
    w.queues.write(w.clock.now())
    assert sorted(w.written()[before:]) == [("ClusterQueue", "", "cq"), ("LocalQueue", "ns", "lq")]


def test_without_spare_capacity_nothing_is_written_until_there_is() -> None:
    w = world_with_a_pending_workload()
    w.spare = False
    w.queues.write(w.clock.now())
    assert w.written() == []
    w.spare = True
    w.queues.write(w.clock.now())
    assert len(w.written()) == 2
