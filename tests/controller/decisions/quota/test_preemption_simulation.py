"""Flavor assignment judges a flavor that needs preemption by simulating it (kubernetes-sigs/kueue#5529,
batchgate's named fix): a flavor where the target search finds no victim is passed over for a later
one where preemption can make room. The first cases are the differential's seeds 441 and 384 (Kueue
v0.17 against batchgate before the fix) written small."""

from __future__ import annotations

import pytest

from controller.simulation import run_trace
from tests.controller.decisions.scenario_check import check, expect
from tests.controller.decisions.trace_builders import cluster_queue, flavor, group, local_queue, quota, workload

MORE = "insufficient unused quota for cpu in flavor {}, {} more needed"


def two_flavors(cq_name: str = "cq", f0: object = 4, f1: object = 4, **options: object) -> list[dict]:
    """Flavors f0 and f1, ClusterQueue `cq_name` (LowerPriority within it) with those cpu quotas, LocalQueue lq."""
    options.setdefault("within", "LowerPriority")
    return [flavor("f0"), flavor("f1"),
            cluster_queue(cq_name, group({"f0": {"cpu": f0}, "f1": {"cpu": f1}}), cohort="c", **options),  # type: ignore[arg-type]
            local_queue("lq", cq_name)]


def held(name: str, flavor_name: str, priority: int = 0, cpu: int = 4, cq: str = "cq", **kw: object) -> dict:
    return workload(name, cpu=cpu, priority=priority, admitted_to=cq, flavors={"cpu": flavor_name}, **kw)  # type: ignore[arg-type]


def preemptor(priority: int = 10, cpu: int = 4) -> dict:
    return workload("new", cpu=cpu, priority=priority, created=10)


# Seed 441, small: the preemptor's ClusterQueue borrows all of f0 (nominal 0) from a lender that
# is not borrowing, so under fair sharing f0 "needs preemption" but no workload there can go; in
# f1 a lower-priority workload of its own ClusterQueue can.
SEED_441 = [*two_flavors(f0=quota(0, borrow=4), f1=4, reclaim="Any"),
            cluster_queue("lender", group({"f0": {"cpu": 4}, "f1": {"cpu": 0}}), cohort="c"),
            local_queue("lq-lender", "lender"),
            held("lent", "f0", cq="lender", queue="lq-lender"), held("low", "f1"), preemptor()]

# Seed 384, small: in f0 the only workload has the preemptor's priority and is older; in f1 a
# priority-0 workload can go.
SEED_384 = [*two_flavors(), held("peer", "f0", priority=20), held("low", "f1"), preemptor(priority=20)]

CASES = [
    pytest.param(
        SEED_441, True,
        [expect(admitted=[], preempted=[("ns/low", "InClusterQueue", "ns/new")]),
         expect(admitted=["ns/new"], flavors={"ns/new": {"main": {"cpu": "f1"}}})],
        id="with fair sharing a preemptor that can borrow in f0 where no workload can go preempts in f1 (seed 441)",
    ),
    pytest.param(
        SEED_384, False,
        [expect(preempted=[("ns/low", "InClusterQueue", "ns/new")]),
         expect(admitted=["ns/new"], flavors={"ns/new": {"main": {"cpu": "f1"}}})],
        id="a preemptor whose only candidate in f0 has its priority preempts the lower one in f1 (seed 384)",
    ),
    pytest.param(
        [*two_flavors(), held("low0", "f0"), held("low1", "f1"), preemptor()], False,
        [expect(preempted=[("ns/low0", "InClusterQueue", "ns/new")]),
         expect(admitted=["ns/new"], flavors={"ns/new": {"main": {"cpu": "f0"}}})],
        id="where preemption in f0 can make room the preemptor stays in f0",
    ),
    pytest.param(
        [*two_flavors(), held("peer0", "f0", priority=10), held("peer1", "f1", priority=10), preemptor()], False,
        [expect(admitted=[], preempted=[],
                pending={"ns/new": ("inadmissible", "couldn't assign flavors to pod set main: "
                                    f"{MORE.format('f0', 4)}, {MORE.format('f1', 4)}")})],
        id="where no flavor has a victim the preemptor waits naming every flavor it tried",
    ),
    pytest.param(
        [*two_flavors(reclaim="Any"), cluster_queue("borrower", group({"f0": {"cpu": quota(0, borrow=4)}}), cohort="c"),
         local_queue("lq-borrower", "borrower"), held("borrowed", "f0", cq="borrower", queue="lq-borrower"),
         held("low", "f1"), preemptor()], True,
        [expect(preempted=[("ns/borrowed", "InCohortReclamation", "ns/new")]),  # within nominal: kueue#9494
         expect(admitted=["ns/new"], flavors={"ns/new": {"main": {"cpu": "f0"}}})],
        id="with fair sharing a preemptor that can take back its lent f0 stays in f0",
    ),
]

FUNGIBILITY = [
    pytest.param(
        "Preempt", [held("low", "f0")],
        [expect(preempted=[("ns/low", "InClusterQueue", "ns/new")]),
         expect(admitted=["ns/low", "ns/new"], flavors={"ns/new": {"main": {"cpu": "f0"}}, "ns/low": {"main": {"cpu": "f1"}}})],
        id="whenCanPreempt Preempt preempts in f0 where preemption can make room though f1 is free",
    ),
    pytest.param(
        "TryNextFlavor", [held("low", "f0")],
        [expect(admitted=["ns/new"], preempted=[], flavors={"ns/new": {"main": {"cpu": "f1"}}})],
        id="whenCanPreempt TryNextFlavor takes the free f1 without preempting",
    ),
    pytest.param(
        "Preempt", [held("peer", "f0", priority=10)],
        [expect(admitted=["ns/new"], preempted=[], flavors={"ns/new": {"main": {"cpu": "f1"}}})],
        id="whenCanPreempt Preempt moves on from f0 where preemption finds no victim",
    ),
]


@pytest.mark.parametrize(("objects", "fair", "steps"), CASES)
def test_a_flavor_without_victims_is_passed_over(objects: list[dict], fair: bool, steps: list[dict]) -> None:
    reports = run_trace({"fairSharing": {"enable": fair}, "objects": objects,
                         "steps": [{"cycles": 1}, {}][:len(steps)]})
    assert len(reports) == len(steps)
    for report, want in zip(reports, steps):
        check(report, want)


@pytest.mark.parametrize(("when_can_preempt", "held_objects", "steps"), FUNGIBILITY)
def test_when_can_preempt_with_the_simulation(when_can_preempt: str, held_objects: list[dict], steps: list[dict]) -> None:
    objects = [*two_flavors(when_can_preempt=when_can_preempt), *held_objects, preemptor()]
    reports = run_trace({"objects": objects, "steps": [{"cycles": 1}, {}][:len(steps)]})
    assert len(reports) == len(steps)
    for report, want in zip(reports, steps):
        check(report, want)


# Each resource's simulation finds victims in f0 (cpu: take back what `borrowed` borrows; memory:
# `own`, of lower priority), but together they cannot be had (over nominal memory, this queue may
# only preempt its own), so whenCanPreempt Preempt stops at f0 and the search finds nobody. Kueue's
# LastAssignment.PendingFlavors() then keeps the head in the heap (pkg/queue/cluster_queue.go
# requeueIfNotPresent) and its next attempt resumes at f1.
PENDING_FLAVORS = [
    flavor("f0"), flavor("f1"),
    cluster_queue("cq", group({"f0": {"cpu": 2, "memory": "2Gi"}, "f1": {"cpu": 4, "memory": "4Gi"}}), cohort="c",
                  within="LowerPriority", reclaim="Any", when_can_preempt="Preempt"),
    cluster_queue("other", group({"f0": {"cpu": quota(0, borrow=2), "memory": 0}, "f1": {"cpu": 0, "memory": 0}}),
                  cohort="c"),
    local_queue("lq", "cq"), local_queue("lq-other", "other"),
    workload("borrowed", queue="lq-other", cpu=2, admitted_to="other", flavors={"cpu": "f0"}),
    workload("own", memory="2Gi", admitted_to="cq", flavors={"memory": "f0"}),
    workload("new", cpu=1, memory="1Gi", priority=10, created=10)]


def test_a_head_whose_victims_cannot_be_had_together_resumes_at_the_next_flavor() -> None:
    first, second = run_trace({"objects": PENDING_FLAVORS, "steps": [{"cycles": 1}, {"cycles": 1}]})
    check(first, expect(admitted=[], preempted=[], pending={"ns/new": ("active", None)}))
    check(second, expect(admitted=["ns/new"], flavors={"ns/new": {"main": {"cpu": "f1", "memory": "f1"}}}))
