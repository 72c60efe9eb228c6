"""Kueue's TestPreemption cases (pkg/scheduler/preemption/preemption_test.go, v0.10), replayed
through a full cycle: the same ClusterQueues, admitted workloads and incoming workload, and the
victims Kueue expects. (Upstream hands the preemptor its flavor assignment; here the cycle finds
it, so only cases where the cycle reaches the same Preempt mode are taken.)"""

from __future__ import annotations

import pytest

from controller.simulation import run_trace
from tests.controller.decisions.trace_builders import cluster_queue, flavor, group, local_queue, quota, trace, workload

LOWER = "LowerPriority"
QUEUES = {
    "standalone": cluster_queue("standalone", cpu=6, within=LOWER),
    "c1": cluster_queue("c1", group({"default": {"cpu": quota(6, borrow=6)}}), cohort="cohort", within=LOWER,
                        reclaim=LOWER),
    "c2": cluster_queue("c2", group({"default": {"cpu": quota(6, borrow=6)}}), cohort="cohort", reclaim="Any"),
    "preventStarvation": cluster_queue("preventStarvation", cpu=6, within="LowerOrNewerEqualPriority"),
    "lend1": cluster_queue("lend1", group({"default": {"cpu": quota(6, lend=4)}}), cohort="cohort-lend",
                           within=LOWER, reclaim=LOWER),
    "lend2": cluster_queue("lend2", group({"default": {"cpu": quota(6, lend=2)}}), cohort="cohort-lend",
                           within=LOWER, reclaim=LOWER),
}


def admitted(name: str, cq: str, cpu: int, priority: int = 0, **kw: object) -> dict:
    return workload(name, queue=cq, cpu=cpu, priority=priority, admitted_to=cq, **kw)  # type: ignore[arg-type]


CASES = [
    pytest.param([admitted("low", "standalone", 2, -1), admitted("mid", "standalone", 2), admitted("high", "standalone", 2, 1)],
                 ("standalone", 2, 1), {("ns/low", "InClusterQueue")}, id="preempt lowest priority"),
    pytest.param([admitted("low", "standalone", 2, -1), admitted("mid", "standalone", 2), admitted("high", "standalone", 2, 1)],
                 ("standalone", 3, 1), {("ns/low", "InClusterQueue"), ("ns/mid", "InClusterQueue")},
                 id="preempt multiple"),
    pytest.param([admitted("low", "standalone", 3, -1), admitted("mid", "standalone", 3)], ("standalone", 1, -1), set(),
                 id="no preemption for low priority"),
    pytest.param([admitted("low", "standalone", 3, -1), admitted("mid", "standalone", 3)], ("standalone", 4, 0), set(),
                 id="not enough low priority workloads"),
    pytest.param([admitted("low", "standalone", 1, -1), admitted("mid", "standalone", 1), admitted("high", "standalone", 3, 1)],
                 ("standalone", 2, 1), {("ns/low", "InClusterQueue")}, id="some free quota, preempt low priority"),
    pytest.param([admitted("low", "standalone", 1, -1), admitted("mid", "standalone", 2), admitted("high", "standalone", 3, 1)],
                 ("standalone", 2, 1), {("ns/mid", "InClusterQueue")}, id="minimal set excludes low priority"),
    pytest.param([admitted("c1-low", "c1", 3, -1), admitted("c2-mid", "c2", 3), admitted("c2-high", "c2", 6, 1)],
                 ("c1", 3, 1), {("ns/c2-mid", "InCohortReclamation")}, id="reclaim quota from borrower"),
    pytest.param([admitted("c1-high", "c1", 4, 1), admitted("c2-low-1", "c2", 4, -1), admitted("c2-low-2", "c2", 4, -1)],
                 ("c1", 4, 1), set(), id="not enough workloads borrowing"),
    pytest.param([admitted("c1", "c1", 2), admitted("c2-1", "c2", 4), admitted("c2-2", "c2", 4)], ("c1", 4, 0), set(),
                 id="do not reclaim borrowed quota from same priority for withinCohort=ReclaimFromLowerPriority"),
    pytest.param([admitted("c1-1", "c1", 4), admitted("c1-2", "c1", 4, 1), admitted("c2", "c2", 2)], ("c2", 4, 0),
                 {("ns/c1-1", "InCohortReclamation")},
                 id="reclaim borrowed quota from same priority for withinCohort=ReclaimFromAny"),
    pytest.param([admitted("wl1", "preventStarvation", 2, 2),
                  admitted("wl2", "preventStarvation", 2, 1, created=15, reserved=16),
                  admitted("wl3", "preventStarvation", 2, 1, created=15, reserved=15)],
                 ("preventStarvation", 2, 1), {("ns/wl2", "InClusterQueue")},
                 id="preempt newer workloads with the same priority"),
    pytest.param([admitted("lend1-low", "lend1", 3, -1), admitted("lend2-mid", "lend2", 3),
                  admitted("lend2-high", "lend2", 4, 1)], ("lend1", 3, 1), {("ns/lend2-mid", "InCohortReclamation")},
                 id="reclaim quota from lender"),
    pytest.param([admitted("lend1-low", "lend1", 3, -1), admitted("lend1-mid", "lend1", 2),
                  admitted("lend2-low", "lend2", 3, -1), admitted("lend2-mid", "lend2", 4)], ("lend1", 4, 0),
                 {("ns/lend1-low", "InClusterQueue"), ("ns/lend2-low", "InCohortReclamation")},
                 id="preempt from all ClusterQueues in cohort-lend"),
    pytest.param([admitted("lend2-low", "lend2", 10, -1)], ("lend1", 9, 0), set(),
                 id="cannot preempt from other ClusterQueues if exceeds requestable quota including lending limit"),
]


def preemption_trace(admitted_workloads: list, incoming: tuple) -> dict:
    """The case's queues (the target's and every cohort touched), its admitted workloads and `in`."""
    target, cpu, priority = incoming
    used = {target} | {w["status"]["admission"]["clusterQueue"] for w in admitted_workloads}
    cohorts = {QUEUES[name]["spec"].get("cohort") for name in used} - {None}
    queues = [q for name, q in QUEUES.items() if name in used or q["spec"].get("cohort") in cohorts]
    objects = [flavor(), *queues, *(local_queue(q["metadata"]["name"], q["metadata"]["name"]) for q in queues),
               *admitted_workloads, workload("in", queue=target, cpu=cpu, priority=priority, created=0)]
    return trace(objects, {"cycles": 1})


@pytest.mark.parametrize(("admitted_workloads", "incoming", "victims"), CASES)
def test_upstream_preemption_case(admitted_workloads: list, incoming: tuple, victims: set) -> None:
    report = run_trace(preemption_trace(admitted_workloads, incoming))[0]
    assert {(p["name"], p["reason"]) for p in report.preempted} == victims
    assert all(p["by"] == "ns/in" for p in report.preempted)
    assert [a["name"] for a in report.admitted] == []
