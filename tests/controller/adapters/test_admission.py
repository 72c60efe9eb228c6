"""The admission loop keeps its assumptions against late echoes (issue 20 item 4).

The loop assumes an admission in its quota state the moment it decides it, and writes it in the
background. A watch event of the same Workload that predates that write — typically the echo of
the pending reason the status flusher wrote just before — must not undo the assumption: the
quota would be handed out a second time while the first admission lands (over-admission, then a
reclaim of the newest admission: the admitted-preempted-readmitted flapping of issue 20). As in
Kueue, a pending-to-pending update leaves the cache's assumed workload alone
(pkg/controller/core/workload_controller.go, Update; pkg/cache IsAssumedOrAdmittedWorkload); the
assumption ends when the admission is observed, when its write fails, or on a newer observation.

The loop runs against the recording API; the watch events are held and delivered in the order
each case gives, the way a loaded watch delivers them late.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import replace
from typing import Any, Callable, Mapping

import pytest

from batchgate.clock import FakeClock
from batchgate.policy import DEFAULT_POLICY, Admission
from controller.adapters.admission import AdmissionLoop
from controller.adapters.events import EventRecorder
from controller.adapters.kube import RESOURCES, ApiError
from controller.adapters.metrics import ControllerMetrics
from controller.adapters.queue_status import QueueStatusReconciler
from controller.adapters.store import SharedStore
from controller.adapters.writer import Writer
from tests.controller.decisions.trace_builders import T0, basic, wl_key, workload
from tests.controller.recording_api import RecordingApi

Event = tuple[str, str, Mapping[str, Any]]


class HeldWatch:
    """The loop, the recording API, and a watch whose events wait until `deliver` is called."""

    def __init__(self, fail_admission: bool = False) -> None:
        self.held: list[Event] = []
        self.holding = False
        self.store = SharedStore()
        self.api = RecordingApi(self._event)
        self.fail_admission = fail_admission
        clock = FakeClock(T0)
        writer = Writer(self.api, lambda: True)  # type: ignore[arg-type]
        self.loop = AdmissionLoop(self.store, writer, EventRecorder(writer, clock, "echoes"), clock,
                                  ControllerMetrics(), lambda: True, writers=2)
        self.queue_status = QueueStatusReconciler(self.store, writer, clock, self.loop.queue_statuses,
                                                  self.loop.has_spare, lambda: True)
        self.loop.apply_policy(replace(DEFAULT_POLICY))
        self.loop.writes.start()
        self.clock = clock
        if fail_admission:
            patch = self.api.patch

            def refusing(res: Any, name: str, namespace: Any, body: Any, subresource: Any = None) -> Any:
                if ((body.get("status") or {}).get("admission")):
                    raise ApiError(500, "InternalError", "etcd is down")
                return patch(res, name, namespace, body, subresource)

            self.api.patch = refusing  # type: ignore[method-assign]

    def _event(self, kind: str, event: str, obj: Mapping[str, Any]) -> None:
        if self.holding:
            self.held.append((kind, event, obj))
        else:
            self._apply(kind, event, obj)

    def _apply(self, kind: str, event: str, obj: Mapping[str, Any]) -> None:
        change = self.store.apply(kind, event, obj)
        if change is not None:
            self.loop.on_change(change)

    def deliver(self, which: Callable[[Mapping[str, Any]], bool]) -> None:
        """Deliver the held events `which` accepts, in order; keep the rest held."""
        keep = []
        for kind, event, obj in self.held:
            if which(obj):
                self._apply(kind, event, obj)
            else:
                keep.append((kind, event, obj))
        self.held = keep

    def cycle(self) -> None:
        self.loop.cycle()
        assert self.loop.writes.join(timeout=30)

    def admitted(self) -> list[str]:
        return sorted(w["metadata"]["name"] for w in self.api.find("Workload") if (w.get("status") or {}).get("admission"))

    def close(self) -> None:
        self.loop.writes.stop()


def pending_echo(obj: Mapping[str, Any]) -> bool:
    return not (obj.get("status") or {}).get("admission")


@pytest.fixture
def world() -> Any:
    worlds: list[HeldWatch] = []

    def make(**kw: Any) -> HeldWatch:
        w = HeldWatch(**kw)
        worlds.append(w)
        for obj in basic(cpu=4) + [workload("w", cpu=4, created=1)]:
            w.api.put(obj)
        return w

    yield make
    for w in worlds:
        w.close()


def test_a_late_pending_echo_does_not_undo_an_admission_in_flight(world: Callable[..., HeldWatch]) -> None:
    w = world()
    w.holding = True
    # The status flusher's pending reason lands first; its echo is late.
    w.api.set_status("Workload", "ns", "w", {"status": {"conditions": [{
        "type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "Workload is waiting for quota",
        "lastTransitionTime": "2025-01-01T00:00:01Z"}]}})
    w.cycle()
    assert w.admitted() == ["w"]
    w.holding = False
    w.api.put(workload("x", cpu=4, priority=5, created=2))  # a higher-priority workload arrives
    w.holding = True
    w.deliver(pending_echo)  # the late echo arrives while the admission's echo is still on its way
    w.cycle()
    assert w.admitted() == ["w"], "the quota w holds was handed out again"
    w.deliver(lambda obj: True)
    w.cycle()
    assert w.admitted() == ["w"]


def test_an_admission_whose_write_failed_is_forgotten_and_the_workload_waits_again(world: Callable[..., HeldWatch]) -> None:
    w = world(fail_admission=True)
    w.cycle()
    assert w.admitted() == []
    assert w.loop.state.is_pending(wl_key("ns/w")) and wl_key("ns/w") not in w.loop.state.admitted


def test_the_echoes_of_the_loops_own_writes_cost_no_cycle(world: Callable[..., HeldWatch]) -> None:
    """Issue 29: a wake-up that finds the state settled runs no cycle; a change that may make a
    head admissible (here a new workload) runs one."""
    w = world()
    w.api.put(workload("big", cpu=8, created=2))  # can never fit: parked
    while w.loop.cycle():
        assert w.loop.writes.join(timeout=30)
    w.loop.write_reasons(w.clock.now())  # the pending reasons and queue status, echoed back
    w.queue_status.write(w.clock.now())
    assert w.loop.writes.join(timeout=30)
    cycles = w.loop.cycles
    for _ in range(3):
        w.cycle()
    assert w.admitted() == ["w"] and w.loop.cycles == cycles
    w.api.put(workload("small", cpu=0, created=3))
    w.cycle()
    assert w.loop.cycles == cycles + 1


def test_an_ownerless_workload_seen_evicted_while_holding_quota_is_released_without_a_cycle(
        world: Callable[..., HeldWatch]) -> None:
    w = world()
    w.api.put(workload("old", cpu=1, created=0, admitted_to="cq", evicted=True))
    assert w.loop.writes.join(timeout=30)
    released = w.api.get(RESOURCES["Workload"], "old", "ns")
    assert not (released.get("status") or {}).get("admission") and w.loop.cycles == 0
    assert wl_key("ns/old") not in w.loop.state.admitted


def test_with_a_requeue_batch_the_loop_wakes_when_the_period_ends_and_only_then_cycles(
        world: Callable[..., HeldWatch]) -> None:
    """Policy admission.requeueBatchPeriod (Kueue v0.17's requeuer): a finish frees quota at once,
    but the parked workload waiting for it is tried only once the period is over; the loop sleeps
    until then (no cycle for the wake-ups between) instead of a whole tick."""
    w = world()
    w.loop.apply_policy(replace(DEFAULT_POLICY, admission=Admission(requeue_batch_period=_dt.timedelta(seconds=1))))
    w.api.put(workload("next", cpu=4, created=2))
    while w.loop.cycle():
        assert w.loop.writes.join(timeout=30)
    assert w.admitted() == ["w"] and w.loop.seconds_to_next_cycle(5.0) == 5.0
    w.api.set_status("Workload", "ns", "w", {"status": {"conditions": [{
        "type": "Finished", "status": "True", "reason": "Succeeded", "message": "done",
        "lastTransitionTime": "2025-01-01T00:00:02Z"}]}})
    w.cycle()  # starts the period
    assert w.admitted() == ["w"] and w.loop.seconds_to_next_cycle(5.0) == 1.0
    w.clock.advance(_dt.timedelta(milliseconds=600))
    cycles = w.loop.cycles
    w.cycle()
    assert w.loop.cycles == cycles and w.loop.seconds_to_next_cycle(5.0) == pytest.approx(0.4)
    w.clock.advance(_dt.timedelta(milliseconds=400))
    assert w.loop.seconds_to_next_cycle(5.0) == 0.0
    w.cycle()
    assert w.admitted() == ["next", "w"] and w.loop.seconds_to_next_cycle(5.0) == 5.0


def test_equivalence_hashing_is_switched_by_the_policy_and_parks_a_class_in_one_cycle(
        world: Callable[..., HeldWatch]) -> None:
    """Policy admission.schedulingEquivalenceHashing (Kueue's gate, on by default as in v0.18):
    a head that does not fit parks the waiting workloads of its class in the same cycle; switched
    off by a hot reload, a new one of that class waits in the heap again."""
    w = world()
    w.loop.apply_policy(DEFAULT_POLICY)
    for n in range(3):
        w.api.put(workload(f"same-{n}", cpu=4, created=2 + n))
    w.cycle()  # admits w
    w.cycle()  # same-0 does not fit: its class goes with it
    state = w.loop.state
    assert [state.pending.state_of(wl_key(f"ns/same-{n}")) for n in range(3)] == ["inadmissible"] * 3
    w.loop.apply_policy(replace(DEFAULT_POLICY, admission=Admission(scheduling_equivalence_hashing=False)))
    w.api.put(workload("same-3", cpu=4, created=5))
    assert state.pending.state_of(wl_key("ns/same-3")) == "active" and not state.equivalence_hashing
