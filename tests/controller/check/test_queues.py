"""Queue and cohort figures: quota, usage, borrowing and the counts of pending, reserving and admitted work."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.controller.check.builders import run_check
from tests.controller.decisions.trace_builders import basic, cluster_queue, flavor, group, local_queue, quota, workload


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
