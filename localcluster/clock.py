"""The cluster's time source: wall time, optionally sped up for demos.

`localcluster/` may not import the product's `batchgate.clock`, so it keeps this small twin
with the same shape (`now()`, `monotonic()`); tests hand in a `ManualClock`.
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


class ManualClock:
    """A clock that moves only when told to (tests)."""

    def __init__(self, start: _dt.datetime) -> None:
        self._now = start
        self._origin = start

    def now(self) -> _dt.datetime:
        return self._now

    def monotonic(self) -> float:
        return (self._now - self._origin).total_seconds()

    def advance(self, seconds: float) -> None:
        self._now += _dt.timedelta(seconds=seconds)


def rfc3339(instant: _dt.datetime) -> str:
    """metav1.Time: whole seconds, `Z`."""
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(instant: _dt.datetime) -> str:
    """metav1.MicroTime: microseconds, `Z`."""
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> _dt.datetime:
    return _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
