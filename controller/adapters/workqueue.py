"""A work queue keyed by object: each key waits at most once, is worked on by one worker at a time,
and comes back after failures with exponential backoff (client-go's workqueue semantics).

A key added while queued is not queued twice; a key added while being processed is queued again
when its worker calls `done`, so no change is lost and no object is reconciled concurrently.
A key waits for at most one delayed add, the earliest: otherwise every change that asks for a
periodic poll would start its own everlasting chain of polls. Delays are measured on the injected
Clock.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import deque
from typing import Generic, Hashable, TypeVar

from batchgate.clock import Clock

K = TypeVar("K", bound=Hashable)
"""The key type: the controller's queues hold `ObjectKey`s."""


class WorkQueue(Generic[K]):
    def __init__(self, clock: Clock, *, base_delay: float = 0.005, max_delay: float = 300.0) -> None:
        self.clock = clock
        self.base_delay, self.max_delay = base_delay, max_delay
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._waiting: list[tuple[float, int, K]] = []  # heap; entries superseded in _due are skipped
        self._due: dict[K, float] = {}  # each delayed key's one due time
        self._failures: dict[K, int] = {}
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._shutdown = False

    def add(self, key: K) -> None:
        with self._cond:
            self._add(key)

    def _add(self, key: K) -> None:
        if self._shutdown or key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._queue.append(key)
            self._cond.notify()

    def add_after(self, key: K, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        due = self.clock.monotonic() + delay
        with self._cond:
            if self._shutdown or self._due.get(key, due) < due:
                return
            self._due[key] = due
            heapq.heappush(self._waiting, (due, next(self._seq), key))
            self._cond.notify()

    def add_rate_limited(self, key: K, max_delay: float | None = None) -> float:
        """Back off after a failure: base_delay doubling per failure, capped at `max_delay` (default the queue's)."""
        cap = self.max_delay if max_delay is None else min(max_delay, self.max_delay)
        with self._cond:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
            delay = min(cap, self.base_delay * (2**min(failures, 64)))
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        with self._cond:
            self._failures.pop(key, None)

    def _promote_due(self) -> float | None:
        """Move due delayed keys into the queue; return seconds until the next one, if any."""
        now = self.clock.monotonic()
        while self._waiting and self._waiting[0][0] <= now:
            due, _, key = heapq.heappop(self._waiting)
            if self._due.get(key) == due:
                del self._due[key]
                self._add(key)
        return self._waiting[0][0] - now if self._waiting else None

    def get(self, timeout: float | None = None) -> K | None:
        """The next key to work on, or None after `timeout` seconds (or at shutdown)."""
        deadline = None if timeout is None else self.clock.monotonic() + timeout
        with self._cond:
            while True:
                next_due = self._promote_due()
                if self._queue:
                    key = self._queue.popleft()
                    self._processing.add(key)
                    self._dirty.discard(key)
                    return key
                if self._shutdown:
                    return None
                remaining = None if deadline is None else deadline - self.clock.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                waits = [w for w in (next_due, remaining) if w is not None]
                self._cond.wait(min(waits) if waits else None)

    def done(self, key: K) -> None:
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._queue.append(key)
                self._cond.notify()

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue) + len(self._due)

    def idle(self) -> bool:
        """Nothing queued, delayed or being worked on."""
        with self._cond:
            return not (self._queue or self._due or self._processing)

    def settled(self) -> bool:
        """Nothing ready or being worked on; keys delayed for later (periodic polls) do not count."""
        with self._cond:
            now = self.clock.monotonic()
            return not (self._queue or self._processing or any(due <= now for due in self._due.values()))

    def shutdown(self) -> None:
        with self._cond:
            self._shutdown = True
            self._cond.notify_all()
