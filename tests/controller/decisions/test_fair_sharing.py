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


@pytest.mark.parametrize(("fair", "admitted"), [
    pytest.param(True, "eng-alpha/new", id="with fair sharing: schedule workload with lowest share first (TestSchedule)"),
    pytest.param(False, "eng-beta/older-new", id="without fair sharing the older workload goes first"),
])
def test_entry_order_by_share(fair: bool, admitted: str) -> None:
    reports = run_trace({"fairSharing": {"enable": fair}, "objects": LOWEST_SHARE, "steps": [{"cycles": 1}]})
    check(reports[0], expect(admitted=[admitted]))


def test_with_fair_sharing_preempt_workload_from_cq_with_the_highest_share() -> None:
    objects = eng_cohort(
        cluster_queue("eng-gamma", group({"on-demand": {"cpu": quota(50, borrow=0)}}), cohort="eng", selector=ENG),
        namespace("eng-gamma", dep="eng"), local_queue("main", "eng-gamma", ns="eng-gamma"),
        on("eng-alpha", "all-spot", 100, "spot"),
        *(on("eng-alpha", f"alpha{i}", 20) for i in range(1, 5)),
        on("eng-gamma", "gamma1", 10), *(on("eng-gamma", f"gamma{i}", 20) for i in range(2, 5)),
        workload("preemptor", ns="eng-beta", queue="main", cpu=30, created=1))
    reports = run_trace({"fairSharing": {"enable": True}, "objects": objects, "steps": [{"cycles": 1}, {}]})
    check(reports[0], expect(admitted=[], preempted=[("eng-alpha/alpha1", "InCohortFairSharing", "eng-beta/preemptor"),
                                                     ("eng-gamma/gamma1", "InCohortFairSharing", "eng-beta/preemptor")]))
    check(reports[1], expect(admitted=["eng-beta/preemptor"], flavors={"eng-beta/preemptor": {"main": {"cpu": "on-demand"}}}))


@pytest.mark.parametrize(("block", "message"), [
    pytest.param({"enable": "yes"}, "fairSharing.enable: must be true or false", id="enable must be a boolean"),
    pytest.param({"enable": True, "preemptionStrategies": ["Fairest"]}, "fairSharing.preemptionStrategies[0]",
                 id="an unknown strategy is named"),
])
def test_bad_fair_sharing_blocks_are_refused(block: dict, message: str) -> None:
    with pytest.raises(TraceError, match=message.replace("[", r"\[")):
        run_trace({"fairSharing": block, "objects": [], "steps": []})
