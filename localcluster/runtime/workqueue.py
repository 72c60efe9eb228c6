"""A de-duplicating work queue with delayed adds, like client-go's: a key is queued at most once
and never handed to two workers at the same time; changes during processing queue it again."""

from __future__ import annotations

import asyncio


class WorkQueue:
    def __init__(self) -> None:
        self._ready: asyncio.Queue[str] = asyncio.Queue()
        self._queued: set[str] = set()
        self._busy: set[str] = set()
        self._again: set[str] = set()
        self._timers: dict[str, asyncio.TimerHandle] = {}

    def add(self, key: str) -> None:
        if key in self._busy:
            self._again.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._ready.put_nowait(key)

    def add_after(self, key: str, wall_seconds: float) -> None:
        """Queue `key` after a delay; an earlier pending timer for the key wins."""
        if wall_seconds <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        due = loop.time() + wall_seconds
        timer = self._timers.get(key)
        if timer is not None and not timer.cancelled() and timer.when() <= due:
            return
        if timer is not None:
            timer.cancel()
        self._timers[key] = loop.call_at(due, self._fire, key)

    def _fire(self, key: str) -> None:
        self._timers.pop(key, None)
        self.add(key)

    async def get(self) -> str:
        key = await self._ready.get()
        self._queued.discard(key)
        self._busy.add(key)
        return key

    def done(self, key: str) -> None:
        self._busy.discard(key)
        if key in self._again:
            self._again.discard(key)
            self.add(key)

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
