"""We test the work queue the simulated components share: a key is queued once, never handed to
two workers at once, re-queued if it changed while being worked on, and delayed adds keep the
earliest time."""

from __future__ import annotations

import asyncio

from localcluster.runtime.base import merge_patch
from localcluster.runtime.workqueue import WorkQueue


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=5))


def test_a_key_added_twice_is_handed_out_once():
    async def scenario():
        queue = WorkQueue()
        queue.add("a")
        queue.add("a")
        queue.add("b")
        got = [await queue.get(), await queue.get()]
        assert not queue._ready.qsize()
        return got

    assert run(scenario()) == ["a", "b"]


def test_a_key_changed_while_busy_comes_back_after_done():
    async def scenario():
        queue = WorkQueue()
        queue.add("a")
        key = await queue.get()
        queue.add("a")  # changed while a worker holds it
        assert queue._ready.qsize() == 0
        queue.done(key)
        return await queue.get()

    assert run(scenario()) == "a"


def test_the_earliest_delayed_add_wins():
    async def scenario():
        queue = WorkQueue()
        loop = asyncio.get_running_loop()
        start = loop.time()
        queue.add_after("a", 0.05)
        queue.add_after("a", 5)  # later: ignored
        await queue.get()
        return loop.time() - start

    assert run(scenario()) < 1


def test_merge_patch_nulls_what_went_away():
    old = {"startTime": "t", "active": 2, "conditions": [{"type": "Suspended"}]}
    new = {"active": 0, "conditions": [{"type": "Suspended"}]}
    assert merge_patch(old, new) == {"active": 0, "startTime": None}
