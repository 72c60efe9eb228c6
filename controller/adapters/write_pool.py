"""Background writers for the admission loop's decisions, most urgent first.

Decisions are written in parallel, as Kueue does: the assumption in the quota state already
holds the quota, so the next cycle need not wait for the API. Writes of one object run one at a
time, in the order submitted: a later one waits for the one in flight.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
from typing import Callable

from controller.adapters.writer import NotLeader
from controller.state.cache import ObjectKey

log = logging.getLogger(__name__)

Item = tuple[float, int, ObjectKey, Callable[[], object]]  # (rank, submitted, object, write)


def _stop_worker() -> None:
    """Queued by `stop`, one per worker, ahead of any write: wakes a waiting worker to end it."""


class WritePool:
    def __init__(self, name: str, workers: int) -> None:
        self._queue: queue.PriorityQueue[Item] = queue.PriorityQueue()
        self._seq = itertools.count()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._in_flight: set[ObjectKey] = set()
        self._follow_ups: dict[ObjectKey, list[Item]] = {}
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True) for i in range(workers)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        for _ in self._threads:
            self._queue.put((float("-inf"), next(self._seq), ObjectKey("", "", ""), _stop_worker))
        for thread in self._threads:
            if thread.is_alive():
                thread.join(timeout=10)

    def submit(self, key: ObjectKey, rank: float, write: Callable[[], object]) -> None:
        """Run `write` in the background; a lower `rank` goes first."""
        item = (rank, next(self._seq), key, write)
        with self._lock:
            if key in self._in_flight:
                self._follow_ups.setdefault(key, []).append(item)
                return
            self._in_flight.add(key)
        self._queue.put(item)

    def join(self, timeout: float | None = None) -> bool:
        """Wait until every submitted write has run; False if `timeout` passed first."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._in_flight, timeout)

    def _work(self) -> None:
        while True:
            _, _, key, write = self._queue.get()
            if write is _stop_worker:
                return
            try:
                write()
            except NotLeader:
                pass
            except Exception as exc:
                log.warning("writing %s failed: %s", key, exc)
            finally:
                with self._lock:
                    waiting = self._follow_ups.get(key)
                    if waiting:
                        self._queue.put(waiting.pop(0))
                        if not waiting:
                            del self._follow_ups[key]
                    else:
                        self._in_flight.discard(key)
                        self._idle.notify_all()
