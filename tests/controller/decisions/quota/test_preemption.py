"""Preemption (within the ClusterQueue, reclaim within the cohort, borrowWithinCohort, candidate
order, minimal sets, overlapping targets, capacity reservation) and stop policies, as traces."""

from __future__ import annotations

import pytest

from tests.controller.decisions.scenario_check import check_scenario, expect
from tests.controller.decisions.trace_builders import (
    basic, cluster_queue, flavor, group, local_queue, quota, trace, workload,
)

MORE = "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, {} more needed"
PENDING_ONE = MORE + ". Pending the preemption of 1 workload(s)"


def cohort(*members: tuple[str, int, dict]) -> list[dict]:
    objects: list[dict] = [flavor()]
    for name, cpu, options in members:
        objects.append(cluster_queue(name, group({"default": {"cpu": cpu}}), cohort="c", **options))
        objects.append(local_queue(f"lq-{name}", name))
    return objects


def in_cq(name: str, cq: str, cpu: int, priority: int = 0, created: float = 0, **kw: object) -> dict:
    return workload(name, queue=f"lq-{cq}", cpu=cpu, priority=priority, created=created, **kw)  # type: ignore[arg-type]


LOWER = {"within": "LowerPriority"}
RECLAIM_ANY = {"reclaim": "Any"}

PREEMPTION_SCENARIOS = [
    pytest.param(
        trace(basic(cpu=10, within="LowerPriority") + [
            workload("low", cpu=8, priority=0, admitted_to="cq"), workload("high", cpu=5, priority=10, created=1)],
            {"cycles": 1}, {}),
        [expect(admitted=[], preempted=[("ns/low", "InClusterQueue", "ns/high")],
                pending={"ns/high": ("active", PENDING_ONE.format(3))}, counts={"reserving": 1, "admitted": 0}),
         expect(admitted=["ns/high"], pending={"ns/low": ("inadmissible", MORE.format(3))},
                counts={"reserving": 1, "admitted": 1})],
        id="LowerPriority preempts a lower priority workload which holds its quota until it stops",
    ),
    pytest.param(
        trace(basic(cpu=10, within="LowerPriority") + [
            workload("first", cpu=8, priority=10, admitted_to="cq"), workload("second", cpu=5, priority=10, created=1)]),
        [expect(admitted=[], preempted=[], pending={"ns/second": ("inadmissible", MORE.format(3))})],
        id="LowerPriority does not preempt a workload of equal priority",
    ),
    pytest.param(
        trace(basic(cpu=10, within="LowerOrNewerEqualPriority") + [
            workload("newer", cpu=8, priority=10, created=5, reserved=6, admitted_to="cq"),
            workload("older", cpu=5, priority=10, created=1)], {"cycles": 1}),
        [expect(preempted=[("ns/newer", "InClusterQueue", "ns/older")])],
        id="LowerOrNewerEqualPriority preempts a newer workload of equal priority",
    ),
    pytest.param(
        trace(basic(cpu=10, within="LowerOrNewerEqualPriority") + [
            workload("older", cpu=8, priority=10, created=0, admitted_to="cq"),
            workload("newer", cpu=5, priority=10, created=5)]),
        [expect(admitted=[], preempted=[], pending={"ns/newer": ("inadmissible", MORE.format(3))})],
        id="LowerOrNewerEqualPriority does not preempt an older workload of equal priority",
    ),
    pytest.param(
        trace(basic(cpu=10) + [
            workload("low", cpu=8, priority=0, admitted_to="cq"), workload("high", cpu=5, priority=10, created=1)]),
        [expect(admitted=[], preempted=[], pending={"ns/high": ("inadmissible", MORE.format(3))})],
        id="withinClusterQueue Never: a higher priority workload waits",
    ),
    pytest.param(
        trace(basic(cpu=10, within="LowerPriority") + [
            workload("l1", cpu=2, priority=1, admitted_to="cq", reserved=1),
            workload("l2", cpu=4, priority=0, admitted_to="cq", reserved=2),
            workload("l3", cpu=4, priority=0, admitted_to="cq", reserved=3),
            workload("high", cpu=4, priority=10, created=4)], {"cycles": 1}),
        [expect(preempted=[("ns/l3", "InClusterQueue", "ns/high")])],
        id="candidates go lowest priority first, then most recently admitted first",
    ),
    pytest.param(
        trace(basic(cpu=10, within="LowerPriority") + [
            workload("a", cpu=1, priority=0, admitted_to="cq"), workload("b", cpu=5, priority=1, admitted_to="cq"),
            workload("c", cpu=4, priority=5, admitted_to="cq"), workload("high", cpu=5, priority=10, created=1)],
            {"cycles": 1}),
        [expect(preempted=[("ns/b", "InClusterQueue", "ns/high")])],
        id="victims that turn out unnecessary are filled back so the set is minimal",
    ),
    pytest.param(
        trace(cohort(("cq-a", 5, RECLAIM_ANY), ("cq-b", 5, {})) + [
            in_cq("borrower", "cq-b", 8, priority=100, admitted_to="cq-b"), in_cq("owner", "cq-a", 4, created=1)],
            {"cycles": 1}, {}),
        [expect(preempted=[("ns/borrower", "InCohortReclamation", "ns/owner")], pending={"ns/owner": ("active", None)}),
         expect(admitted=["ns/owner"], pending={"ns/borrower": ("inadmissible", None)})],
        id="reclaimWithinCohort Any reclaims lent quota even from a higher priority borrower",
    ),
    pytest.param(
        trace(cohort(("cq-a", 5, {"reclaim": "LowerPriority"}), ("cq-b", 5, {})) + [
            in_cq("borrower", "cq-b", 8, priority=100, admitted_to="cq-b"), in_cq("owner", "cq-a", 4, created=1)]),
        [expect(admitted=[], preempted=[], pending={"ns/owner": ("inadmissible", MORE.format(2))})],
        id="reclaimWithinCohort LowerPriority leaves a higher priority borrower alone",
    ),
    pytest.param(
        trace(cohort(("cq-a", 5, {"reclaim": "LowerPriority"}), ("cq-b", 5, {})) + [
            in_cq("borrower", "cq-b", 8, priority=0, admitted_to="cq-b"), in_cq("owner", "cq-a", 4, priority=5, created=1)],
            {"cycles": 1}),
        [expect(preempted=[("ns/borrower", "InCohortReclamation", "ns/owner")])],
        id="reclaimWithinCohort LowerPriority reclaims from a lower priority borrower",
    ),
    pytest.param(
        trace(cohort(("cq-a", 5, RECLAIM_ANY), ("cq-b", 5, {})) + [
            in_cq("mine", "cq-a", 3, priority=100, admitted_to="cq-a"),
            in_cq("theirs", "cq-b", 5, priority=0, admitted_to="cq-b"), in_cq("new", "cq-a", 4, created=1)]),
        [expect(admitted=[], preempted=[], pending={"ns/new": ("inadmissible", MORE.format(2))})],
        id="a ClusterQueue that is not borrowing is never reclaimed from",
    ),
    pytest.param(
        trace(cohort(("cq-a", 5, {**LOWER, **RECLAIM_ANY}), ("cq-b", 5, {}), ("lender", 5, {})) + [
            in_cq("own-low", "cq-a", 5, priority=0, admitted_to="cq-a"),
            in_cq("borrower", "cq-b", 8, priority=0, admitted_to="cq-b"),
            in_cq("high", "cq-a", 4, priority=10, created=1)], {"cycles": 1}),
        [expect(preempted=[("ns/own-low", "InClusterQueue", "ns/high")])],
        id="a ClusterQueue at its nominal quota preempts its own workloads rather than reclaim while borrowing",
    ),
    pytest.param(
        trace(cohort(("cq-a", 5, {"reclaim": "LowerPriority", "borrow_within": "LowerPriority"}), ("cq-b", 5, {}),
                     ("lender", 5, {})) + [
            in_cq("borrower", "cq-b", 10, priority=0, admitted_to="cq-b"), in_cq("big", "cq-a", 8, priority=10, created=1)],
            {"cycles": 1}),
        [expect(preempted=[("ns/borrower", "InCohortReclaimWhileBorrowing", "ns/big")])],
        id="borrowWithinCohort LowerPriority preempts a lower priority borrower while borrowing",
    ),
    pytest.param(
        trace(cohort(("cq-a", 5, {"reclaim": "LowerPriority", "borrow_within": "LowerPriority", "threshold": 3}),
                     ("cq-b", 5, {}), ("lender", 5, {})) + [
            in_cq("borrower", "cq-b", 10, priority=5, admitted_to="cq-b"), in_cq("big", "cq-a", 8, priority=10, created=1)]),
        [expect(admitted=[], preempted=[], pending={"ns/big": ("inadmissible", MORE.format(3))})],
        id="borrowWithinCohort maxPriorityThreshold protects borrowers above the threshold",
    ),
    pytest.param(
        trace(cohort(("cq-a", 5, RECLAIM_ANY), ("cq-b", 5, {}), ("lender", 5, {})) + [
            in_cq("borrower", "cq-b", 10, priority=0, admitted_to="cq-b"), in_cq("big", "cq-a", 8, priority=10, created=1)]),
        [expect(admitted=[], preempted=[], pending={"ns/big": ("inadmissible", MORE.format(3))})],
        id="a workload needing more than its nominal quota cannot preempt without borrowWithinCohort",
    ),
    pytest.param(
        trace(cohort(("cq-a", 5, RECLAIM_ANY), ("cq-b", 5, RECLAIM_ANY), ("borrowing", 0, {})) + [
            in_cq("victim", "borrowing", 10, admitted_to="borrowing"),
            in_cq("x", "cq-a", 5, priority=1, created=1), in_cq("y", "cq-b", 5, priority=2, created=1)],
            {"cycles": 1}, {}),
        [expect(preempted=[("ns/victim", "InCohortReclamation", "ns/y")],
                pending={"ns/x": ("active", "Workload has overlapping preemption targets with another workload")}),
         expect(admitted=["ns/x", "ns/y"], pending={"ns/victim": ("inadmissible", None)})],
        id="two preemptors in one cycle never share a victim",
    ),
    pytest.param(
        trace(cohort(("cq-a", 5, {**LOWER, "reclaim": "LowerPriority"}), ("cq-b", 5, {}), ("lender", 2, {})) + [
            in_cq("a-own", "cq-a", 5, priority=100, admitted_to="cq-a"),
            in_cq("b-own", "cq-b", 4, priority=100, admitted_to="cq-b"),
            in_cq("x", "cq-a", 4, priority=50, created=1), in_cq("y", "cq-b", 2, priority=0, created=1)], {"cycles": 1}),
        [expect(admitted=[], pending={"ns/x": ("inadmissible", MORE.format(1)),
                                      "ns/y": ("active", "Workload no longer fits after processing another workload")})],
        id="a preemptor without victims reserves capacity when it could not reclaim it later",
    ),
    pytest.param(
        trace(cohort(("cq-a", 5, {**LOWER, **RECLAIM_ANY}), ("cq-b", 5, {}), ("lender", 2, {})) + [
            in_cq("a-own", "cq-a", 5, priority=100, admitted_to="cq-a"),
            in_cq("b-own", "cq-b", 4, priority=100, admitted_to="cq-b"),
            in_cq("x", "cq-a", 4, priority=50, created=1), in_cq("y", "cq-b", 2, priority=0, created=1)], {"cycles": 1}),
        [expect(admitted=["ns/y"], pending={"ns/x": ("inadmissible", MORE.format(1))})],
        id="with reclaimWithinCohort Any no capacity is held back (later Kueue fix)",
    ),
    pytest.param(
        trace(basic(cpu=10, within="LowerPriority") + [
            workload("low", cpu=8, priority=0, admitted_to="cq", evicted=True),
            workload("high", cpu=5, priority=10, created=1)], {"cycles": 1}),
        [expect(admitted=[], preempted=[], pending={"ns/high": ("active", PENDING_ONE.format(3))},
                counts={"reserving": 1, "admitted": 0})],
        id="an already evicted workload is chosen again without being preempted twice",
    ),
]

def two_flavor_cohort(within: str = "LowerPriority") -> list[dict]:
    """Kueue TestSchedule's `other` cohort: alpha owns 10 GPUs of on-demand and of spot, beta none."""
    options = {"within": within, "reclaim": "LowerPriority"}
    quotas = {"on-demand": {"nvidia.com/gpu": 10}, "spot": {"nvidia.com/gpu": 10}}
    return [flavor("on-demand"), flavor("spot"),
            cluster_queue("other-alpha", group(quotas), cohort="other", **options),
            cluster_queue("other-beta", group({"on-demand": {"nvidia.com/gpu": 0}, "spot": {"nvidia.com/gpu": 0}}),
                          cohort="other", **options),
            local_queue("alpha", "other-alpha"), local_queue("beta", "other-beta")]


UPSTREAM_SCENARIOS = [
    pytest.param(
        trace(two_flavor_cohort() + [
            workload("a1", queue="alpha", gpu=5, priority=50, admitted_to="other-alpha",
                     flavors={"nvidia.com/gpu": "on-demand"}),
            workload("b1", queue="beta", gpu=5, priority=50, admitted_to="other-beta", flavors={"nvidia.com/gpu": "spot"}),
            workload("preemptor", queue="alpha", gpu=6, priority=100, created=1)], {"cycles": 1}),
        [expect(admitted=[], preempted=[("ns/b1", "InCohortReclamation", "ns/preemptor")],
                pending={"ns/preemptor": ("active", None)})],
        id="prefer reclamation over cq priority based preemption (TestSchedule)",
    ),
    pytest.param(
        trace([flavor(), cluster_queue("cq-shared", group({"default": {"cpu": quota(4, borrow=0)}}), cohort="pwb"),
               cluster_queue("cq-a", group({"default": {"cpu": quota(0, borrow=3)}}), cohort="pwb",
                             reclaim="LowerPriority", borrow_within="LowerPriority"),
               cluster_queue("cq-b", group({"default": {"cpu": 0}}), cohort="pwb",
                             reclaim="LowerPriority", borrow_within="LowerPriority"),
               local_queue("lq-a", "cq-a"), local_queue("lq-b", "cq-b"),
               workload("admitted-a", queue="lq-a", cpu=2, admitted_to="cq-a"),
               workload("a", queue="lq-a", cpu=3, created=1), workload("b", queue="lq-b", cpu=1, created=2)],
              {"cycles": 1}),
        [expect(admitted=["ns/b"], pending={"ns/a": ("inadmissible", None)})],
        id="preemption while borrowing, workload waiting for preemption should not block a borrowing workload "
           "in another CQ (TestSchedule)",
    ),
]

STOP_SCENARIOS = [
    pytest.param(
        trace(basic(cpu=10, stop="Hold") + [workload("running", cpu=4, admitted_to="cq"), workload("new", cpu=2, created=1)],
              {}, {"apply": [cluster_queue("cq", cpu=10)]}),
        [expect(admitted=[], pending={"ns/new": ("active", "ClusterQueue cq is stopped")},
                counts={"admitted": 1, "reserving": 1}),
         expect(admitted=["ns/new"])],
        id="a held ClusterQueue admits nothing new but keeps what runs, until it is restarted",
    ),
    pytest.param(
        trace(basic(cpu=10, stop="HoldAndDrain") + [workload("running", cpu=4, admitted_to="cq")]),
        [expect(admitted=[], preempted=[], pending={"ns/running": ("active", "ClusterQueue cq is stopped")},
                counts={"admitted": 0, "reserving": 0})],
        id="a drained ClusterQueue evicts what runs and releases its quota",
    ),
    pytest.param(
        trace(basic(cpu=10)[:2] + [local_queue("lq", "cq", stop="Hold"), workload("running", cpu=4, admitted_to="cq"),
                                   workload("new", cpu=2, created=1)], {}, {"apply": [local_queue("lq", "cq")]}),
        [expect(admitted=[], pending={"ns/new": ("inadmissible", "LocalQueue lq is stopped")}, counts={"admitted": 1}),
         expect(admitted=["ns/new"], counts={"admitted": 2})],
        id="a held LocalQueue keeps its workloads from being admitted until it is restarted",
    ),
    pytest.param(
        trace(basic(cpu=10)[:2] + [local_queue("lq", "cq", stop="HoldAndDrain"), local_queue("other", "cq"),
                                   workload("mine", cpu=4, admitted_to="cq"),
                                   workload("theirs", queue="other", cpu=4, admitted_to="cq")]),
        [expect(admitted=[], pending={"ns/mine": ("inadmissible", "LocalQueue lq is stopped")},
                counts={"admitted": 1, "reserving": 1})],
        id="a drained LocalQueue evicts only its own workloads",
    ),
]


@pytest.mark.parametrize(("scenario", "steps"), PREEMPTION_SCENARIOS + UPSTREAM_SCENARIOS + STOP_SCENARIOS)
def test_preemption_and_stop_scenario(scenario: dict, steps: list[dict]) -> None:
    check_scenario(scenario, steps)
