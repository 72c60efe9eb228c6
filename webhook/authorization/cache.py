"""A bounded, short-lived cache of authorization answers, shared by a worker's request threads.

Entries live `ttl` seconds (a permission granted or revoked is seen within that time) and the
cache holds at most `size` of them, dropping the oldest first, so a stream of distinct users and
kinds costs bounded memory. Time comes from the injected clock.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, Hashable, TypeVar

from batchgate.clock import Clock

ANSWER_TTL = 10.0
"""Seconds an authorization answer is reused by default: a permission granted or revoked takes
effect within this time (`batchgate webhook --authorization-cache-ttl`)."""

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class TTLCache(Generic[K, V]):
    def __init__(self, clock: Clock, ttl: float, size: int) -> None:
        if ttl < 0 or size < 1:
            raise ValueError(f"ttl must be >= 0 and size >= 1, got ttl={ttl} size={size}")
        self.clock, self.ttl, self.size = clock, ttl, size
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            expires, value = entry
            if self.clock.monotonic() >= expires:
                del self._entries[key]
                return None
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = (self.clock.monotonic() + self.ttl, value)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
