"""The work queue (client-go's semantics): per-key dedup, one worker per key, per-key exponential
backoff on failure that a success forgets, one pending delayed add per key (FakeClock time)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from batchgate.clock import FakeClock, SystemClock
from controller.adapters.ratelimit import TokenBucket
from controller.adapters.workqueue import WorkQueue


def drain(queue: WorkQueue[Any]) -> list[object]:
    out = []
    while (key := queue.get(timeout=0)) is not None:
        out.append(key)
        queue.done(key)
    return out


Step = tuple[Any, ...]
"""One scripted call: ("add", k), ("after", k, s), ("fail", k, expected delay), ("forget", k),
("get", expected key or None), ("done", k), ("advance", s), ("idle", expected bool)."""


def run(script: list[Step], *, base_delay: float = 1.0) -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock, base_delay=base_delay, max_delay=60.0)
    for number, (op, *args) in enumerate(script):
        where = f"step {number} {(op, *args)}"
        if op == "add":
            queue.add(args[0])
        elif op == "after":
            queue.add_after(args[0], args[1])
        elif op == "fail":
            assert queue.add_rate_limited(args[0]) == pytest.approx(args[1]), where
        elif op == "forget":
            queue.forget(args[0])
        elif op == "get":
            assert queue.get(timeout=0) == args[0], where
        elif op == "done":
            queue.done(args[0])
        elif op == "advance":
            clock.advance(args[0])
        elif op == "idle":
            assert queue.idle() is args[0], where
        else:
            raise AssertionError(f"unknown step {op}")


@pytest.mark.parametrize("script", [
    pytest.param([("add", "a"), ("add", "b"), ("add", "a"), ("add", "a"),
                  ("get", "a"), ("done", "a"), ("get", "b"), ("done", "b"), ("get", None), ("idle", True)],
                 id="a key added again while it waits is handed out once"),
    pytest.param([("add", "a"), ("get", "a"), ("add", "a"), ("get", None), ("idle", False),
                  ("done", "a"), ("get", "a"), ("done", "a"), ("idle", True)],
                 id="a key added while in work is held back and handed out again after done"),
    pytest.param([("add", "a"), ("get", "a"), ("done", "a"), ("get", None)],
                 id="a key not added while in work is not handed out again"),
    pytest.param([("fail", "a", 1.0), ("fail", "a", 2.0), ("fail", "a", 4.0), ("fail", "b", 1.0), ("fail", "b", 2.0)],
                 id="each key backs off on its own failures"),
    pytest.param([("fail", "a", 1.0), ("fail", "a", 2.0), ("fail", "b", 1.0), ("forget", "a"),
                  ("fail", "a", 1.0), ("fail", "b", 2.0)],
                 id="forget starts a key's backoff over and leaves another's alone"),
    pytest.param([("fail", "a", 1.0), ("fail", "b", 1.0), ("fail", "b", 2.0), ("get", None), ("advance", 1.0),
                  ("get", "a"), ("get", "b"), ("done", "a"), ("done", "b"), ("advance", 5.0), ("get", None)],
                 id="a backed off key comes back when its earliest delay has passed, once"),
    pytest.param([("after", "a", 5.0), ("get", None), ("advance", 4.5), ("get", None), ("advance", 0.5),
                  ("get", "a")],
                 id="a delayed key is not handed out before its time"),
    pytest.param([("after", "a", 5.0), ("add", "a"), ("get", "a"), ("done", "a"), ("get", None), ("advance", 5.0),
                  ("get", "a")],
                 id="a delayed key added now is handed out now and again when its delay passes"),
    pytest.param([("add", "a"), ("get", "a"), ("fail", "a", 1.0), ("advance", 1.0), ("get", None), ("done", "a"),
                  ("get", "a")],
                 id="a key that failed in work comes back only after its worker is done"),
])
def test_queue_semantics(script: list[Step]) -> None:
    run(script)


@pytest.mark.parametrize(
    "failures,expected_delays",
    [
        pytest.param(1, [0.005], id="the first failure waits the base delay"),
        pytest.param(4, [0.005, 0.01, 0.02, 0.04], id="each further failure doubles the delay"),
        pytest.param(20, None, id="the delay never exceeds the cap"),
    ],
)
def test_failures_back_off_exponentially(failures: int, expected_delays: list[float] | None) -> None:
    queue = WorkQueue(FakeClock(), base_delay=0.005, max_delay=1.0)
    delays = [queue.add_rate_limited("k") for _ in range(failures)]
    if expected_delays is not None:
        assert delays == pytest.approx(expected_delays)
    assert max(delays) <= 1.0


def test_a_backed_off_key_returns_only_when_its_delay_has_passed() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock, base_delay=1.0)
    queue.add_rate_limited("k")
    queue.add_rate_limited("k")  # second failure: 2 s, but the 1 s entry is due first
    assert queue.get(timeout=0) is None
    clock.advance(1.0)
    assert queue.get(timeout=0) == "k"
    queue.done("k")
    clock.advance(1.0)
    assert queue.get(timeout=0) is None, "the later delayed add was folded into the earlier one, as client-go does"


def test_periodic_polls_started_by_many_changes_collapse_into_one_per_period() -> None:
    """Each reconcile asks to be looked at again in a minute; three changes must not start three chains."""
    clock = FakeClock()
    queue = WorkQueue(clock)
    for _ in range(3):  # three pod changes a second apart, each reconciled, each asking for a 60 s poll
        queue.add("aw")
        assert drain(queue) == ["aw"]
        queue.add_after("aw", 60)
        clock.advance(1)
    polls = [0] * 5
    for second in range(5 * 60):  # five minutes, worked second by second; each reconcile asks for the next poll
        clock.advance(1)
        for key in drain(queue):
            polls[second // 60] += 1
            queue.add_after(key, 60)
    assert polls == [1, 1, 1, 1, 1]


def test_forget_resets_the_backoff() -> None:
    queue = WorkQueue(FakeClock(), base_delay=1.0)
    queue.add_rate_limited("k")
    queue.add_rate_limited("k")
    queue.forget("k")
    assert queue.add_rate_limited("k") == 1.0, "after a success the next failure starts over"


def test_a_waiting_worker_wakes_for_a_new_key_and_at_shutdown() -> None:
    queue = WorkQueue(SystemClock())
    got: list[object] = []
    took_one = threading.Event()

    def work() -> None:
        key = queue.get(timeout=5)
        got.append(key)
        queue.done(key)
        took_one.set()
        got.append(queue.get(timeout=5))

    worker = threading.Thread(target=work)
    worker.start()
    queue.add("x")
    assert took_one.wait(5)
    queue.shutdown()
    worker.join(timeout=5)
    assert got == ["x", None]


@pytest.mark.parametrize(
    "qps,burst,calls,expected_waits",
    [
        pytest.param(10, 3, 3, [0, 0, 0], id="a burst passes without waiting"),
        pytest.param(10, 2, 4, [0, 0, 0.1, 0.2], id="past the burst each request waits its turn"),
    ],
)
def test_rate_limiter_lets_a_burst_through_then_qps(qps: float, burst: int, calls: int, expected_waits: list[float]) -> None:
    bucket = TokenBucket(qps, burst, FakeClock())
    assert [bucket.reserve() for _ in range(calls)] == pytest.approx(expected_waits)


def test_rate_limiter_refills_with_time() -> None:
    clock = FakeClock()
    bucket = TokenBucket(5, 1, clock)
    assert bucket.reserve() == 0
    clock.advance(0.2)
    assert bucket.reserve() == 0
    assert bucket.reserve() == pytest.approx(0.2)


def test_rate_limiter_refuses_nonsense_settings() -> None:
    with pytest.raises(ValueError):
        TokenBucket(0, 1, FakeClock())


def test_a_queue_with_only_a_later_poll_is_settled_but_not_idle() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock)
    queue.add_after("poll", 60)
    assert queue.settled() and not queue.idle()
    clock.advance(60)
    assert not queue.settled(), "a poll that is due is work to do"
