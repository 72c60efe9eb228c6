"""The runtime of the controller's cycle loops (quota admission, its status flush, queue status, gang placement).

A loop is one thread that runs its `step` when woken, or when `wait()` seconds pass, and only
while this process leads. A step that reports a change runs again at once (back to back, as
Kueue's scheduler loop does) unless it asked the loop to `hold_off` (Kueue's backoff after a
cycle that admitted nothing: the events of the pause are then taken in one step); a step that
fails is logged and retried after `retry_after`.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from controller.adapters.writer import NotLeader

log = logging.getLogger(__name__)


class CycleLoop:
    def __init__(self, name: str, step: Callable[[], bool], is_leader: Callable[[], bool], *,
                 wait: Callable[[], float], retry_after: float = 1.0) -> None:
        self.name, self.step, self.is_leader, self.wait = name, step, is_leader, wait
        self.retry_after = retry_after
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._not_before = 0.0  # time.monotonic() before which no step starts

    def wake(self) -> None:
        if not self._wake.is_set():  # already set: the step to come sees this change too
            self._wake.set()

    def hold_off(self, seconds: float) -> None:
        """The next step starts no sooner than `seconds` from now (called from a step)."""
        self._not_before = time.monotonic() + seconds

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.wait())
            self._wake.clear()
            if self._stop.is_set() or not self.is_leader():
                continue
            try:
                while not self._pause() and self.step() and not self._stop.is_set():
                    pass
            except NotLeader:
                continue
            except Exception:
                log.exception("%s step failed; retrying in %.1fs", self.name, self.retry_after)
                self._stop.wait(self.retry_after)
                self._wake.set()

    def _pause(self) -> bool:
        """Wait out a hold-off; True if the loop was stopped meanwhile."""
        delay = self._not_before - time.monotonic()
        return delay > 0 and self._stop.wait(delay)
