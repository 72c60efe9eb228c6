"""Events as `kubectl describe` reads them: a repeat bumps the count of the Event it repeats, and
the recorder's memory of what it wrote stays bounded however many objects pass through."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from batchgate.clock import FakeClock
from controller.adapters.events import REMEMBERED, EventRecorder
from controller.adapters.writer import Writer
from tests.controller.decisions.trace_builders import T0
from tests.controller.recording_api import RecordingApi


def recorder() -> tuple[EventRecorder, RecordingApi, FakeClock]:
    api = RecordingApi(lambda kind, event, obj: None)
    clock = FakeClock(T0)
    return EventRecorder(Writer(api, lambda: True), clock, "test"), api, clock  # type: ignore[arg-type]


def workload(n: int) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
            "metadata": {"namespace": "ns", "name": f"w{n}", "uid": f"uid-{n}"}}


def record(events: EventRecorder, clock: FakeClock, n: int, message: str = "Quota reserved in ClusterQueue cq") -> None:
    clock.advance(_dt.timedelta(microseconds=1))  # Event names carry the time
    events.normal(workload(n), "QuotaReserved", message)


def counts(api: RecordingApi) -> dict[tuple[str, str], int]:
    return {(e["involvedObject"]["name"], e["message"]): e["count"] for e in api.find("Event")}


def test_a_repeat_bumps_the_count_and_another_message_is_another_event() -> None:
    events, api, clock = recorder()
    record(events, clock, 1)
    record(events, clock, 1)
    record(events, clock, 1, "Quota reserved in ClusterQueue other")
    assert counts(api) == {("w1", "Quota reserved in ClusterQueue cq"): 2,
                           ("w1", "Quota reserved in ClusterQueue other"): 1}


def test_the_memory_keeps_the_most_recent_events_only_and_a_forgotten_repeat_is_a_new_event() -> None:
    events, api, clock = recorder()
    for n in range(REMEMBERED + 1):
        record(events, clock, n)
    record(events, clock, REMEMBERED)  # the latest is remembered: counted
    record(events, clock, 0)  # the oldest was forgotten: a second Event, nothing lost
    assert len(events._seen) == REMEMBERED
    written = api.find("Event")
    assert len(written) == REMEMBERED + 2
    assert [e["count"] for e in written if e["involvedObject"]["name"] == f"w{REMEMBERED}"] == [2]
    assert sorted(e["count"] for e in written if e["involvedObject"]["name"] == "w0") == [1, 1]


def test_a_repeat_refreshes_its_place_in_the_memory() -> None:
    events, api, clock = recorder()
    for n in range(REMEMBERED):
        record(events, clock, n)
    record(events, clock, 0)  # w0 is now the most recent
    record(events, clock, REMEMBERED)  # pushes out w1, not w0
    record(events, clock, 0)
    assert counts(api)[("w0", "Quota reserved in ClusterQueue cq")] == 3
