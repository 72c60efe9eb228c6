"""The cycle-loop runtime shared by the admission loop, its status flush and the gang scheduler:
steps back to back while they change something, only while leading, and again after a failure."""

from __future__ import annotations

import threading
import time
from typing import Callable, Iterator

import pytest

from controller.adapters.admission import next_backoff
from controller.adapters.cycle_loop import CycleLoop
from controller.adapters.write_pool import WritePool
from controller.adapters.writer import NotLeader
from tests.controller.cluster import eventually
from tests.controller.decisions.trace_builders import wl_key

QUIET = 3600.0  # a wait so long that only wake() makes the loop step


class Steps:
    """A step that follows a script: True (changed), False (idle), or an exception to raise."""

    def __init__(self, script: list[object]) -> None:
        self.script, self.taken = list(script), 0

    def __call__(self) -> bool:
        self.taken += 1
        outcome = self.script.pop(0) if self.script else False
        if isinstance(outcome, BaseException):
            raise outcome
        return bool(outcome)


@pytest.fixture
def running() -> Iterator[Callable[..., CycleLoop]]:
    loops: list[CycleLoop] = []

    def start(step: Steps, leading: Callable[[], bool] = lambda: True, wait: float = QUIET) -> CycleLoop:
        loop = CycleLoop("test", step, leading, wait=lambda: wait, retry_after=0.01)
        loops.append(loop)
        loop.start()
        return loop
    yield start
    for loop in loops:
        loop.stop()


@pytest.mark.parametrize(("script", "steps"), [
    pytest.param([True, True, False], 3, id="a step that changed something runs again at once until one is idle"),
    pytest.param([RuntimeError("boom"), False], 2, id="a failed step is logged and retried"),
    pytest.param([NotLeader("lost"), False], 1, id="a write refused for lost leadership waits for the next wake"),
])
def test_one_wake_runs(running: Callable[..., CycleLoop], script: list[object], steps: int) -> None:
    step = Steps(script)
    loop = running(step)
    loop.wake()
    eventually(lambda: step.taken >= steps, what=f"{steps} steps")
    loop.stop()
    assert step.taken == steps


def test_a_step_that_holds_off_runs_again_only_after_the_pause() -> None:
    """Kueue's backoff after a cycle that admitted nothing: the next step waits, a wake does not cut it short."""
    started: list[float] = []

    def step() -> bool:
        started.append(time.monotonic())
        if len(started) == 1:
            loop.hold_off(0.3)
        return len(started) == 1

    loop = CycleLoop("test", step, lambda: True, wait=lambda: QUIET)
    loop.start()
    try:
        loop.wake()
        eventually(lambda: len(started) >= 1, what="the first step")
        loop.wake()
        eventually(lambda: len(started) >= 2, what="the step after the pause")
        assert started[1] - started[0] >= 0.3
    finally:
        loop.stop()


def test_nothing_runs_while_another_process_leads() -> None:
    leading = threading.Event()
    waits: list[float] = []

    def wait() -> float:
        waits.append(0.01)
        return 0.01

    step = Steps([False, False])
    loop = CycleLoop("test", step, leading.is_set, wait=wait)
    loop.start()
    try:
        eventually(lambda: len(waits) >= 3, what="the loop to go round while not leading")
        assert step.taken == 0
        leading.set()
        eventually(lambda: step.taken >= 1, what="a step once leading")
    finally:
        loop.stop()


def test_writes_of_one_object_run_in_order_and_join_waits_for_all() -> None:
    pool = WritePool("test-write", workers=4)
    pool.start()
    done: list[tuple[str, int]] = []
    try:
        for i in range(20):
            pool.submit(wl_key(f"ns/wl-{i % 3}"), float(i), lambda i=i: done.append((f"wl-{i % 3}", i)))
        assert pool.join(timeout=30)
    finally:
        pool.stop()
    assert len(done) == 20
    for key in ("wl-0", "wl-1", "wl-2"):
        mine = [i for k, i in done if k == key]
        assert mine == sorted(mine)


@pytest.mark.parametrize("previous, admitted, pause", [
    pytest.param(0.0, True, 0.0, id="after an admission the next cycle runs at once"),
    pytest.param(0.05, True, 0.0, id="an admission ends a backoff"),
    pytest.param(0.0, False, 0.001, id="a first cycle admitting nothing waits 1 ms"),
    pytest.param(0.004, False, 0.008, id="each further cycle admitting nothing doubles the pause"),
    pytest.param(0.08, False, 0.1, id="the pause stops growing at 100 ms"),
])
def test_the_admission_loops_backoff_is_kueues(previous: float, admitted: bool, pause: float) -> None:
    assert next_backoff(previous, admitted) == pytest.approx(pause)
