"""The credential refresh the kubernetes client runs before every request, run at most once a second."""

from __future__ import annotations

from typing import Any

from batchgate.clock import FakeClock
from kubeapi.client import at_most_every


def test_requests_within_the_interval_share_one_refresh_and_the_next_after_it_refreshes_again() -> None:
    clock = FakeClock()
    refreshed: list[Any] = []
    hook = at_most_every(1.0, clock, refreshed.append)
    for _ in range(3):
        hook("configuration")
    assert refreshed == ["configuration"]
    clock.advance(0.5)
    hook("configuration")
    assert len(refreshed) == 1
    clock.advance(0.5)
    hook("configuration")
    assert len(refreshed) == 2
