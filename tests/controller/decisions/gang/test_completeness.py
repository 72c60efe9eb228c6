"""A partly finished gang never holds quota forever (issue 20 item 1), as tables.

A Job's Workload counts the pods that remain to run (Kueue's reclaimablePods); its quota and its
PodGroup shrink with it; a gang its workload can never complete is deactivated, not waited on.
"""

from __future__ import annotations

import copy
import datetime as _dt
from decimal import Decimal
from typing import Any

import pytest

from batchgate import keys
from batchgate.api.kueue import Workload
from batchgate.kinds import QUEUED
from controller.decisions.gang import podgroups as pg
from controller.decisions.gang.completeness import never_complete
from controller.decisions.jobs import integration as ji
from controller.decisions.jobs.podsets import reclaimable_pods
from controller.decisions.jobs.workloads import PriorityClasses, desired_workload
from tests.controller.builders import a_job

JOB_KIND = QUEUED["Job"]
NOW = _dt.datetime(2026, 1, 1, tzinfo=_dt.timezone.utc)


def job(parallelism: int = 3, completions: int | None = 3, *, indexed: bool = True, suspend: bool = False,
        **status: Any) -> dict[str, Any]:
    obj = a_job(parallelism=parallelism, completions=completions, suspend=suspend)
    if indexed:
        obj["spec"]["completionMode"] = "Indexed"
    obj["spec"]["template"]["metadata"] = {"labels": {keys.POD_GROUP_LABEL: "train"}}
    obj["status"] = status
    return obj


@pytest.mark.parametrize("obj, expected", [
    pytest.param(job(), {}, id="a Job that has not finished anything reclaims nothing"),
    pytest.param(job(completedIndexes="2", succeeded=1), {"main": 1},
                 id="an Indexed Job whose index 2 succeeded has one pod fewer to run"),
    pytest.param(job(completedIndexes="0-1", succeeded=2), {"main": 2}, id="two of three indexes done leave one pod"),
    pytest.param(job(completedIndexes="0", failedIndexes="2", succeeded=1), {"main": 2},
                 id="indexes failed for good count as finished too"),
    pytest.param(job(completedIndexes="5,9", succeeded=2), {}, id="indexes beyond completions are ignored"),
    pytest.param(job(3, 6, completedIndexes="0-2", succeeded=3), {},
                 id="remaining work that still fills every parallel slot reclaims nothing"),
    pytest.param(job(3, 6, completedIndexes="0-3", succeeded=4), {"main": 1},
                 id="once fewer completions remain than slots, the difference is reclaimed"),
    pytest.param(job(3, 3, indexed=False, succeeded=1), {"main": 1}, id="a plain Job counts its succeeded pods"),
    pytest.param(job(5, 3, indexed=False, succeeded=1), {"main": 1},
                 id="with parallelism above completions only the finished pod is reclaimed"),
    pytest.param(job(1, 1, indexed=False, succeeded=1), {"main": 1}, id="a finished single-pod Job reclaims its pod"),
])
def test_reclaimable_pods(obj: dict[str, Any], expected: dict[str, int]) -> None:
    assert reclaimable_pods(obj, JOB_KIND) == expected


def workload(obj: dict[str, Any], *, admitted: bool = True, reclaimable: int = 0, evicted: bool = False) -> dict[str, Any]:
    wl = desired_workload(obj, JOB_KIND, PriorityClasses())
    conditions = []
    if admitted:
        conditions += [{"type": keys.COND_QUOTA_RESERVED, "status": "True", "reason": "QuotaReserved", "message": ""},
                       {"type": keys.COND_ADMITTED, "status": "True", "reason": "Admitted", "message": ""}]
    if evicted:
        conditions.append({"type": keys.COND_EVICTED, "status": "True", "reason": "Preempted", "message": ""})
    wl["status"] = {"conditions": conditions}
    if admitted:
        wl["status"]["admission"] = {"clusterQueue": "cq", "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "3"}, "count": 3}]}
    if reclaimable:
        wl["status"]["reclaimablePods"] = [{"name": "main", "count": reclaimable}]
    wl["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    return wl


def decide(obj: dict[str, Any], wl: dict[str, Any]) -> list[ji.Action]:
    return ji.reconcile_job(obj, JOB_KIND, wl, owner=None, classes=PriorityClasses(), flavors={"default": {"spec": {}}},
                            now="2026-01-01T00:00:00Z")


@pytest.mark.parametrize("obj, wl, expected", [
    pytest.param(job(completedIndexes="2", succeeded=1), workload(job()), {"reclaimablePods": [{"name": "main", "count": 1}]},
                 id="the Workload learns that one pod will not run again"),
    pytest.param(job(completedIndexes="2", succeeded=1), workload(job(), reclaimable=1), None,
                 id="a Workload that already says so is not written"),
    pytest.param(job(), workload(job(), reclaimable=1), {"reclaimablePods": None},
                 id="a stale count is cleared"),
    pytest.param(job(suspend=True, completedIndexes="2", succeeded=1), workload(job(), admitted=False),
                 {"reclaimablePods": [{"name": "main", "count": 1}]},
                 id="a suspended, waiting Job's Workload shrinks too, so it asks for less quota"),
])
def test_the_job_integration_keeps_reclaimable_pods(obj: dict[str, Any], wl: dict[str, Any],
                                                    expected: dict[str, Any] | None) -> None:
    writes = [a for a in decide(obj, wl) if isinstance(a, ji.SetReclaimablePods)]
    assert [a.status_patch["status"] for a in writes] == ([expected] if expected else [])


def test_a_shrunk_workload_asks_for_and_holds_only_the_pods_left() -> None:
    parsed = Workload.from_dict(workload(job(), reclaimable=1))
    (pod_set,) = parsed.pod_sets
    assert (pod_set.count, pod_set.remaining, pod_set.total()) == (3, 2, {"cpu": Decimal(2)})
    assert parsed.admission is not None
    assert parsed.admission.pod_set_assignments[0].usage() == {"cpu": Decimal(2)}


def test_a_workload_admitted_after_it_shrank_is_not_scaled_twice() -> None:
    raw = workload(job(), reclaimable=1)
    raw["status"]["admission"]["podSetAssignments"][0].update(count=2, resourceUsage={"cpu": "2"})
    assert Workload.from_dict(raw).admission.pod_set_assignments[0].usage() == {"cpu": Decimal(2)}  # type: ignore[union-attr]


@pytest.mark.parametrize("obj, min_member", [
    pytest.param(job(), 3, id="a fresh gang is the whole Job"),
    pytest.param(job(completedIndexes="2", succeeded=1), 2, id="a partly finished Job's gang is the pods left to run"),
    pytest.param(job(3, 6, completedIndexes="0-4", succeeded=5), 1, id="the last index is a gang of one"),
])
def test_a_podgroup_follows_the_pods_left_to_run(obj: dict[str, Any], min_member: int) -> None:
    desired = pg.desired_podgroup(obj, JOB_KIND, _dt.timedelta(seconds=300))
    assert desired is not None and desired["spec"]["minMember"] == min_member


def group(min_member: int) -> pg.PodGroupInfo:
    return pg.PodGroupInfo("team-a", "train", min_member, NOW, None, "Scheduling", NOW, {})


@pytest.mark.parametrize("obj, wl, min_member, ours, deactivated", [
    pytest.param(job(completedIndexes="2", succeeded=1), workload(job()), 3, False, True,
                 id="a user's PodGroup of 3 over a Job with 2 pods left is deactivated"),
    pytest.param(job(completedIndexes="2", succeeded=1), workload(job()), 3, True, False,
                 id="the controller's own PodGroup is resized instead"),
    pytest.param(job(), workload(job()), 3, False, False, id="a gang the Job can fill is left to wait"),
    pytest.param(job(), workload(job()), 4, False, True, id="a PodGroup larger than the whole Job is deactivated"),
    pytest.param(job(), workload(job(), admitted=False), 4, False, False, id="a workload holding no quota is left alone"),
    pytest.param(job(), workload(job(), evicted=True), 4, False, False, id="an already evicted workload is left alone"),
    pytest.param(job(suspend=True), workload(job()), 4, False, False, id="a suspended job is left alone"),
])
def test_a_gang_that_can_never_be_complete(obj: dict[str, Any], wl: dict[str, Any], min_member: int, ours: bool,
                                           deactivated: bool) -> None:
    decision = never_complete(group(min_member), obj, JOB_KIND, wl, NOW, ours=ours)
    assert (decision is not None) == deactivated
    if decision is not None:
        assert decision.spec_patch == {"spec": {"active": False}}
        assert decision.status_patch is not None
        (evicted,) = [c for c in decision.status_patch["status"]["conditions"] if c["type"] == keys.COND_EVICTED]
        assert (evicted["status"], evicted["reason"]) == ("True", "InactiveWorkload")
        assert f"needs {min_member} pods placed at once" in evicted["message"]
        assert "can never be complete" in decision.message


def test_a_reclaim_count_cannot_exceed_the_pod_set() -> None:
    raw = workload(job(), reclaimable=5)
    assert Workload.from_dict(copy.deepcopy(raw)).pod_sets[0].remaining == 0
