"""Fair sharing (Kueue's `fairSharing.enable`, which MLBatch turns on): entries ordered by dominant
resource share, and preemption that takes from the cohort member with the highest share.
Cases from Kueue's TestSchedule with its `eng` cohort."""

from __future__ import annotations

import pytest

from controller.simulation import TraceError, run_trace
from tests.controller.decisions.scenario_check import check, expect
from tests.controller.decisions.trace_builders import cluster_queue, flavor, group, local_queue, namespace, quota, workload

ENG = {"matchExpressions": [{"key": "dep", "operator": "In", "values": ["eng"]}]}


def eng_cohort(*extra: dict) -> list[dict]:
    """TestSchedule's eng-alpha and eng-beta ClusterQueues (without eng-beta's model-a GPU group)."""
    return [
        flavor("on-demand"), flavor("spot"), namespace("eng-alpha", dep="eng"), namespace("eng-beta", dep="eng"),
        cluster_queue("eng-alpha", group({"on-demand": {"cpu": quota(50, borrow=50)}, "spot": {"cpu": quota(100, borrow=0)}}),
                      cohort="eng", strategy="StrictFIFO", selector=ENG),
        cluster_queue("eng-beta", group({"on-demand": {"cpu": quota(50, borrow=10)}, "spot": {"cpu": quota(0, borrow=100)}}),
                      cohort="eng", strategy="StrictFIFO", selector=ENG, reclaim="Any", within="LowerPriority"),
        local_queue("main", "eng-alpha", ns="eng-alpha"), local_queue("main", "eng-beta", ns="eng-beta"), *extra]


def on(ns: str, name: str, cpu: int, flavor_name: str = "on-demand", **kw: object) -> dict:
    return workload(name, ns=ns, queue="main", cpu=cpu, admitted_to=ns, flavors={"cpu": flavor_name}, **kw)  # type: ignore[arg-type]


LOWEST_SHARE = eng_cohort(
    cluster_queue("eng-shared", group({"on-demand": {"cpu": quota(10, borrow=0)}}), cohort="eng"),
    on("eng-alpha", "all-nominal", 50), on("eng-beta", "borrowing", 55),
    workload("older-new", ns="eng-beta", queue="main", cpu=1, created=0),
    workload("new", ns="eng-alpha", queue="main", cpu=5, created=60))


ENTRY_ORDER_CASES = [
    pytest.param(True, "eng-alpha/new", id="with fair sharing: schedule workload with lowest share first (TestSchedule)"),
    pytest.param(False, "eng-beta/older-new", id="without fair sharing the older workload goes first"),
]


def entry_order_trace(fair: bool) -> dict:
    return {"fairSharing": {"enable": fair}, "objects": LOWEST_SHARE, "steps": [{"cycles": 1}]}


@pytest.mark.parametrize(("fair", "admitted"), ENTRY_ORDER_CASES)
def test_entry_order_by_share(fair: bool, admitted: str) -> None:
    reports = run_trace(entry_order_trace(fair))
    check(reports[0], expect(admitted=[admitted]))


HIGHEST_SHARE = {"fairSharing": {"enable": True}, "steps": [{"cycles": 1}, {}], "objects": eng_cohort(
    cluster_queue("eng-gamma", group({"on-demand": {"cpu": quota(50, borrow=0)}}), cohort="eng", selector=ENG),
    namespace("eng-gamma", dep="eng"), local_queue("main", "eng-gamma", ns="eng-gamma"),
    on("eng-alpha", "all-spot", 100, "spot"),
    *(on("eng-alpha", f"alpha{i}", 20) for i in range(1, 5)),
    on("eng-gamma", "gamma1", 10), *(on("eng-gamma", f"gamma{i}", 20) for i in range(2, 5)),
    workload("preemptor", ns="eng-beta", queue="main", cpu=30, created=1))}


def test_with_fair_sharing_preempt_workload_from_cq_with_the_highest_share() -> None:
    reports = run_trace(HIGHEST_SHARE)
    # eng-beta stays within its nominal on-demand quota: reclamation, not the strategies (kueue#9494, as v0.17)
    check(reports[0], expect(admitted=[], preempted=[("eng-alpha/alpha1", "InCohortReclamation", "eng-beta/preemptor"),
                                                     ("eng-gamma/gamma1", "InCohortReclamation", "eng-beta/preemptor")]))
    check(reports[1], expect(admitted=["eng-beta/preemptor"], flavors={"eng-beta/preemptor": {"main": {"cpu": "on-demand"}}}))


@pytest.mark.parametrize(("block", "message"), [
    pytest.param({"enable": "yes"}, "fairSharing.enable: must be true or false", id="enable must be a boolean"),
    pytest.param({"enable": True, "preemptionStrategies": ["Fairest"]}, "fairSharing.preemptionStrategies[0]",
                 id="an unknown strategy is named"),
])
def test_bad_fair_sharing_blocks_are_refused(block: dict, message: str) -> None:
    with pytest.raises(TraceError, match=message.replace("[", r"\[")):
        run_trace({"fairSharing": block, "objects": [], "steps": []})


def _fair_cq(name: str, cpu: int) -> dict:
    return cluster_queue(name, group({"default": {"cpu": cpu}}), cohort="all", within="LowerPriority", reclaim="Any",
                         borrow_within="LowerPriority", threshold=-3)


def _held(name: str, cq: str, cpu: object = 1) -> dict:
    return workload(name, queue=cq, cpu=cpu, admitted_to=cq)


def _units(cq: str, n: int, start: int = 1) -> list[dict]:
    return [_held(f"{cq}{i}", cq) for i in range(start, start + n)]


FAIR_PREEMPTION_CASES = [
    pytest.param(_units("a", 3) + _units("b", 5) + _units("c", 1), ("c", 1), {"ns/b1"}, "InCohortReclamation",
                 id="reclaim nominal from user using the most"),
    pytest.param([_held("a1", "a", 3), _held("a2", "a", 1), _held("b1", "b", 2), _held("b2", "b", 3)], ("c", 3), {"ns/a1"}, "InCohortReclamation",
                 id="can reclaim from queue using less, if taking the latest workload from user using the most isn't enough"),
    pytest.param(_units("a", 3) + _units("b", 5) + _units("c", 1), ("a", 1), {"ns/b1"}, "InCohortFairSharing",
                 id="reclaim borrowable quota from user using the most"),
    pytest.param([_held("a1", "a", "500m"), _held("a2", "a", "500m"), _held("a3", "a", 3),
                  _held("b1", "b", "500m"), _held("b2", "b", "500m"), _held("b3", "b", 3)], ("c", 2), {"ns/a1", "ns/b1"}, "InCohortReclamation",
                 id="preempt one from each CQ borrowing"),
    pytest.param(_units("a", 3) + _units("b", 3) + _units("c", 3), ("c", 1), set(), None,
                 id="can't preempt when everyone under nominal"),
    pytest.param(_units("a", 3) + _units("b", 5), ("a", 2), set(), None, id="can't preempt when it would switch the imbalance"),
]


def fair_preemption_trace(held: list, incoming: tuple) -> dict:
    """Cohort `all`: a, b, c with 3 CPUs each, `held` admitted, `incoming` = (ClusterQueue, cpu)."""
    cq, cpu = incoming
    objects = [flavor(), *(_fair_cq(n, 3) for n in "abc"), cluster_queue("preemptible", cpu=0, cohort="all"),
               *(local_queue(n, n) for n in "abc"), *held, workload("incoming", queue=cq, cpu=cpu, created=1)]
    return {"fairSharing": {"enable": True}, "objects": objects, "steps": [{"cycles": 1}]}


@pytest.mark.parametrize(("held", "incoming", "victims", "reason"), FAIR_PREEMPTION_CASES)
def test_fair_preemptions(held: list, incoming: tuple, victims: set, reason: str | None) -> None:
    """Kueue's TestFairPreemptions, through a full cycle: v0.17's reasons, InCohortReclamation where the
    incoming workload's ClusterQueue stays within its nominal quota (kueue#9494)."""
    report = run_trace(fair_preemption_trace(held, incoming))[0]
    assert {p["name"] for p in report.preempted} == victims
    assert all(p["reason"] == reason for p in report.preempted)
