"""We test the work queue and informer cache the simulated components share: a key is queued
once, never handed to two workers at once, re-queued if it changed while being worked on,
delayed adds keep the earliest time, and a deleted object is never resurrected by a late write."""

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


def test_an_informer_never_brings_back_an_object_whose_deletion_it_saw():
    from localcluster.runtime.client import PODS, Api
    from localcluster.runtime.informers import Informer

    informer = Informer(Api("https://127.0.0.1:1", token="t"), PODS)
    pod = {"metadata": {"namespace": "ns", "name": "p", "resourceVersion": "5"}}
    informer.remember(pod)
    informer.forget("ns", "p")
    informer.remember({"metadata": {"namespace": "ns", "name": "p", "resourceVersion": "4"}})  # a late write's answer
    assert informer.get("ns", "p") is None
    informer.remember({"metadata": {"namespace": "ns", "name": "p", "resourceVersion": "9"}})  # re-created later
    assert informer.get("ns", "p") is not None
