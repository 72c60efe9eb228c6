"""The reconcile runtime: every reconciler has its own work queue, so one failing for a key does not
skip another for the same key, and each outcome of a reconcile leads to controller-runtime's next
step (forget, requeue after, backoff, drop). Loops are stepped by hand on a FakeClock."""

from __future__ import annotations

import threading
from typing import Callable, Iterable

import pytest

from batchgate.clock import FakeClock, SystemClock
from controller.adapters.kube import ApiError
from controller.adapters.metrics import ControllerMetrics
from controller.adapters.reconcile import DONE, ReconcileLoop, Result
from controller.adapters.writer import NotLeader
from controller.state.cache import Change, ObjectKey

JOB = ObjectKey("Job", "team-a", "train")
CHANGE = Change(JOB, "MODIFIED", {"metadata": {"name": "train"}}, {"metadata": {"name": "train"}})
UNREACHABLE = ApiError(500, "InternalError", 'Internal error occurred: failed calling webhook "jobs.batchgate.dev"')


class Scripted:
    """A reconciler of every key it is told about that answers from a script (a Result or an exception)."""

    def __init__(self, *outcomes: Result | Exception) -> None:
        self.outcomes, self.seen = list(outcomes), list[ObjectKey]()

    def keys_for(self, change: Change) -> Iterable[ObjectKey]:
        return [change.key]

    def reconcile(self, key: ObjectKey) -> Result:
        self.seen.append(key)
        outcome = self.outcomes.pop(0) if self.outcomes else DONE
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def a_loop(reconciler: Scripted, clock: FakeClock, leading: Callable[[], bool] = lambda: True,
           name: str = "test") -> ReconcileLoop[ObjectKey]:
    return ReconcileLoop(name, reconciler, clock, leading, ControllerMetrics())


def test_one_reconciler_raising_does_not_stop_another_for_the_same_key() -> None:
    clock = FakeClock()
    failing, working = Scripted(RuntimeError("boom"), DONE), Scripted(DONE)
    loops = [a_loop(failing, clock, name="failing"), a_loop(working, clock, name="working")]
    for loop in loops:
        loop.enqueue(CHANGE)
    for loop in loops:
        assert loop.process_next()
    assert working.seen == [JOB], "the working reconciler saw the key although the other raised for it"
    assert not loops[1].process_next() and loops[1].queue.idle()
    assert not loops[0].process_next(), "the failed key waits its backoff"
    clock.advance(loops[0].queue.base_delay)
    assert loops[0].process_next() and failing.seen == [JOB, JOB]
    assert working.seen == [JOB], "the other's retry is not the working one's business"


@pytest.mark.parametrize(("outcomes", "leading", "advance", "reconciles"), [
    pytest.param([DONE], True, 3600.0, 1, id="a success is not looked at again"),
    pytest.param([Result(requeue_after=30.0)], True, 30.0, 2, id="a success asking for a later look is queued after it"),
    pytest.param([RuntimeError("boom")], True, 0.005, 2, id="a failure is retried after the base backoff"),
    pytest.param([NotLeader("lost")], True, 3600.0, 1, id="a write refused for lost leadership is dropped"),
    pytest.param([UNREACHABLE], True, 1.0, 2, id="a write an unreachable webhook refused is probed a second later"),
    pytest.param([DONE], False, 3600.0, 0, id="nothing is reconciled while another process leads"),
])
def test_what_follows_a_reconcile(outcomes: list[Result | Exception], leading: bool, advance: float,
                                  reconciles: int) -> None:
    clock = FakeClock()
    reconciler = Scripted(*outcomes)
    loop = a_loop(reconciler, clock, lambda: leading)
    loop.enqueue(CHANGE)
    loop.process_next()
    clock.advance(advance)
    while loop.process_next():
        pass
    assert len(reconciler.seen) == reconciles


def test_failures_back_off_per_key_and_a_success_forgets_them() -> None:
    clock = FakeClock()
    reconciler = Scripted(RuntimeError("1"), RuntimeError("2"), DONE, RuntimeError("after success"))
    loop = a_loop(reconciler, clock)
    base = loop.queue.base_delay

    def retried_after(delay: float) -> None:
        clock.advance(delay * 0.9)
        assert not loop.process_next(), f"not back before {delay}s"
        clock.advance(delay * 0.1)
        assert loop.process_next(), f"back after {delay}s"

    loop.enqueue(CHANGE)
    loop.process_next()  # fails
    retried_after(base)  # fails again
    retried_after(2 * base)  # succeeds
    loop.enqueue(CHANGE)
    loop.process_next()  # fails: the backoff starts over
    assert loop.queue.add_rate_limited(ObjectKey("Job", "team-a", "other")) == base, "another key's never grew"
    retried_after(base)
    assert reconciler.seen == [JOB] * 5


def test_a_key_is_never_worked_on_by_two_workers_at_once() -> None:
    """A change while a worker holds the key waits until it is done; a second worker finds nothing."""
    entered, release = threading.Event(), threading.Event()

    class Blocking(Scripted):
        def reconcile(self, key: ObjectKey) -> Result:
            entered.set()
            assert release.wait(10)
            return super().reconcile(key)

    reconciler = Blocking()
    loop = a_loop(reconciler, FakeClock())
    loop.enqueue(CHANGE)
    first = threading.Thread(target=loop.process_next)
    first.start()
    try:
        assert entered.wait(10)
        loop.enqueue(CHANGE)
        assert not loop.process_next(), "the second worker must not take the key in work"
    finally:
        release.set()
        first.join(10)
    assert loop.process_next(), "the change made during work is reconciled afterwards"
    assert reconciler.seen == [JOB, JOB]


def test_workers_started_and_stopped_reconcile_what_is_queued() -> None:
    done = threading.Event()

    class Signalling(Scripted):
        def reconcile(self, key: ObjectKey) -> Result:
            done.set()
            return super().reconcile(key)

    loop = ReconcileLoop("threads", Signalling(), SystemClock(), lambda: True, ControllerMetrics(), workers=2)
    loop.start()
    try:
        loop.enqueue(CHANGE)
        assert done.wait(10)
    finally:
        loop.stop()
