"""The answer cache: entries live `ttl` seconds on the injected clock, at most `size` of them."""

from __future__ import annotations

import pytest

from batchgate.clock import FakeClock
from webhook.authorization.cache import TTLCache


@pytest.mark.parametrize(
    ("advance", "found"),
    [pytest.param(9.9, "yes", id="an entry younger than the ttl is found"),
     pytest.param(10.0, None, id="an entry as old as the ttl is gone")],
)
def test_entries_live_ttl_seconds(advance: float, found: str | None) -> None:
    clock = FakeClock()
    cache: TTLCache[str, str] = TTLCache(clock, ttl=10.0, size=4)
    cache.put("k", "yes")
    clock.advance(advance)
    assert cache.get("k") == found


def test_the_oldest_entry_goes_first_when_full() -> None:
    cache: TTLCache[int, int] = TTLCache(FakeClock(), ttl=10.0, size=3)
    for key in range(5):
        cache.put(key, key)
    assert [cache.get(k) for k in range(5)] == [None, None, 2, 3, 4]
    assert len(cache) == 3


def test_a_renewed_entry_counts_as_new() -> None:
    cache: TTLCache[int, int] = TTLCache(FakeClock(), ttl=10.0, size=2)
    cache.put(1, 1)
    cache.put(2, 2)
    cache.put(1, 10)
    cache.put(3, 3)
    assert (cache.get(1), cache.get(2), cache.get(3)) == (10, None, 3)


@pytest.mark.parametrize(("ttl", "size"), [pytest.param(-1, 1, id="a negative ttl"), pytest.param(1, 0, id="no room")])
def test_a_nonsensical_cache_is_refused(ttl: float, size: int) -> None:
    with pytest.raises(ValueError, match="ttl must be"):
        TTLCache(FakeClock(), ttl, size)
