import datetime as dt

import pytest

from batchgate.clock import UTC, FakeClock, SystemClock, format_time, parse_time


def test_fake_clock_moves_only_when_told() -> None:
    clock = FakeClock(dt.datetime(2025, 3, 1, tzinfo=UTC))
    assert clock.now() == clock.now()
    clock.advance(90)
    assert clock.now() == dt.datetime(2025, 3, 1, 0, 1, 30, tzinfo=UTC)
    assert clock.monotonic() == 90


def test_fake_clock_refuses_to_go_back() -> None:
    clock = FakeClock()
    with pytest.raises(ValueError):
        clock.advance(-1)
    with pytest.raises(ValueError):
        clock.set(clock.now() - dt.timedelta(seconds=1))


def test_system_clock_is_aware() -> None:
    assert SystemClock().now().tzinfo is not None


def test_metav1_time_round_trips() -> None:
    instant = dt.datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert format_time(instant) == "2025-01-02T03:04:05Z"
    assert parse_time("2025-01-02T03:04:05Z") == instant
