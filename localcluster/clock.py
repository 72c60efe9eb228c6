"""The cluster's time source: wall time, optionally sped up for demos.

`localcluster/` may not import the product's `batchgate.clock`, so it keeps this small twin
with the same shape (`now()`, `monotonic()`).
"""

from __future__ import annotations

import datetime as _dt
import time
from typing import Protocol

UTC = _dt.timezone.utc


class TimeSource(Protocol):
    def now(self) -> _dt.datetime: ...

    def monotonic(self) -> float: ...


class ScaledClock:
    """Real time from the moment of creation, running `speed` times faster than the wall."""

    def __init__(self, speed: float = 1.0) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.speed = speed
        self._start_wall = _dt.datetime.now(UTC)
        self._start_mono = time.monotonic()

    def monotonic(self) -> float:
        return (time.monotonic() - self._start_mono) * self.speed

    def now(self) -> _dt.datetime:
        return self._start_wall + _dt.timedelta(seconds=self.monotonic())


def rfc3339(instant: _dt.datetime) -> str:
    """metav1.Time: whole seconds, `Z`."""
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> _dt.datetime:
    return _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
