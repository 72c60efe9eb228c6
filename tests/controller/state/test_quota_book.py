"""Kueue's quota arithmetic for flat cohorts (docs/quota.md), and the pending queues."""

from __future__ import annotations

import datetime as _dt
from collections import Counter

import pytest
from hypothesis import example, given, settings, strategies as st

from batchgate.api.kueue import ClusterQueue
from batchgate.quantity import parse_quantity
from controller.state.pending_queues import ClusterQueuePending, sort_key
from tests.controller.decisions.trace_builders import wl_key
from controller.state.quota_book import QuotaBook, UsageOverlay, format_units, to_units

FR = ("default", "cpu")


def cq(name: str, nominal: int, cohort: str = "c", borrow: int | None = None, lend: int | None = None) -> ClusterQueue:
    res = {"name": "cpu", "nominalQuota": nominal}
    if borrow is not None:
        res["borrowingLimit"] = borrow
    if lend is not None:
        res["lendingLimit"] = lend
    return ClusterQueue.from_dict({"metadata": {"name": name}, "spec": {"cohort": cohort, "resourceGroups": [
        {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [res]}]}]}})


def book_of(*queues: ClusterQueue, usage: dict[str, int] | None = None) -> QuotaBook:
    book = QuotaBook()
    for q in queues:
        book.set_cluster_queue(q)
    for name, used in (usage or {}).items():
        book.add_usage(name, {FR: used * 1000})
    return book


@pytest.mark.parametrize(("queues", "usage", "available", "potential"), [
    pytest.param([cq("a", 10, cohort="")], {"a": 4}, 6, 10, id="without a cohort only the nominal quota counts"),
    pytest.param([cq("a", 5), cq("b", 10)], {}, 15, 15, id="a cohort member can use all unused cohort quota"),
    pytest.param([cq("a", 5), cq("b", 10)], {"b": 7}, 8, 15, id="what others use is not available"),
    pytest.param([cq("a", 5, borrow=2), cq("b", 10)], {}, 7, 7, id="borrowingLimit caps above nominal"),
    pytest.param([cq("a", 5, borrow=2), cq("b", 10)], {"a": 6}, 1, 7, id="borrowingLimit counts what is already borrowed"),
    pytest.param([cq("a", 5), cq("b", 10, lend=4)], {}, 9, 9, id="lendingLimit caps what a member lends"),
    pytest.param([cq("a", 5), cq("b", 10, lend=4)], {"b": 6}, 9, 9,
                 id="a lender's use of its guaranteed part takes nothing from the cohort"),
    pytest.param([cq("a", 5, lend=0), cq("b", 10)], {"b": 10}, 5, 15,
                 id="a queue that lends nothing keeps its quota and may still borrow"),
    pytest.param([cq("a", 5), cq("b", 10)], {"b": 15}, 0, 15, id="available never goes below zero"),
])
def test_available_and_potential_follow_kueue(queues: list, usage: dict, available: int, potential: int) -> None:
    view = UsageOverlay(book_of(*queues, usage=usage))
    assert view.available("a", FR) == available * 1000
    assert view.potential_available("a", FR) == potential * 1000


def test_an_overlay_never_writes_to_the_book() -> None:
    book = book_of(cq("a", 5), cq("b", 10), usage={"b": 3})
    view = UsageOverlay(book)
    view.add("a", {FR: 9000})
    assert view.available("b", FR) == 3000 and view.usage("a", FR) == 9000
    assert book.usage["a"] == {} and book.cohort_usage["c"] == {FR: 3000}


def test_editing_a_queue_keeps_its_usage_and_moves_it_between_cohorts() -> None:
    book = book_of(cq("a", 5), cq("b", 10), usage={"a": 8})
    book.set_cluster_queue(cq("a", 5, cohort="other"))
    assert book.usage["a"] == {FR: 8000}
    assert book.cohort_usage["c"][FR] == 0 and book.cohort_usage["other"] == {FR: 8000}


@pytest.mark.parametrize(("resource", "value", "units", "text"), [
    pytest.param("cpu", "1.5", 1500, "1500m", id="cpu counts in millicores"),
    pytest.param("cpu", "0.0001", 1, "1m", id="a fraction of a millicore rounds up"),
    pytest.param("memory", "1Gi", 2**30, "1Gi", id="memory counts in bytes"),
    pytest.param("nvidia.com/gpu", "2", 2, "2", id="extended resources count whole units"),
])
def test_units_round_trip(resource: str, value: str, units: int, text: str) -> None:
    assert to_units(resource, parse_quantity(value)) == units
    assert format_units(resource, units) == text


def test_a_pending_queue_orders_by_priority_then_time_and_parks_aside() -> None:
    t0 = _dt.datetime(2025, 1, 1, tzinfo=_dt.timezone.utc)
    old_low, new_high, new_low = wl_key("ns/old-low"), wl_key("ns/new-high"), wl_key("ns/new-low")
    queue = ClusterQueuePending()
    queue.push(old_low, sort_key(0, t0, old_low))
    queue.push(new_high, sort_key(5, t0 + _dt.timedelta(seconds=9), new_high))
    queue.push(new_low, sort_key(0, t0 + _dt.timedelta(seconds=1), new_low))
    assert queue.head() == new_high
    queue.park(new_high)
    assert queue.head() == old_low and new_high in queue and len(queue) == 3
    queue.remove(old_low)
    assert queue.head() == new_low
    assert queue.unpark(lambda namespace: True) == 1 and queue.head() == new_high


def test_equal_priority_and_time_are_ordered_by_namespace_slash_name_as_written() -> None:
    """The tie order is that of the `namespace/name` strings ("team-a/x" before "team/x", as '-'
    sorts before '/'), not of (namespace, name) pairs: keys became ObjectKeys, decisions stayed."""
    t0 = _dt.datetime(2025, 1, 1, tzinfo=_dt.timezone.utc)
    queue = ClusterQueuePending()
    for ref in ("team/x", "team-a/x"):
        queue.push(wl_key(ref), sort_key(0, t0, wl_key(ref)))
    assert queue.head() == wl_key("team-a/x")


# A pending queue against a model of it: a dict of where each workload waits. Moving parked
# workloads back takes one of two paths (a few pushed, most rebuilt into a new heap): whichever
# it takes, the head is always the first active workload in queue order. With equivalence hashing
# (drawn, and switched on and off between steps) a workload's class is its number modulo 3 and has
# a bucket of its own: a class parked at once parks exactly its active members, an arrival of a
# class that did not fit waits parked, a workload pushed while its class is parked is tried alone,
# and asking back moves a parked class whole only where every namespace it holds is eligible
# (workloads are in three namespaces, each class in all; "unpark-ns0" asks back only the first's).
_QUEUE_OPS = st.lists(st.tuples(st.sampled_from(["push", "arrive", "park", "park-class", "remove", "unpark-all",
                                                 "unpark-ns0", "switch", "head"]),
                                st.integers(0, 11)), max_size=80)


@settings(max_examples=400, deadline=None)
@given(ops=_QUEUE_OPS, priorities=st.lists(st.integers(0, 2), min_size=12, max_size=12), hashing=st.booleans())
# a parked class across two namespaces, one of them asked back: only its workloads go
@example(ops=[("push", 0), ("push", 3), ("push", 9), ("park-class", 0), ("unpark-ns0", 0)], priorities=[0] * 12,
         hashing=True)
def test_a_pending_queue_heads_the_first_active_workload_whatever_moves_it(ops: list[tuple[str, int]],
                                                                         priorities: list[int], hashing: bool) -> None:
    t0 = _dt.datetime(2025, 1, 1, tzinfo=_dt.timezone.utc)
    keys = [wl_key(f"ns{i // 3 % 3}/w{i:02}") for i in range(12)]
    sort_keys = [sort_key(p, t0 + _dt.timedelta(seconds=i % 5), k) for i, (p, k) in enumerate(zip(priorities, keys))]
    queue, where, no_fit = ClusterQueuePending(), {}, set()

    def klass(i: int) -> int | None:
        return i % 3 if hashing else None

    for op, i in ops:
        if op == "push":
            queue.push(keys[i], sort_keys[i], klass(i))
            where[i] = "active"
        elif op == "arrive":
            parked = hashing and i % 3 in no_fit
            if parked:
                queue.arrive_parked(keys[i], sort_keys[i], klass(i))
            else:
                queue.push(keys[i], sort_keys[i], klass(i))
            where[i] = "parked" if parked else "active"
        elif op == "park" and i in where:
            queue.park(keys[i])
            where[i] = "parked"
        elif op == "park-class" and hashing:
            members = {j for j, at in where.items() if at == "active" and j % 3 == i % 3}
            assert queue.park_class(i % 3) == len(members)
            where.update({j: "parked" for j in members})
            no_fit.add(i % 3)
        elif op == "remove":
            queue.remove(keys[i])
            where.pop(i, None)
        elif op.startswith("unpark"):
            only_ns0 = op == "unpark-ns0"
            moved = queue.unpark(lambda namespace: not only_ns0 or namespace == "ns0")
            expected = {j for j, at in where.items() if at == "parked" and (not only_ns0 or j // 3 % 3 == 0)}
            assert moved == len(expected)
            where.update({j: "active" for j in expected})
            no_fit.clear()
        elif op == "switch":
            hashing = not hashing
            queue.repartition(lambda w: klass(int(w.name[1:])))
            if not hashing:
                queue.no_fit.clear()
                no_fit.clear()
        active = [j for j, at in where.items() if at == "active"]
        assert queue.head() == (keys[min(active, key=lambda j: sort_keys[j])] if active else None)
        assert len(queue) == len(where)
        assert (queue.active_count, queue.parked_count) == (len(active), len(where) - len(active))
        assert all(queue.is_active(keys[j]) == (at == "active") for j, at in where.items())
        assert all(bucket.namespaces == Counter(w.namespace for w in bucket.members) for bucket in queue.buckets.values())
