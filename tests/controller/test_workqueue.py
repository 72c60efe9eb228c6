"""The work queue: per-key dedup, one worker per key, exponential backoff on failure (FakeClock time)."""

from __future__ import annotations

import threading

import pytest

from batchgate.clock import FakeClock, SystemClock
from controller.adapters.ratelimit import TokenBucket
from controller.adapters.workqueue import WorkQueue


def drain(queue: WorkQueue) -> list[object]:
    out = []
    while (key := queue.get(timeout=0)) is not None:
        out.append(key)
        queue.done(key)
    return out


def test_a_key_added_many_times_is_worked_on_once() -> None:
    queue = WorkQueue(FakeClock())
    for key in ("a", "b", "a", "a", "b"):
        queue.add(key)
    assert drain(queue) == ["a", "b"]


def test_a_key_added_while_processing_comes_back_after_done_not_before() -> None:
    queue = WorkQueue(FakeClock())
    queue.add("a")
    assert queue.get(timeout=0) == "a"
    queue.add("a")
    assert queue.get(timeout=0) is None, "no second worker may take a key in flight"
    queue.done("a")
    assert queue.get(timeout=0) == "a"
    assert not queue.idle(), "a key in flight keeps the queue busy"
    queue.done("a")
    assert queue.idle()


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
    assert queue.get(timeout=0) == "k", "the later delayed add is not lost"


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
