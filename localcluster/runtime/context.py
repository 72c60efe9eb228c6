"""What every simulated controller is given: where the API is, who it is, and what time it is."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Protocol


class TimeSource(Protocol):
    def now(self) -> dt.datetime: ...


@dataclass(frozen=True)
class ControllerContext:
    api_url: str
    token: str
    ca_file: str | None
    clock: TimeSource
    speed: float = 1.0

    def wall_seconds(self, simulated: dt.timedelta) -> float:
        """Real seconds to wait for `simulated` time to pass on the cluster's clock."""
        return max(simulated.total_seconds(), 0.0) / self.speed
