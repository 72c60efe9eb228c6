"""Spread kept-alive connections evenly over the gateway's worker processes.

The API server opens a few connections to a webhook and keeps them for minutes. All workers
poll one shared listening socket and whichever wakes first accepts, so a burst of connections
often lands on one worker: measured with bench/webhook_load.py (2 workers, 16 connections),
14 of 16 or all 16 on one process, which then serves alone on one core (about 1,400 req/s
instead of 3,000+, p99 two to three times higher).

Each worker publishes how many connections it holds in a table shared through fork. A worker
holding more than its least-loaded peer leaves a waiting connection to that peer, for at most
`ACCEPT_DEFER_LIMIT` seconds, so a stuck or busy peer never stalls a new connection for long.
"""

from __future__ import annotations

import mmap
from typing import Sequence

UNUSED = -1
"""A slot no live worker holds."""

ACCEPT_DEFER_LIMIT = 0.1
"""Seconds a worker leaves a waiting connection to less-loaded peers before taking it itself."""

ACCEPT_DEFER_PAUSE = 0.0005
"""Seconds a deferring worker sleeps before looking again (its request threads keep working)."""

_SLOT_BYTES = 8


def defer_accept(mine: int, peers: Sequence[int], waited: float, limit: float = ACCEPT_DEFER_LIMIT) -> bool:
    """Whether a worker holding `mine` connections should leave a waiting one to its peers.

    `peers` are the other slots' counts (`UNUSED` for free slots); `waited` is how long this
    worker has already deferred the connection. Ties accept, so a burst is taken in turns.
    """
    live = [count for count in peers if count != UNUSED]
    return bool(live) and mine > min(live) and waited < limit


class ConnectionTable:
    """Open connections per worker slot, in anonymous shared memory inherited through fork.

    The master claims a slot for each worker before forking it and releases it when the worker
    exits; the worker writes its own count. An aligned 8-byte store is atomic on the platforms
    we run on, and a reader acting on a count a moment old only costs a little balance.
    """

    def __init__(self, slots: int, reserved: int = 0):
        """`reserved` slots count as live workers holding nothing from the start, so the first
        worker to boot leaves connections to the ones still starting (up to the defer limit)."""
        if slots < 1 or not 0 <= reserved <= slots:
            raise ValueError(f"a connection table needs at least one slot and at most that many reserved, "
                             f"not {slots} and {reserved}")
        self._memory = mmap.mmap(-1, slots * _SLOT_BYTES)
        self._counts = memoryview(self._memory).cast("q")
        for slot in range(slots):
            self._counts[slot] = 0 if slot < reserved else UNUSED
        self._reserved = list(range(reserved))

    @property
    def slots(self) -> int:
        return len(self._counts)

    def claim(self) -> int | None:
        """A reserved slot not handed out yet, else a free slot now counted as holding no
        connections; None when all are taken."""
        if self._reserved:
            return self._reserved.pop(0)
        for slot, count in enumerate(self._counts):
            if count == UNUSED:
                self._counts[slot] = 0
                return slot
        return None

    def release(self, slot: int) -> None:
        self._counts[slot] = UNUSED

    def publish(self, slot: int, connections: int) -> None:
        self._counts[slot] = connections

    def count(self, slot: int) -> int:
        return self._counts[slot]

    def peers(self, slot: int) -> list[int]:
        """Every other slot's count (`UNUSED` included)."""
        return [count for other, count in enumerate(self._counts) if other != slot]
