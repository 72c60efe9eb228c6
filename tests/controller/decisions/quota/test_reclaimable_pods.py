"""A Workload's `status.reclaimablePods` are not counted against quota, as in Kueue: the pods a
pending workload asks for, and the usage an admitted one holds, shrink by them (issue 16 item 3;
the job side, which writes reclaimablePods, is tests/controller/decisions/gang/test_completeness.py)."""

from __future__ import annotations

import datetime as _dt
from typing import Any

import pytest

from batchgate.api.errors import FieldError
from controller.state.quota_state import QuotaState
from tests.controller.decisions.scenario_check import check_scenario, expect
from tests.controller.decisions.trace_builders import (
    cluster_queue, flavor, group, local_queue, pod_set, trace, wl_key, workload,
)

NOW = _dt.datetime(2026, 1, 1, tzinfo=_dt.timezone.utc)


def _five_pods(**options: Any) -> dict[str, Any]:
    return workload("w", pod_sets=[pod_set(count=options.pop("count", 5), cpu="10m", memory="512Ki")], **options)


def _admitted_usage(obj: dict[str, Any], **usage: str) -> dict[str, Any]:
    obj["status"]["admission"]["podSetAssignments"][0]["resourceUsage"] = usage
    return obj


def _without_count(obj: dict[str, Any]) -> dict[str, Any]:
    for assignment in obj["status"]["admission"]["podSetAssignments"]:
        del assignment["count"]
    return obj


# kubernetes-sigs/kueue v0.10.2 pkg/workload/workload_test.go, TestNewInfo, the case named in each
# comment (podSetsCountsAfterReclaim, totalRequestsFromPodSets, totalRequestsFromAdmission in
# pkg/workload/workload.go); "HEAD:" marks a case only later Kueue has.
# (workload, pods counted, requests counted: pending workload's ask or admitted workload's usage)
NEW_INFO_CASES = [
    pytest.param(_five_pods(reclaimable={"main": 2}), 3, {"cpu": 30, "memory": 3 * 512 * 1024},
                 id="a pending workload asks for its pods less the reclaimable ones"),  # "pending with reclaim; reclaimablePods on"
    pytest.param(_five_pods(reclaimable={"main": 2}, admitted_to="cq", admitted_count=3), 3,
                 {"cpu": 30, "memory": 3 * 512 * 1024},
                 id="an admission already counting without the reclaimable pods keeps its usage"),  # "admitted with reclaim; reclaimablePods on"
    pytest.param(_five_pods(reclaimable={"main": 3}, admitted_to="cq", admitted_count=3), 2,
                 {"cpu": 20, "memory": 2 * 512 * 1024},
                 id="pods that became reclaimable after admission scale the usage down per pod"),  # "admitted with reclaim and increased reclaim"
    pytest.param(_five_pods(count=2, reclaimable={"main": 5}, admitted_to="cq", admitted_count=5), 0, {},
                 id="a reclaimable count above the pod set's count never makes usage negative"),  # HEAD: "admitted with stale reclaim exceeding scaled-down podSet count"
    pytest.param(_five_pods(admitted_to="cq", admitted_count=3), 5, {"cpu": 30, "memory": 3 * 512 * 1024},
                 id="a partial admission's smaller count is kept"),  # "partially admitted"
    pytest.param(_five_pods(reclaimable={"other": 4}), 5, {"cpu": 50, "memory": 5 * 512 * 1024},
                 id="reclaimable pods of another pod set change nothing"),
    # totalRequestsFromAdmission's arithmetic: scaleDown by the admitted count then scaleUp, in
    # integer units (milli-CPU, bytes), so a remainder is dropped per pod.
    pytest.param(_admitted_usage(workload("w", pod_sets=[pod_set(count=3, cpu="334m", memory="334")], admitted_to="cq",
                                          reclaimable={"main": 1}), cpu="1", memory="1000"), 2, {"cpu": 666, "memory": 666},
                 id="usage scaled down to the pods left is divided per pod in integer units as Kueue divides"),
    # ptr.Deref(psa.Count, totalCounts[psa.Name]): an assignment without a count is the whole pod set.
    pytest.param(_without_count(_five_pods(reclaimable={"main": 2}, admitted_to="cq")), 3,
                 {"cpu": 30, "memory": 3 * 512 * 1024},
                 id="an assignment without a count stands for the whole pod set and is scaled down too"),
]


@pytest.mark.parametrize(("obj", "pods", "counted"), NEW_INFO_CASES)
def test_reclaimable_pods_are_not_counted(obj: dict[str, Any], pods: int, counted: dict[str, int]) -> None:
    state = QuotaState()
    state.observe(obj, NOW)
    (pod_set_request,) = state.workloads[wl_key("ns/w")].pod_sets
    assert pod_set_request.count == pods
    if "admission" in obj.get("status", {}):
        assert {res: v for (_, res), v in state.admitted[wl_key("ns/w")].usage.items() if v} == counted
    else:
        assert dict(pod_set_request.total) == counted


def test_a_negative_reclaimable_count_is_refused_naming_the_field() -> None:
    obj = _five_pods()
    obj["status"] = {"reclaimablePods": [{"name": "main", "count": -1}]}
    with pytest.raises(FieldError, match=r"status\.reclaimablePods\[0\]\.count"):
        QuotaState().observe(obj, NOW)


THREE_POD_SETS = [pod_set("first", cpu=1), pod_set("second", cpu=1), pod_set("third", cpu=1)]
CQ3 = [flavor(), cluster_queue("cq", cpu=3, within="LowerPriority"), local_queue("lq", "cq")]

RECLAIMABLE_SCENARIOS = [
    pytest.param(  # pkg/scheduler/flavorassigner/flavorassigner_test.go TestAssignFlavors "with reclaimable pods"
        trace([flavor(), cluster_queue("cq", group({"default": {"pods": 3, "cpu": 10}})), local_queue("lq", "cq"),
               workload("w", count=5, cpu=1, reclaimable={"main": 2})]),
        [expect(admitted=["ns/w"], flavors={"ns/w": {"main": {"cpu": "default", "pods": "default"}}})],
        id="reclaimable pods do not count against a ClusterQueue's pods quota",
    ),
    pytest.param(  # test/integration/scheduler/scheduler_test.go (v0.10.2) "Should admit workloads when resources are dynamically reclaimed"
        trace(CQ3 + [workload("first", pod_sets=THREE_POD_SETS)],
              {},
              {"apply": [workload("first", pod_sets=THREE_POD_SETS, admitted_to="cq", reclaimable={"third": 1})]},
              {"apply": [workload("second", pod_sets=THREE_POD_SETS, priority=100, created=1)]},
              {"apply": [workload("second", pod_sets=THREE_POD_SETS, priority=100, created=1, admitted_to="cq",
                                  reclaimable={"first": 1, "second": 1})]}),
        [expect(admitted=["ns/first"]),
         expect(admitted=[]),
         expect(admitted=["ns/second"], preempted=[("ns/first", "InClusterQueue", "ns/second")],
                pending={"ns/first": ("inadmissible", None)}),
         expect(admitted=["ns/first"])],
        id="pods reclaimed from an admitted workload free quota for the workload waiting behind it",
    ),
]


@pytest.mark.parametrize(("scenario", "steps"), RECLAIMABLE_SCENARIOS)
def test_reclaimable_pods_scenario(scenario: dict, steps: list[dict]) -> None:
    check_scenario(scenario, steps)
