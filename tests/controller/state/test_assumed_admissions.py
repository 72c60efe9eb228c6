"""Which Workload events an admission in flight holds back, and what its write's end lets through.

The decisions are tables over (what was written, what is observed); the tracker is driven the way
the admission loop drives it. The loop over a recording API is tests/controller/adapters/test_admission.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from controller.state.assumed_admissions import AssumedAdmissions, Waiting, on_event, on_written
from controller.state.cache import ObjectKey

KEY = ObjectKey("Workload", "ns", "w")


def event(version: str | None, *, admitted: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "w", "namespace": "ns"}
    if version is not None:
        meta["resourceVersion"] = version
    status: dict[str, Any] = {"conditions": [{"type": "QuotaReserved", "status": "True" if admitted else "False"}]}
    if admitted:
        status["admission"] = {"clusterQueue": "cq", "podSetAssignments": []}
    return {"kind": "Workload", "metadata": meta, "status": status}


@pytest.mark.parametrize("written, seen, held", [
    pytest.param(None, event("5"), True, id="a pending event while the write is in flight is held back"),
    pytest.param(None, event("5", admitted=True), False, id="an event showing the admission ends the wait"),
    pytest.param(10, event("9"), True, id="a pending event older than the write is held back"),
    pytest.param(10, event("10"), False, id="a pending event as new as the write ends the wait"),
    pytest.param(10, event("11"), False, id="a pending event newer than the write ends the wait"),
    pytest.param(10, event(None), False, id="an event without a comparable version ends the wait"),
    pytest.param(10, event("abc"), False, id="an event with an opaque version ends the wait"),
])
def test_on_event(written: int | None, seen: dict[str, Any], held: bool) -> None:
    after = on_event(Waiting(written), seen)
    assert (after is not None) is held
    if after is not None:
        assert after == Waiting(written, seen)


LATE = event("9")


@pytest.mark.parametrize("waiting, written, goes_on, fed", [
    pytest.param(Waiting(None, LATE), 10, True, None,
                 id="a success newer than the held-back event keeps waiting and drops it"),
    pytest.param(Waiting(None), 10, True, None, id="a success with nothing held back keeps waiting"),
    pytest.param(Waiting(None, event("12")), 10, False, event("12"),
                 id="a success older than the held-back event ends the wait and feeds it"),
    pytest.param(Waiting(None, LATE), None, False, LATE, id="a failed write ends the wait and feeds the event"),
    pytest.param(Waiting(None), None, False, None, id="a failed write with nothing held back just ends the wait"),
])
def test_on_written(waiting: Waiting, written: int | None, goes_on: bool, fed: dict[str, Any] | None) -> None:
    after, feed = on_written(waiting, written)
    assert (after == Waiting(written)) if goes_on else after is None
    assert feed == fed


def test_an_assumed_admission_holds_back_a_late_echo_until_its_write_fails() -> None:
    assumed = AssumedAdmissions()
    assert not assumed.hold_back(KEY, LATE)  # nothing assumed: every event goes through
    assumed.assume(KEY)
    assert assumed.hold_back(KEY, LATE)
    assert assumed.written(KEY, None) == LATE
    assert KEY not in assumed and not assumed.hold_back(KEY, LATE)


def test_a_written_admission_holds_back_older_events_until_one_shows_it() -> None:
    assumed = AssumedAdmissions()
    assumed.assume(KEY)
    assert assumed.written(KEY, 10) is None
    assert assumed.hold_back(KEY, event("8"))
    assert not assumed.hold_back(KEY, event("10", admitted=True))
    assert KEY not in assumed


def test_a_deleted_workload_is_no_longer_waited_for() -> None:
    assumed = AssumedAdmissions()
    assumed.assume(KEY)
    assumed.forget(KEY)
    assert KEY not in assumed and not assumed.hold_back(KEY, LATE)
