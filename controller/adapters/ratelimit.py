"""Client-side rate limiting (client-go's `--qps`/`--burst` token bucket).

A burst of writes — one per admitted Workload after a big cohort frees up — would otherwise hit
the API server all at once; the bucket lets `burst` requests through and then `qps` per second.
Tokens are reserved under a lock and the wait happens outside it, so waiting callers queue in
order of arrival.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from batchgate.clock import Clock


class TokenBucket:
    def __init__(self, qps: float, burst: int, clock: Clock, sleep: Callable[[float], None] = time.sleep) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("qps must be > 0 and burst >= 1")
        self.qps, self.burst = float(qps), int(burst)
        self._clock, self._sleep = clock, sleep
        self._tokens = float(burst)
        self._last = clock.monotonic()
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Take a token and return how long the caller must wait before using it."""
        with self._lock:
            now = self._clock.monotonic()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def acquire(self) -> None:
        wait = self.reserve()
        if wait > 0:
            self._sleep(wait)

    def spare(self) -> float:
        """Tokens available right now (negative while callers wait), without taking one."""
        with self._lock:
            now = self._clock.monotonic()
            return min(float(self.burst), self._tokens + (now - self._last) * self.qps)
