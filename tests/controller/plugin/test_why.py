"""`kubectl batchgate why` from the check report: the shortfall, who goes first, stopped queues."""

from __future__ import annotations

from controller.plugin.why import render_text, why
from tests.controller.check.builders import run_check
from tests.controller.decisions.trace_builders import basic, workload
from tests.controller.plugin.test_tables import WORKLOADS


def test_why_a_workload_waits_names_the_shortfall_and_who_goes_first() -> None:
    report = run_check(WORKLOADS)
    second = next(o for o in WORKLOADS if o["metadata"]["name"] == "second")
    answer = why(report, "ns/second", second["spec"], "PENDING", "cq", owner="job/second")
    assert (answer.position, answer.reason_source) == (2, "computed")
    assert answer.let_in == ("1 workload ahead of it in ClusterQueue cq go first (higher priority, or queued earlier)",)
    first = next(o for o in WORKLOADS if o["metadata"]["name"] == "first")
    text = render_text(why(report, "ns/first", first["spec"], "PENDING", "cq"))
    assert "Status:        PENDING, position 1 in ClusterQueue cq" in text
    assert ("  - 2 more cpu free in ClusterQueue cq (it asks 8, flavor default has 6): as admitted workloads finish, "
            "or with more quota") in text


def test_why_a_stopped_queue_says_how_to_resume_it() -> None:
    objects = [*basic(cpu=10, stop="Hold"), workload("w", cpu=1)]
    w = objects[-1]
    answer = why(run_check(objects), "ns/w", {**w["spec"], "active": False}, "PENDING", "cq")
    assert "resume its ClusterQueue: kubectl batchgate resume clusterqueue cq" in answer.let_in
    assert "it is stopped (spec.active: false): kubectl batchgate resume workload w -n ns" in answer.let_in
    assert "ClusterQueue cq: stopPolicy is Hold: it admits nothing new" in answer.let_in


def test_why_names_a_missing_controller_first() -> None:
    report = run_check(WORKLOADS)
    second = next(o for o in WORKLOADS if o["metadata"]["name"] == "second")
    answer = why(report, "ns/second", second["spec"], "PENDING", "cq", no_controller="none has run here (no Lease x/y)")
    assert answer.let_in[0] == "a running batchgate controller: none has run here (no Lease x/y)"
    done = next(o for o in WORKLOADS if o["metadata"]["name"] == "done")
    assert why(report, "ns/done", done["spec"], "ADMITTED", "cq", no_controller="down").let_in == ("nothing: it is admitted",)
