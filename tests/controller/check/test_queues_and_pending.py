"""Queue and cohort figures, why pending work waits, and the findings about queues and workloads."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.check import findings as c
from controller.check.inventory import build_inventory, flatten
from controller.check.report import check
from batchgate.policy import FairSharing
from tests.controller.check.builders import codes, node, run_check
from tests.controller.decisions.trace_builders import (
    T0, at, basic, cluster_queue, flavor, group, local_queue, namespace, quota, workload,
)


def cpu_row(report: Any, cq: str) -> dict[str, Any]:
    summary = next(s for s in report.cluster_queues if s.name == cq)
    return next(r.to_json() for r in summary.rows if r.resource == "cpu")


def two_teams(a: Any = 10, b: Any = 10, **a_options: Any) -> list[dict[str, Any]]:
    return [flavor(), cluster_queue("a", cpu=a, cohort="c", **a_options), cluster_queue("b", cpu=b, cohort="c"),
            local_queue("lq", "a", ns="ta"), local_queue("lq", "b", ns="tb")]


@pytest.mark.parametrize("objects, cq, expected", [
    pytest.param([*basic(cpu=10), workload("w", admitted_to="cq", cpu=4)], "cq",
                 {"usage": "4", "borrowed": "0", "unusedLendable": "0", "available": "6"},
                 id="a queue without a cohort neither borrows nor lends and has nominal minus usage available"),
    pytest.param([*two_teams(), workload("w", ns="ta", queue="lq", admitted_to="a", cpu=15)], "a",
                 {"usage": "15", "borrowed": "5", "unusedLendable": "0", "available": "5"},
                 id="usage above nominal is borrowed from the cohort"),
    pytest.param([*two_teams(), workload("w", ns="ta", queue="lq", admitted_to="a", cpu=15)], "b",
                 {"usage": "0", "borrowed": "0", "unusedLendable": "10", "available": "5"},
                 id="an idle lender offers all its nominal but only what borrowers left is available to it"),
    pytest.param([flavor(), cluster_queue("a", group({"default": {"cpu": quota(10, lend=4)}}), cohort="c"),
                  cluster_queue("b", cpu=10, cohort="c"), local_queue("lq", "a", ns="ta")], "a",
                 {"lendingLimit": "4", "unusedLendable": "4", "available": "20"},
                 id="a lendingLimit caps what an idle queue offers its cohort"),
    pytest.param([flavor(), cluster_queue("a", group({"default": {"cpu": quota(10, lend=4)}}), cohort="c"),
                  cluster_queue("b", cpu=10, cohort="c"), local_queue("lq", "a", ns="ta"),
                  workload("w", ns="ta", queue="lq", admitted_to="a", cpu=8)], "a",
                 {"usage": "8", "unusedLendable": "2", "available": "12"},
                 id="usage above the guaranteed part eats into what a queue lends"),
    pytest.param([flavor(), cluster_queue("a", group({"default": {"cpu": quota(10, borrow=2)}}), cohort="c"),
                  cluster_queue("b", cpu=10, cohort="c")], "a",
                 {"borrowingLimit": "2", "available": "12"},
                 id="a borrowingLimit caps what a queue can take from its cohort"),
])
def test_queue_figures(objects: list[dict[str, Any]], cq: str, expected: dict[str, str]) -> None:
    row = cpu_row(run_check(objects), cq)
    assert {k: row[k] for k in expected} == expected


def test_cohort_totals_show_what_is_borrowed_and_what_the_pool_still_holds() -> None:
    objects = [*two_teams(), cluster_queue("slack", cpu=4, cohort="c"),
               workload("w", ns="ta", queue="lq", admitted_to="a", cpu=15)]
    [cohort] = run_check(objects).cohorts
    assert cohort.members == ("a", "b", "slack")
    [row] = [r.to_json() for r in cohort.rows]
    assert row == {"flavor": "default", "resource": "cpu", "nominalQuota": "24", "usage": "15", "borrowed": "5",
                   "lendablePool": "24", "poolUsed": "15", "poolFree": "9"}


def test_queue_counts_separate_pending_reserving_and_admitted() -> None:
    evicted = workload("e", admitted_to="cq", cpu=2, evicted=True)
    reserved_only = workload("r", admitted_to="cq", cpu=2)
    reserved_only["status"]["conditions"] = [reserved_only["status"]["conditions"][0]]
    objects = [*basic(cpu=10), workload("a", admitted_to="cq", cpu=2), evicted, reserved_only,
               workload("p", cpu=20, created=5)]
    [summary] = run_check(objects).cluster_queues
    assert (summary.pending, summary.reserving, summary.admitted) == (1, 3, 2)


def quota_reserved_false(obj: dict[str, Any], message: str) -> dict[str, Any]:
    obj["status"] = {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                                     "message": message, "lastTransitionTime": at(1)}]}
    return obj


@pytest.mark.parametrize("objects, reason, source", [
    pytest.param([*basic(cpu=10), quota_reserved_false(workload("w", cpu=4), "the controller's own words")],
                 "the controller's own words", "status",
                 id="the Workload's QuotaReserved=False message is the reason when there is one"),
    pytest.param([*basic(cpu=10), workload("w", cpu=20)],
                 "insufficient quota for cpu in flavor default, request > maximum capacity (20 > 10)", "computed",
                 id="a workload larger than any quota it can reach is told so"),
    pytest.param([*basic(cpu=10), workload("held", admitted_to="cq", cpu=8), workload("w", cpu=4, created=1)],
                 "insufficient unused quota for cpu in flavor default, 2 more needed", "computed",
                 id="a workload waiting for quota to be freed is told how much more it needs"),
    pytest.param([*basic(cpu=10, within="LowerPriority"), workload("held", admitted_to="cq", cpu=8),
                  workload("w", cpu=4, created=1, priority=10)],
                 "Pending the preemption of 1 workload(s)", "computed",
                 id="a workload that would preempt a lower-priority one says it waits for that preemption"),
    pytest.param([*basic(cpu=10), workload("w", cpu=4)],
                 "fits now in ClusterQueue cq", "computed",
                 id="a workload that fits now says nothing in the quotas holds it back"),
    pytest.param([*basic(cpu=10), workload("w", queue="nope", cpu=1)],
                 "LocalQueue nope doesn't exist", "computed",
                 id="a workload naming a missing LocalQueue is told so"),
    pytest.param([flavor(), local_queue("lq", "ghost"), workload("w", cpu=1)],
                 "ClusterQueue ghost doesn't exist", "computed",
                 id="a workload whose LocalQueue points at a missing ClusterQueue is told so"),
    pytest.param([cluster_queue("cq", cpu=10), local_queue("lq", "cq"), workload("w", cpu=1)],
                 "ClusterQueue cq is inactive", "computed",
                 id="a workload in a ClusterQueue whose flavor is missing is told the queue is inactive"),
    pytest.param([*basic(cpu=10, stop="Hold"), workload("w", cpu=1)],
                 "ClusterQueue cq is stopped", "computed",
                 id="a workload in a stopped ClusterQueue is told so"),
    pytest.param([*basic(cpu=10, selector={"matchLabels": {"team": "x"}}), namespace("ns"), workload("w", cpu=1)],
                 "Workload namespace doesn't match ClusterQueue selector", "computed",
                 id="a workload in a namespace the ClusterQueue does not select is told so"),
    pytest.param([*basic(cpu=10), workload("w", cpu=1, gpu=1)],
                 "resource nvidia.com/gpu unavailable in ClusterQueue", "computed",
                 id="a workload requesting a resource its queue does not cover is told so"),
])
def test_why_pending_work_waits(objects: list[dict[str, Any]], reason: str, source: str) -> None:
    [pending] = run_check(objects).pending
    assert reason in pending.reason
    assert pending.source == source


def test_pending_work_is_listed_per_queue_by_priority_then_age() -> None:
    objects = [*basic(cpu=1), workload("old", cpu=2, created=1), workload("new", cpu=2, created=2),
               workload("urgent", cpu=2, created=3, priority=5)]
    assert [p.key.namespaced_name for p in run_check(objects).pending] == ["ns/urgent", "ns/old", "ns/new"]


def test_finished_and_admitted_workloads_are_not_pending() -> None:
    finished = workload("done", cpu=1)
    finished["status"] = {"conditions": [{"type": "Finished", "status": "True", "reason": "Succeeded"}]}
    report = run_check([*basic(cpu=10), finished, workload("running", admitted_to="cq", cpu=1)])
    assert report.pending == ()


@pytest.mark.parametrize("objects, severity, code, subject", [
    pytest.param([cluster_queue("cq", cpu=10), local_queue("lq", "cq")], "error", c.MISSING_FLAVOR,
                 "ClusterQueue cq", id="a ClusterQueue naming a missing ResourceFlavor is an error"),
    pytest.param([flavor(), local_queue("lq", "ghost")], "error", c.MISSING_CLUSTER_QUEUE, "LocalQueue ns/lq",
                 id="a LocalQueue pointing at a missing ClusterQueue is an error"),
    pytest.param([*basic(cpu=10), workload("w", queue="nope", cpu=1)], "error", c.MISSING_LOCAL_QUEUE,
                 "Workload ns/w", id="a pending Workload naming a missing LocalQueue is an error"),
    pytest.param([*basic(cpu=10), workload("w", cpu=1, gpu=1)], "error", c.UNCOVERED_RESOURCE, "Workload ns/w",
                 id="a pending Workload requesting a resource no ClusterQueue covers is an error"),
    pytest.param([*basic(cpu=10), cluster_queue("gpus", group({"default": {"nvidia.com/gpu": 8}})),
                  workload("w", cpu=1, gpu=1)], "error", c.UNCOVERED_RESOURCE, "Workload ns/w",
                 id="a pending Workload requesting a resource only another ClusterQueue covers is an error"),
    pytest.param([flavor(), cluster_queue("cq", group({"default": {"cpu": quota(10, lend=12)}}), cohort="c"),
                  local_queue("lq", "cq")], "error", c.INVALID_CLUSTER_QUEUE, "ClusterQueue cq",
                 id="a ClusterQueue lending more than its nominal quota is invalid"),
    pytest.param([flavor(), cluster_queue("cq", group({"default": {"cpu": quota(10, borrow=2)}})),
                  local_queue("lq", "cq")], "error", c.INVALID_CLUSTER_QUEUE, "ClusterQueue cq",
                 id="a ClusterQueue with a borrowingLimit but no cohort is invalid"),
    pytest.param([*basic(cpu=10), {"kind": "ClusterQueue", "metadata": {"name": "bad"},
                                   "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                                       {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "-1"}]}]}]}}],
                 "error", c.INVALID_OBJECT, "ClusterQueue bad",
                 id="a ClusterQueue with a negative quota is reported with its field path"),
    pytest.param([*basic(cpu=10), {"kind": "Node", "metadata": {"name": "n"},
                                   "status": {"allocatable": {"cpu": "lots"}}}],
                 "error", c.INVALID_OBJECT, "Node n", id="a Node with an unparsable allocatable is reported"),
    pytest.param([*basic(cpu=10, stop="HoldAndDrain")], "warning", c.STOPPED_QUEUE, "ClusterQueue cq",
                 id="a stopped ClusterQueue is a warning"),
    pytest.param([flavor(), cluster_queue("cq", cpu=10), local_queue("lq", "cq", stop="Hold")], "warning",
                 c.STOPPED_QUEUE, "LocalQueue ns/lq", id="a stopped LocalQueue is a warning"),
    pytest.param([*basic(cpu=10, selector=None)], "warning", c.NO_NAMESPACE_SELECTOR, "ClusterQueue cq",
                 id="a ClusterQueue without a namespaceSelector admits from no namespace"),
    pytest.param([*basic(cpu=10, selector={"matchLabels": {"team": "x"}}), namespace("ns")], "warning",
                 c.NAMESPACE_NOT_SELECTED, "LocalQueue ns/lq",
                 id="a LocalQueue in a namespace its ClusterQueue does not select is a warning"),
    pytest.param([flavor(), cluster_queue("slack", cpu=10, cohort="c")], "info", c.NO_LOCAL_QUEUE,
                 "ClusterQueue slack", id="a ClusterQueue no LocalQueue points at is noted"),
    pytest.param([*basic(cpu=10), workload("w", admitted_to="gone", cpu=1)], "warning", c.ORPHANED_ADMISSION,
                 "Workload ns/w", id="a Workload holding quota in a missing ClusterQueue is a warning"),
    pytest.param([*basic(cpu=10), workload("w", admitted_to="cq", cpu=1, evicted=True)], "info",
                 c.EVICTION_IN_PROGRESS, "Workload ns/w",
                 id="an evicted Workload still holding quota is noted"),
])
def test_findings(objects: list[dict[str, Any]], severity: str, code: str, subject: str) -> None:
    report = run_check(objects)
    assert (severity, code, subject) in [(f.severity, f.code, f.subject) for f in report.findings]
    assert report.has_errors is (severity == "error" or bool(codes(report, "error")))


def test_a_clean_cluster_has_no_errors_or_warnings() -> None:
    report = run_check([node("n", cpu="10"), *basic(cpu=10), workload("w", admitted_to="cq", cpu=4)])
    assert codes(report, "error") == [] and codes(report, "warning") == []
    assert not report.has_errors


def test_findings_are_ordered_errors_then_warnings_then_info() -> None:
    report = run_check([flavor(), cluster_queue("slack", cpu=10, cohort="c"), cluster_queue("cq", cpu=10, stop="Hold"),
                        local_queue("lq", "ghost")])
    severities = [f.severity for f in report.findings]
    assert severities == sorted(severities, key=["error", "warning", "info"].index)
    assert severities[0] == "error" and "info" in severities


@settings(max_examples=60, deadline=None)
@given(nominals=st.lists(st.integers(0, 20), min_size=1, max_size=4),
       usages=st.lists(st.integers(0, 30), min_size=1, max_size=4),
       lend=st.lists(st.one_of(st.none(), st.integers(0, 20)), min_size=4, max_size=4))
def test_queue_figures_stay_consistent_whatever_the_observed_usage(
        nominals: list[int], usages: list[int], lend: list[int | None]) -> None:
    objects: list[dict[str, Any]] = [flavor()]
    for i, nominal in enumerate(nominals):
        limit = None if lend[i] is None else min(lend[i], nominal)
        objects.append(cluster_queue(f"q{i}", group({"default": {"cpu": quota(nominal, lend=limit)}}), cohort="c"))
        objects.append(local_queue("lq", f"q{i}", ns=f"t{i}"))
    for i, used in enumerate(usages[:len(nominals)]):
        if used:
            objects.append(workload(f"w{i}", ns=f"t{i}", admitted_to=f"q{i}", cpu=used))
    report = run_check(objects)
    for summary in report.cluster_queues:
        for row in summary.rows:
            assert 0 <= row.borrowed <= row.usage
            assert 0 <= row.unused_lendable <= row.nominal
            assert row.available >= 0
            assert row.borrowed == 0 or row.unused_lendable == 0  # a borrower has nothing idle to lend
    [cohort] = report.cohorts
    [row] = cohort.rows
    assert row.borrowed <= row.pool_used and row.nominal == sum(nominals) * 1000


def test_without_any_node_capacity_is_not_compared_but_said_so() -> None:
    report = run_check(basic(cpu=10))
    assert codes(report) == [c.NO_NODES]
    assert not report.has_errors


def test_objects_of_other_kinds_are_counted_so_a_misspelt_kind_shows() -> None:
    report = run_check([node("n", cpu="10"), *basic(cpu=10), {"kind": "Clusterqueue", "metadata": {"name": "x"}},
                        {"kind": "Deployment", "metadata": {"name": "d"}}])
    [ignored] = [f for f in report.findings if f.code == c.IGNORED_OBJECTS]
    assert ignored.reason == "objects of kinds the check does not read: Clusterqueue (1), Deployment (1)"


@pytest.mark.parametrize("fair_sharing, waits_for_preemption", [
    pytest.param(False, False, id="without fair sharing a queue needing more than its nominal cannot reclaim"),
    pytest.param(True, True, id="with fair sharing the same workload waits for the borrower to be preempted"),
])
def test_fair_sharing_changes_what_a_computed_reason_says(fair_sharing: bool, waits_for_preemption: bool) -> None:
    objects = [flavor(), cluster_queue("a", cpu=10, cohort="c", reclaim="Any"), cluster_queue("b", cpu=10, cohort="c"),
               local_queue("lq", "a", ns="ta"), local_queue("lq", "b", ns="tb"),
               workload("hog", ns="tb", queue="lq", admitted_to="b", cpu=18),
               workload("want", ns="ta", queue="lq", cpu=12, created=3)]
    [pending] = check(build_inventory(flatten(objects)), T0, FairSharing(enable=fair_sharing)).pending
    assert "insufficient unused quota for cpu in flavor default, 10 more needed" in pending.reason
    assert ("Pending the preemption of 1 workload(s)" in pending.reason) is waits_for_preemption
