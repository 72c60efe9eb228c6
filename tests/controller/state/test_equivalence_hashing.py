"""Equivalent workloads parked together (policy `admission.schedulingEquivalenceHashing`, Kueue's
gate SchedulingEquivalenceHashing, kubernetes-sigs/kueue#9694 and #11097): in a BestEffortFIFO
ClusterQueue a head parked as not fitting takes every waiting workload of its class (priority and
pod sets; not namespace, not creation time) with it, and one of that class arriving later is parked
at once, until the queue's parked workloads are next asked back."""

from __future__ import annotations

import datetime as _dt
from typing import Any

import pytest

from batchgate.clock import FakeClock
from controller.simulation import Simulation, run_trace
from tests.controller.decisions.trace_builders import (
    T0, basic, cluster_queue, flavor, local_queue, namespace, pod_set, trace, wl_key, workload,
)


def full_queue(strategy: str | None = None, hashing: bool = True) -> Simulation:
    """cq (4 CPUs, ns and other-ns) runs `running` (4 CPUs); waiting, oldest first: `big-1` (2 CPUs),
    `small` (1 CPU), `big-2` (2 CPUs), `big-3` (2 CPUs, in other-ns), `urgent` (2 CPUs, priority 5)."""
    sim = Simulation(FakeClock(T0))
    sim.state.set_equivalence_hashing(hashing)
    for obj in [flavor(), cluster_queue("cq", cpu=4, strategy=strategy), local_queue("lq", "cq"),
                local_queue("lq", "cq", ns="other-ns"),
                workload("running", cpu=4, admitted_to="cq"),
                workload("big-1", cpu=2, created=1), workload("small", cpu=1, created=2),
                workload("big-2", cpu=2, created=3), workload("big-3", ns="other-ns", cpu=2, created=4),
                workload("urgent", cpu=2, priority=5, created=5)]:
        sim.apply(obj)
    return sim


def waiting(sim: Simulation) -> dict[str, str | None]:
    return {name: sim.state.pending.state_of(wl_key(f"{ns}/{name}"))
            for ns, name in (("ns", "big-1"), ("ns", "small"), ("ns", "big-2"), ("other-ns", "big-3"),
                             ("ns", "urgent"))}


ALL_PARKED = {"big-1": "inadmissible", "small": "inadmissible", "big-2": "inadmissible",
              "big-3": "inadmissible", "urgent": "inadmissible"}


def test_a_head_that_does_not_fit_parks_its_class_and_only_its_class() -> None:
    sim = full_queue()
    sim.cycle()  # urgent (priority 5) is the head: nothing else has its priority
    assert waiting(sim) == {**{k: "active" for k in ALL_PARKED}, "urgent": "inadmissible"}
    sim.cycle()  # big-1: big-2 and big-3 (another namespace, created later) are of its class
    assert waiting(sim) == {**ALL_PARKED, "small": "active"}
    sim.run(None)
    assert waiting(sim) == ALL_PARKED
    assert sim.cycles == 3 + 1  # a head per class, not per workload; then one that finds no head


def test_without_the_switch_every_workload_is_tried_in_turn() -> None:
    sim = full_queue(hashing=False)
    sim.run(None)
    assert waiting(sim) == ALL_PARKED
    assert sim.cycles == 5 + 1


def test_a_strict_fifo_queue_keeps_its_order() -> None:
    sim = full_queue(strategy="StrictFIFO")
    sim.cycle()
    assert waiting(sim) == {**{k: "active" for k in ALL_PARKED}}  # the head blocks, nothing is parked


def test_an_arrival_of_a_class_that_did_not_fit_is_parked_at_once_until_the_queue_is_asked_back() -> None:
    sim = full_queue()
    sim.run(None)
    sim.apply(workload("big-4", cpu=2, created=6))
    sim.apply(workload("medium", cpu=3, created=7))
    assert sim.state.pending.state_of(wl_key("ns/big-4")) == "inadmissible"
    assert sim.state.pending.state_of(wl_key("ns/medium")) == "active"  # a class not tried yet
    sim.finish("ns/running")  # asks the queue back: every class is tried afresh
    sim.apply(workload("big-5", cpu=2, created=8))
    assert sim.state.pending.state_of(wl_key("ns/big-5")) == "active"
    sim.run(None)
    admitted = {key.name for key in sim.state.admitted}
    assert admitted == {"urgent", "big-1"}  # priority first, then the oldest of what fits


def test_switching_it_off_forgets_the_classes_and_leaves_the_parked_to_the_next_ask_back() -> None:
    sim = full_queue()
    sim.run(None)
    sim.state.set_equivalence_hashing(False)
    sim.apply(workload("big-4", cpu=2, created=6))
    assert sim.state.pending.state_of(wl_key("ns/big-4")) == "active"
    assert waiting(sim) == ALL_PARKED


@pytest.mark.parametrize("second, parked_with_it", [
    pytest.param(workload("twin", cpu=2, created=2), True, id="same priority and requests: the same class"),
    pytest.param(workload("twin", cpu=2, created=2, priority=-1), False, id="another priority: another class"),
    pytest.param(workload("twin", pod_sets=[pod_set(cpu=1, count=2)], created=2), False,
                 id="the same total in another count: another class"),
    pytest.param(workload("twin", pod_sets=[pod_set(cpu=2, node_selector={"zone": "a"})], created=2), False,
                 id="a node selector: another class"),
])
def test_a_class_is_priority_and_pod_sets(second: dict[str, Any], parked_with_it: bool) -> None:
    sim = Simulation(FakeClock(T0))
    sim.state.set_equivalence_hashing(True)
    for obj in [*basic(cpu=2), workload("running", cpu=2, admitted_to="cq"), workload("first", cpu=2, created=1),
                second]:
        sim.apply(obj)
    sim.cycle()
    assert sim.state.pending.state_of(wl_key("ns/first")) == "inadmissible"
    assert sim.state.pending.state_of(wl_key("ns/twin")) == ("inadmissible" if parked_with_it else "active")


@pytest.mark.parametrize("held, waiting, preempted, parked", [
    pytest.param(0, 9, ["held"], "active", id="a head that preempts goes back to the heap: nothing is parked"),
    pytest.param(9, 1, [], "inadmissible", id="a head with no victim to take parks its class (PreemptionNoCandidates)"),
])
def test_a_head_that_needs_preemption_parks_its_class_only_without_a_victim(held: int, waiting: int,
                                                                             preempted: list[str], parked: str) -> None:
    sim = Simulation(FakeClock(T0))
    sim.state.set_equivalence_hashing(True)
    for obj in [*basic(cpu=2, within="LowerPriority"), workload("held", cpu=2, priority=held, admitted_to="cq"),
                workload("head", cpu=2, priority=waiting, created=1), workload("twin", cpu=2, priority=waiting, created=2)]:
        sim.apply(obj)
    effects = sim.cycle()
    assert [p.target.workload.name for p in effects.preempted] == preempted
    assert sim.state.pending.state_of(wl_key("ns/head")) == parked
    assert sim.state.pending.state_of(wl_key("ns/twin")) == parked


def test_a_trace_has_it_on_by_default_and_may_switch_it_off() -> None:
    objects = [*basic(cpu=2), workload("running", cpu=2, admitted_to="cq"),
               *(workload(f"w{i}", cpu=2, created=i + 1) for i in range(4))]
    default = run_trace(trace(objects, {"cycles": 1}))
    off = run_trace({**trace(objects, {"cycles": 1}), "admission": {"schedulingEquivalenceHashing": False}})
    assert default[-1].counts["pendingInadmissible"] == 4 and off[-1].counts["pendingInadmissible"] == 1


def test_a_workload_changed_while_in_its_heap_stays_there() -> None:
    """Kueue's PushOrUpdate checks the classes only for a workload not in the heap: an update in
    place is tried as before, even into a class that did not fit."""
    sim = full_queue()
    sim.cycle()
    sim.cycle()  # the class of big-1 parked; small still waits in the heap
    sim.apply(workload("small", cpu=2, created=2))  # now of big-1's class
    assert sim.state.pending.state_of(wl_key("ns/small")) == "active"
    sim.apply(workload("big-2", cpu=1, created=3))  # changed while parked: arrives again, of a class not tried
    assert sim.state.pending.state_of(wl_key("ns/big-2")) == "active"


def test_an_evicted_workload_of_a_class_that_did_not_fit_waits_parked_and_a_failed_admission_does_not() -> None:
    """With a requeue period the release does not clear the classes yet: an evicted workload comes
    back as an arrival and is parked with its class; one whose admission could not be written is
    retried at once (Kueue's immediate requeue after a failed admission)."""
    for retry, expected in ((False, "inadmissible"), (True, "active")):
        sim = full_queue()
        sim.state.set_requeue_batch(_dt.timedelta(seconds=1))
        sim.apply(workload("held", ns="other-ns", cpu=2, created=0, admitted_to="cq"))
        sim.run(None)
        sim.state.release(wl_key("other-ns/held"), requeue=True, retry=retry)
        assert sim.state.pending.state_of(wl_key("other-ns/held")) == expected


@pytest.mark.parametrize("strategy", ["BestEffortFIFO", "StrictFIFO"])
def test_a_head_parked_for_its_namespace_parks_nothing_else(strategy: str) -> None:
    """The class is not the namespace, so a head whose namespace the queue does not select says
    nothing of its twins in selected namespaces: only a head that found no room parks its class
    (Kueue v0.18, kubernetes-sigs/kueue#11097; v0.17 parked the twins too)."""
    selector = {"matchLabels": {"team": "a"}}
    sim = Simulation(FakeClock(T0))
    sim.state.set_equivalence_hashing(True)
    for obj in [namespace("ns"), namespace("ns-a", team="a"), flavor(),
                cluster_queue("cq", cpu=4, strategy=strategy, selector=selector),
                local_queue("lq", "cq"), local_queue("lq", "cq", ns="ns-a"),
                workload("outsider", cpu=2, created=1), workload("twin", ns="ns-a", cpu=2, created=2)]:
        sim.apply(obj)
    sim.cycle()
    assert sim.state.pending.state_of(wl_key("ns/outsider")) == "inadmissible"
    assert sim.state.pending.state_of(wl_key("ns-a/twin")) == "active"
    sim.cycle()
    assert wl_key("ns-a/twin") in sim.state.admitted


def test_an_older_arrival_of_a_parked_class_waits_even_where_its_age_would_let_it_preempt() -> None:
    """Creation time is not in the class (Kueue's hash leaves it out too): under
    LowerOrNewerEqualPriority an older workload could preempt what a newer twin could not, yet it
    arrives into its parked class and waits for the next ask-back. Without the switch it is tried
    and preempts at once."""
    for hashing, preempted in ((True, []), (False, ["held"])):
        sim = Simulation(FakeClock(T0))
        sim.state.set_equivalence_hashing(hashing)
        for obj in [*basic(cpu=4, within="LowerOrNewerEqualPriority"),
                    workload("held", cpu=4, priority=1, created=10, admitted_to="cq"),
                    workload("newer", cpu=4, priority=1, created=20)]:
            sim.apply(obj)
        sim.cycle()  # newer may not preempt held, which is older: its class is parked
        sim.apply(workload("older", cpu=4, priority=1, created=5))
        effects = sim.cycle()
        assert [p.target.workload.name for p in effects.preempted] == preempted


def test_a_workload_parked_with_its_class_reads_the_reason_of_the_head_that_parked_it() -> None:
    """Untried, it would meet the head's answer: `batchgate why` and the reasons written say so,
    for an arrival into the parked class too."""
    sim = full_queue()
    sim.cycle()
    sim.cycle()  # big-1 does not fit and parks big-2 and big-3
    said = sim.state.pending_reason(wl_key("ns/big-1"))
    assert said[0] == "inadmissible" and "more needed" in said[1]
    assert sim.state.pending_reason(wl_key("ns/big-2")) == said
    assert sim.state.pending_reason(wl_key("other-ns/big-3")) == said
    sim.apply(workload("big-4", cpu=2, created=6))
    assert sim.state.pending_reason(wl_key("ns/big-4")) == said
