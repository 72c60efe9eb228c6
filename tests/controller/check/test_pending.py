"""Why pending work waits, and the pending list per queue by priority then age."""

from __future__ import annotations

from typing import Any

import pytest

from controller.check.inventory import build_inventory, flatten
from controller.check.report import check
from batchgate.policy import FairSharing
from tests.controller.check.builders import run_check
from tests.controller.decisions.trace_builders import (
    T0, at, basic, cluster_queue, flavor, local_queue, namespace, workload,
)


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
