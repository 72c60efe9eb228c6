"""Admission within one ClusterQueue: quota, queue order, strategies, and what a pending workload says.

Every case is a simulation trace (docs/simulate.md) run through the real cycle; names follow Kueue's
TestSchedule cases and integration scenarios where one exists.
"""

from __future__ import annotations

import pytest

from tests.controller.decisions.scenario_check import check_scenario, expect
from tests.controller.decisions.trace_builders import (
    basic, cluster_queue, flavor, group, local_queue, namespace, pod_set, priority_class, trace, workload,
)

MORE = "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, {} more needed"


def too_big(res: str, request: str, most: str, pod_set_name: str = "main", flavor_name: str = "default") -> str:
    return (f"couldn't assign flavors to pod set {pod_set_name}: insufficient quota for {res} in flavor "
            f"{flavor_name}, request > maximum capacity ({request} > {most})")


SCENARIOS = [
    pytest.param(
        trace(basic(cpu=10) + [workload("a", cpu=5)]),
        [expect(admitted=["ns/a"], flavors={"ns/a": {"main": {"cpu": "default"}}}, into={"ns/a": "cq"},
                counts={"reserving": 1, "admitted": 1, "pendingActive": 0})],
        id="a workload that fits the nominal quota is admitted with the flavor",
    ),
    pytest.param(
        trace(basic(cpu=20) + [workload("big", count=24, cpu=1)]),
        [expect(admitted=[], pending={"ns/big": ("inadmissible", too_big("cpu", "24", "20"))})],
        id="a pod set larger than any quota waits with the maximum capacity message",
    ),
    pytest.param(
        trace(basic(cpu=10) + [workload("a", cpu=8, admitted_to="cq"), workload("b", cpu=7, created=1)]),
        [expect(admitted=[], pending={"ns/b": ("inadmissible", MORE.format(5))}, counts={"reserving": 1})],
        id="a workload that does not fit now is parked saying how much more it needs",
    ),
    pytest.param(
        trace(basic(cpu=10) + [workload("a", cpu=8, admitted_to="cq"), workload("b", cpu=7, created=1)],
              {}, {"finish": ["ns/a"]}),
        [expect(admitted=[]), expect(admitted=["ns/b"], counts={"reserving": 1, "pendingInadmissible": 0})],
        id="a finished workload frees its quota and the parked workload is admitted",
    ),
    pytest.param(
        trace(basic(cpu=10) + [workload("a", cpu=8, admitted_to="cq"), workload("b", cpu=7, created=1)],
              {}, {"delete": ["ns/a"]}),
        [expect(admitted=[]), expect(admitted=["ns/b"])],
        id="a deleted admitted workload frees its quota",
    ),
    pytest.param(
        trace(basic(cpu=10) + [workload("a", cpu=8, admitted_to="cq"), workload("b", cpu=7, created=1),
                               workload("c", cpu=7, created=2)], {}, {"delete": ["ns/b"]}),
        # c, of b's class, is parked with it untried (equivalence hashing), with b's reason
        [expect(admitted=[], counts={"pendingInadmissible": 2}),
         expect(admitted=[], pending={"ns/c": ("inadmissible", MORE.format(5))}, counts={"reserving": 1})],
        id="deleting a pending workload frees nothing",
    ),
    pytest.param(
        trace(basic(cpu=10, strategy="StrictFIFO") + [
            workload("a", cpu=8, admitted_to="cq"), workload("b", cpu=7, created=1), workload("c", cpu=1, created=2)]),
        [expect(admitted=[], pending={"ns/b": ("active", MORE.format(5)), "ns/c": ("active", "")})],
        id="StrictFIFO: a head that does not fit blocks smaller workloads behind it",
    ),
    pytest.param(
        trace(basic(cpu=10) + [
            workload("a", cpu=8, admitted_to="cq"), workload("b", cpu=7, created=1), workload("c", cpu=1, created=2)]),
        [expect(admitted=["ns/c"], pending={"ns/b": ("inadmissible", MORE.format(5))})],
        id="BestEffortFIFO: the next workload is tried when the head does not fit",
    ),
    pytest.param(
        trace(basic(cpu=10) + [workload("low", cpu=6, priority=1, created=0),
                               workload("high", cpu=6, priority=5, created=1)]),
        [expect(admitted=["ns/high"], pending={"ns/low": ("inadmissible", MORE.format(2))})],
        id="the higher priority workload of a ClusterQueue is tried first",
    ),
    pytest.param(
        trace(basic(cpu=10) + [workload("newer", cpu=6, created=1), workload("older", cpu=6, created=0)]),
        [expect(admitted=["ns/older"], pending={"ns/newer": ("inadmissible", None)})],
        id="at equal priority the older workload is tried first",
    ),
    pytest.param(
        trace(basic(cpu=10) + [priority_class("high", 100), workload("a", cpu=6, created=0),
                               workload("b", cpu=6, created=1, priority_class="high")]),
        [expect(admitted=["ns/b"])],
        id="a WorkloadPriorityClass gives the workload its priority",
    ),
    pytest.param(
        trace(basic(cpu=10) + [workload("a", cpu=1, queue="nope")]),
        [expect(admitted=[], pending={"ns/a": ("inadmissible", "LocalQueue nope doesn't exist")},
                counts={"pendingInadmissible": 1})],
        id="a workload naming a missing LocalQueue waits saying so",
    ),
    pytest.param(
        trace([flavor(), local_queue("lq", "ghost"), workload("a", cpu=1)]),
        [expect(admitted=[], pending={"ns/a": ("inadmissible", "ClusterQueue ghost doesn't exist")})],
        id="a LocalQueue pointing at a missing ClusterQueue leaves its workloads waiting",
    ),
    pytest.param(
        trace([cluster_queue("cq", cpu=10), local_queue("lq", "cq"), workload("a", cpu=1)],
              {}, {"apply": [flavor()]}),
        [expect(admitted=[], pending={"ns/a": ("active", "ClusterQueue cq is inactive")}),
         expect(admitted=["ns/a"])],
        id="a ClusterQueue with a missing flavor is inactive until the flavor exists",
    ),
    pytest.param(
        trace([flavor(), cluster_queue("cq", cpu=10), workload("a", cpu=1)], {}, {"apply": [local_queue("lq", "cq")]}),
        [expect(admitted=[], pending={"ns/a": ("inadmissible", "LocalQueue lq doesn't exist")}),
         expect(admitted=["ns/a"])],
        id="a workload is admitted once its LocalQueue is created",
    ),
    pytest.param(
        trace([flavor(), local_queue("lq", "cq"), workload("a", cpu=1)], {}, {"apply": [cluster_queue("cq", cpu=10)]}),
        [expect(admitted=[]), expect(admitted=["ns/a"])],
        id="a workload is admitted once its ClusterQueue is created",
    ),
    pytest.param(
        trace(basic(cpu=10) + [workload("a", cpu=1, gpu=1)]),
        [expect(admitted=[], pending={"ns/a": ("inadmissible", "couldn't assign flavors to pod set main: "
                                                               "resource nvidia.com/gpu unavailable in ClusterQueue")})],
        id="a request for a resource the ClusterQueue does not cover waits saying which",
    ),
    pytest.param(
        trace([flavor(), cluster_queue("cq", cpu=10, selector={"matchLabels": {"team": "a"}}),
               local_queue("lq", "cq"), namespace("ns", team="b"), workload("a", cpu=1)],
              {}, {"apply": [namespace("ns", team="a")]}),
        [expect(admitted=[], pending={"ns/a": ("inadmissible", "Workload namespace doesn't match ClusterQueue selector")}),
         expect(admitted=["ns/a"])],
        id="a namespace outside the selector waits until it is labelled to match",
    ),
    pytest.param(
        trace(basic(cpu=4) + [workload("w0", cpu=2, admitted_to="cq"), workload("w1", cpu=4, priority=20, created=1)],
              {}, {"apply": [workload("w2", cpu=2, created=2)]},
              {"apply": [namespace("other"), flavor("other-f0"), local_queue("lq", "other-cq", ns="other"),
                         cluster_queue("other-cq", group({"other-f0": {"cpu": 4}}), cohort="other")]}),
        [expect(admitted=[], pending={"ns/w1": ("inadmissible", MORE.format(2))}),
         expect(admitted=["ns/w2"], pending={"ns/w1": ("inadmissible", MORE.format(2))}),
         expect(admitted=[], pending={"ns/w1": ("inadmissible", MORE.format(2))})],
        id="another team's namespace, flavor and queues free no quota: a parked workload is not tried again",
    ),
    pytest.param(
        trace([flavor(), cluster_queue("cq", cpu=10, selector=None), local_queue("lq", "cq"), workload("a", cpu=1)]),
        [expect(admitted=[], pending={"ns/a": ("inadmissible", "Workload namespace doesn't match ClusterQueue selector")})],
        id="a ClusterQueue without a namespaceSelector admits no namespace",
    ),
    pytest.param(
        trace([flavor(), cluster_queue("cq", cpu=10, selector={"matchExpressions": [
            {"key": "team", "operator": "In", "values": ["a", "b"]}]}),
            local_queue("lq", "cq"), namespace("ns", team="b"), workload("a", cpu=1)]),
        [expect(admitted=["ns/a"])],
        id="a matchExpressions namespaceSelector admits a matching namespace",
    ),
    pytest.param(
        trace(basic(cpu=10) + [
            workload("fits", pod_sets=[pod_set("driver", 1, cpu=2), pod_set("workers", 4, cpu=2)]),
            workload("over", created=1, pod_sets=[pod_set("driver", 1, cpu=2), pod_set("workers", 5, cpu=2)])]),
        [expect(admitted=["ns/fits"], flavors={"ns/fits": {"driver": {"cpu": "default"}, "workers": {"cpu": "default"}}},
                pending={"ns/over": ("inadmissible", "couldn't assign flavors to pod set driver: insufficient unused "
                                     "quota for cpu in flavor default, 2 more needed; " + too_big("cpu", "12", "10", "workers"))})],
        id="the pod sets of a workload add up against the quota",
    ),
    pytest.param(
        trace([flavor(), cluster_queue("cq", group({"default": {"cpu": 10, "pods": 3}})), local_queue("lq", "cq"),
               workload("three", count=3, cpu=1), workload("four", count=4, cpu=1, created=1)]),
        [expect(admitted=["ns/three"], pending={"ns/four": ("inadmissible", too_big("pods", "4", "3"))})],
        id="pods are counted when the ClusterQueue covers the pods resource",
    ),
    pytest.param(
        trace([flavor(), cluster_queue("cq", group({"default": {"cpu": 10, "memory": "8Gi"}})), local_queue("lq", "cq"),
               workload("a", cpu=1, memory="16Gi")]),
        [expect(admitted=[], pending={"ns/a": ("inadmissible", too_big("memory", "16Gi", "8Gi"))})],
        id="memory quotas are compared exactly and reported in binary units",
    ),
    pytest.param(
        trace(basic(cpu="2500m") + [workload("a", cpu="1500m"), workload("b", cpu="1500m", created=1)]),
        [expect(admitted=["ns/a"], pending={"ns/b": ("inadmissible", MORE.format("500m"))})],
        id="millicpu requests are exact and reported in millicores",
    ),
    pytest.param(
        trace(basic(cpu=5) + [workload("a", cpu=8)], {}, {"apply": [cluster_queue("cq", cpu=10)]}),
        [expect(admitted=[], pending={"ns/a": ("inadmissible", too_big("cpu", "8", "5"))}),
         expect(admitted=["ns/a"])],
        id="raising a ClusterQueue's quota admits the parked workload",
    ),
]


@pytest.mark.parametrize(("scenario", "steps"), SCENARIOS)
def test_single_queue_scenario(scenario: dict, steps: list[dict]) -> None:
    check_scenario(scenario, steps)
