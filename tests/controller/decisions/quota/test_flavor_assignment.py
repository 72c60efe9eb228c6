"""Flavor assignment (order, taints, resource groups, fungibility) and cohorts (borrowing, limits,
lending, entry ordering and same-cycle competition), as traces through the real cycle."""

from __future__ import annotations

import pytest

from tests.controller.decisions.scenario_check import check_scenario, expect
from tests.controller.decisions.trace_builders import (
    cluster_queue, flavor, group, local_queue, pod_set, quota, trace, workload,
)

TAINT = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "x", "effect": "NoSchedule"}
NO_LONGER_FITS = "Workload no longer fits after processing another workload"


def cohort(*members: tuple[str, object], **options: object) -> list[dict]:
    """Flavor `default`, ClusterQueues in cohort `c` with the given cpu quotas, LocalQueue lq-<cq> in ns."""
    objects: list[dict] = [flavor()]
    for name, cpu in members:
        objects.append(cluster_queue(name, group({"default": {"cpu": cpu}}), cohort="c",
                                     **options.get(name, {})))  # type: ignore[arg-type]
        objects.append(local_queue(f"lq-{name}", name))
    return objects


FLAVOR_SCENARIOS = [
    pytest.param(
        trace([flavor("on-demand"), flavor("spot"), cluster_queue("cq", group({"on-demand": {"cpu": 5}, "spot": {"cpu": 10}})),
               local_queue("lq", "cq"), workload("a", cpu=4, admitted_to="cq", flavors={"cpu": "on-demand"}),
               workload("b", cpu=3, created=1)]),
        [expect(admitted=["ns/b"], flavors={"ns/b": {"main": {"cpu": "spot"}}})],
        id="the next flavor is used when the first one is full",
    ),
    pytest.param(
        trace([flavor("gpu-a", taints=[TAINT]), flavor("gpu-b"),
               cluster_queue("cq", group({"gpu-a": {"cpu": 10}, "gpu-b": {"cpu": 10}})), local_queue("lq", "cq"),
               workload("plain", cpu=1), workload("tolerant", pod_sets=[pod_set(cpu=1, tolerations=[TOLERATION])])]),
        [expect(admitted=["ns/plain", "ns/tolerant"], flavors={"ns/plain": {"main": {"cpu": "gpu-b"}},
                                                               "ns/tolerant": {"main": {"cpu": "gpu-a"}}})],
        id="a tainted flavor is skipped unless the pod set tolerates the taint",
    ),
    pytest.param(
        trace([flavor("gpu-a", taints=[TAINT]), cluster_queue("cq", group({"gpu-a": {"cpu": 10}})),
               local_queue("lq", "cq"), workload("plain", cpu=1)]),
        [expect(admitted=[], pending={"ns/plain": ("inadmissible", "couldn't assign flavors to pod set main: "
                                                                   "untolerated taint {dedicated x NoSchedule <nil>} in flavor gpu-a")})],
        id="a pod set that tolerates no flavor waits naming the taint",
    ),
    pytest.param(
        trace([flavor(), flavor("a100"), cluster_queue("cq", group({"default": {"cpu": 10}}),
                                                       group({"a100": {"nvidia.com/gpu": 8}})),
               local_queue("lq", "cq"), workload("train", cpu=2, gpu=4)]),
        [expect(admitted=["ns/train"], flavors={"ns/train": {"main": {"cpu": "default", "nvidia.com/gpu": "a100"}}})],
        id="each resource group assigns its own flavor",
    ),
    pytest.param(
        trace([flavor("f1"), flavor("f2"), cluster_queue("cq", group({"f1": {"cpu": 4}, "f2": {"cpu": 10}})),
               local_queue("lq", "cq"), workload("w", pod_sets=[pod_set("a", 1, cpu=4), pod_set("b", 1, cpu=2)])]),
        [expect(admitted=["ns/w"], flavors={"ns/w": {"a": {"cpu": "f1"}, "b": {"cpu": "f2"}}})],
        id="a later pod set moves to the next flavor when earlier pod sets used up the first",
    ),
    pytest.param(
        trace([flavor("f1"), flavor("f2"), cluster_queue("cq-a", group({"f1": {"cpu": 2}, "f2": {"cpu": 10}}), cohort="c"),
               cluster_queue("lender", group({"f1": {"cpu": 10}}), cohort="c"), local_queue("lq", "cq-a"),
               workload("w", cpu=4)]),
        [expect(admitted=["ns/w"], flavors={"ns/w": {"main": {"cpu": "f1"}}})],
        id="whenCanBorrow Borrow stops at the first flavor that fits by borrowing",
    ),
    pytest.param(
        trace([flavor("f1"), flavor("f2"),
               cluster_queue("cq-a", group({"f1": {"cpu": 2}, "f2": {"cpu": 10}}), cohort="c",
                             when_can_borrow="TryNextFlavor"),
               cluster_queue("lender", group({"f1": {"cpu": 10}}), cohort="c"), local_queue("lq", "cq-a"),
               workload("w", cpu=4)]),
        [expect(admitted=["ns/w"], flavors={"ns/w": {"main": {"cpu": "f2"}}})],
        id="whenCanBorrow TryNextFlavor prefers a later flavor that needs no borrowing",
    ),
    pytest.param(
        trace([flavor("f1"), flavor("f2"), cluster_queue("cq", group({"f1": {"cpu": 4}, "f2": {"cpu": 10}}),
                                                         within="LowerPriority"),
               local_queue("lq", "cq"), workload("low", cpu=4, priority=0, admitted_to="cq", flavors={"cpu": "f1"}),
               workload("high", cpu=4, priority=10, created=1)]),
        [expect(admitted=["ns/high"], preempted=[], flavors={"ns/high": {"main": {"cpu": "f2"}}})],
        id="whenCanPreempt TryNextFlavor takes a later flavor that fits over preempting",
    ),
    pytest.param(
        trace([flavor("f1"), flavor("f2"), cluster_queue("cq", group({"f1": {"cpu": 4}, "f2": {"cpu": 10}}),
                                                         within="LowerPriority", when_can_preempt="Preempt"),
               local_queue("lq", "cq"), workload("low", cpu=4, priority=0, admitted_to="cq", flavors={"cpu": "f1"}),
               workload("high", cpu=4, priority=10, created=1)], {"cycles": 1}),
        [expect(admitted=[], preempted=[("ns/low", "InClusterQueue", "ns/high")],
                pending={"ns/high": ("active", "couldn't assign flavors to pod set main: insufficient unused quota "
                                               "for cpu in flavor f1, 4 more needed. Pending the preemption of 1 workload(s)")})],
        id="whenCanPreempt Preempt stops at the first flavor where preemption would make room",
    ),
]

# Node affinity against the flavors' nodeLabels: kubernetes-sigs/kueue
# pkg/scheduler/flavorassigner/flavorassigner_test.go, TestAssignFlavors, the case named in each comment.
ONE, TWO = flavor("one", labels={"type": "one"}), flavor("two", labels={"type": "two"})
ONE_TWO = cluster_queue("cq", group({"one": {"cpu": 4}, "two": {"cpu": 4}}), within="LowerPriority")
AFFINITY_SCENARIOS = [
    pytest.param(  # "multiple flavors, fits a node selector"
        trace([ONE, TWO, ONE_TWO, local_queue("lq", "cq"),
               workload("w", pod_sets=[pod_set(cpu=1, node_selector={"type": "two", "ignored1": "foo"},
                                               required=[[("ignored2", "In", ["bar"])]])])]),
        [expect(admitted=["ns/w"], flavors={"ns/w": {"main": {"cpu": "two"}}})],
        id="a node selector picks the flavor whose nodeLabels match and keys no flavor labels are ignored",
    ),
    pytest.param(  # "multiple flavors, fits with node affinity"
        trace([ONE, TWO, ONE_TWO, local_queue("lq", "cq"),
               workload("w", pod_sets=[pod_set(cpu=1, node_selector={"ignored1": "foo"},
                                               required=[[("type", "In", ["two"])]])])]),
        [expect(admitted=["ns/w"], flavors={"ns/w": {"main": {"cpu": "two"}}})],
        id="required node affinity picks the flavor whose nodeLabels match",
    ),
    pytest.param(  # "multiple flavors, node affinity fits any flavor"
        trace([ONE, TWO, ONE_TWO, local_queue("lq", "cq"),
               workload("w", pod_sets=[pod_set(cpu=1, required=[[("ignored2", "In", ["bar"])],
                                                                [("cpuType", "In", ["two"])]])])]),
        [expect(admitted=["ns/w"], flavors={"ns/w": {"main": {"cpu": "one"}}})],
        id="a term only on keys the flavor does not label matches any flavor as terms are ORed",
    ),
    pytest.param(  # "multiple flavors, doesn't fit node affinity"
        trace([ONE, TWO, ONE_TWO, local_queue("lq", "cq"),
               workload("w", pod_sets=[pod_set(cpu=1, required=[[("type", "In", ["three"])]])])]),
        [expect(admitted=[], pending={"ns/w": ("inadmissible", "couldn't assign flavors to pod set main: flavor one "
                                                               "doesn't match node affinity, flavor two doesn't match node affinity")})],
        id="a pod set whose affinity matches no flavor waits naming each flavor",
    ),
    pytest.param(  # "can only preempt flavors that match affinity"
        trace([ONE, TWO, ONE_TWO, local_queue("lq", "cq"),
               workload("low-one", cpu=3, priority=0, admitted_to="cq", flavors={"cpu": "one"}),
               workload("low-two", cpu=3, priority=0, admitted_to="cq", flavors={"cpu": "two"}),
               workload("high", priority=10, created=1, pod_sets=[pod_set(cpu=2, node_selector={"type": "two"})])],
              {"cycles": 1}),
        [expect(admitted=[], preempted=[("ns/low-two", "InClusterQueue", "ns/high")],
                pending={"ns/high": ("active", "couldn't assign flavors to pod set main: flavor one doesn't match node "
                                               "affinity, insufficient unused quota for cpu in flavor two, 1 more needed. "
                                               "Pending the preemption of 1 workload(s)")})],
        id="preemption is considered only on flavors that match the pod set's affinity",
    ),
    # The next two are HEAD's cases (kubernetes-sigs/kueue#12449, each flavor's own keys); Kueue
    # v0.10, which batchgate follows, matches on every label key of the resource group
    # (pkg/cache/clusterqueue.go updateLabelKeys), so the outcome differs and is v0.10's.
    pytest.param(  # "labelless flavor in group with labeled flavor, workload uses labeled selector"
        trace([flavor(), TWO, cluster_queue("cq", group({"default": {"cpu": 4}, "two": {"cpu": 4}})),
               local_queue("lq", "cq"), workload("w", pod_sets=[pod_set(cpu=1, node_selector={"type": "two"})])]),
        [expect(admitted=["ns/w"], flavors={"ns/w": {"main": {"cpu": "two"}}})],
        id="a selector on a key of the resource group refuses a flavor without that label as in Kueue v0.10",
    ),
    pytest.param(  # "multiple flavors with different label keys, selector only uses flavor's own keys"
        trace([flavor("label-x-a", labels={"x": "a"}), flavor("label-xy-b", labels={"x": "b", "y": "k"}),
               cluster_queue("cq", group({"label-x-a": {"cpu": 4}, "label-xy-b": {"cpu": 4}})),
               local_queue("lq", "cq"), workload("w", pod_sets=[pod_set(cpu=1, node_selector={"x": "a", "y": "g"})])]),
        [expect(admitted=[], pending={"ns/w": ("inadmissible", "couldn't assign flavors to pod set main: flavor "
                                                               "label-x-a doesn't match node affinity, flavor "
                                                               "label-xy-b doesn't match node affinity")})],
        id="a selector key another flavor of the group labels refuses a flavor that lacks it as in Kueue v0.10",
    ),
    pytest.param(  # no upstream case: label keys are gathered per resource group, not per ClusterQueue
        trace([flavor("zone-a", labels={"zone": "a"}), flavor("plain"),
               cluster_queue("cq", group({"zone-a": {"cpu": 4}}), group({"plain": {"memory": "4Gi"}})),
               local_queue("lq", "cq"),
               workload("w", pod_sets=[pod_set(cpu=1, memory="1Gi", node_selector={"zone": "a"})])]),
        [expect(admitted=["ns/w"], flavors={"ns/w": {"main": {"cpu": "zone-a", "memory": "plain"}}})],
        id="a flavor of another resource group is not refused for a key only this group labels",
    ),
    pytest.param(  # "multiple flavors, fits while skipping tainted flavor" (and the taint's printed form)
        trace([flavor("tainted", taints=[{"key": "instance", "value": "spot", "effect": "NoSchedule"}]),
               flavor("bare", taints=[{"key": "gpu", "effect": "NoExecute"}]),
               cluster_queue("cq", group({"tainted": {"cpu": 4}, "bare": {"cpu": 4}})),
               local_queue("lq", "cq"), workload("w", cpu=3)]),
        [expect(admitted=[], pending={"ns/w": ("inadmissible", "couldn't assign flavors to pod set main: untolerated "
                                                               "taint {gpu  NoExecute <nil>} in flavor bare, untolerated "
                                                               "taint {instance spot NoSchedule <nil>} in flavor tainted")})],
        id="untolerated taints read as Kueue prints a Go taint value",
    ),
]


COHORT_SCENARIOS = [
    pytest.param(
        trace(cohort(("cq-a", 5), ("cq-b", 10)) + [workload("w", queue="lq-cq-a", cpu=12)]),
        [expect(admitted=["ns/w"], into={"ns/w": "cq-a"})],
        id="a ClusterQueue borrows the unused quota of its cohort",
    ),
    pytest.param(
        trace(cohort(("cq-a", quota(5, borrow=3)), ("cq-b", 10)) + [workload("w", queue="lq-cq-a", cpu=12)]),
        [expect(admitted=[], pending={"ns/w": ("inadmissible", "couldn't assign flavors to pod set main: insufficient "
                                                               "quota for cpu in flavor default, request > maximum capacity (12 > 8)")})],
        id="borrowingLimit caps what a ClusterQueue may borrow",
    ),
    pytest.param(
        trace(cohort(("cq-a", 5), ("cq-b", quota(10, lend=4))) + [workload("w", queue="lq-cq-a", cpu=12),
                                                                  workload("v", queue="lq-cq-a", cpu=9, created=1)]),
        [expect(admitted=["ns/v"], pending={"ns/w": ("inadmissible", "couldn't assign flavors to pod set main: insufficient "
                                                                      "quota for cpu in flavor default, request > maximum capacity (12 > 9)")})],
        id="lendingLimit caps what a ClusterQueue lends to its cohort",
    ),
    pytest.param(
        trace(cohort(("cq-a", 5), ("cq-b", quota(10, lend=4))) + [
            workload("lent", queue="lq-cq-a", cpu=9, admitted_to="cq-a"), workload("own", queue="lq-cq-b", cpu=6)]),
        [expect(admitted=["ns/own"], into={"ns/own": "cq-b"})],
        id="the part of nominal quota above the lendingLimit stays available to its owner",
    ),
    pytest.param(
        trace([flavor(), cluster_queue("cq", cpu=5), cluster_queue("other", cpu=10), local_queue("lq", "cq"),
               workload("w", cpu=6)]),
        [expect(admitted=[], pending={"ns/w": ("inadmissible", "couldn't assign flavors to pod set main: insufficient "
                                                               "quota for cpu in flavor default, request > maximum capacity (6 > 5)")})],
        id="a ClusterQueue without a cohort cannot borrow",
    ),
    pytest.param(
        trace(cohort(("cq-a", 5)) + [workload("w", queue="lq-cq-a", cpu=8)],
              {}, {"apply": [cluster_queue("cq-b", cpu=10, cohort="c")]}),
        [expect(admitted=[]), expect(admitted=["ns/w"])],
        id="a ClusterQueue joining the cohort lends its quota to parked workloads",
    ),
    pytest.param(
        trace(cohort(("cq-a", 5), ("cq-b", 5)) + [
            workload("borrower", queue="lq-cq-a", cpu=8, priority=10),
            workload("within", queue="lq-cq-b", cpu=5, priority=0)], {"cycles": 1}),
        [expect(admitted=["ns/within"], pending={"ns/borrower": ("active", NO_LONGER_FITS)})],
        id="entry ordering: a workload that needs no borrowing goes before a higher priority borrower",
    ),
    pytest.param(
        trace(cohort(("cq-a", 2), ("cq-b", 2), ("lender", 6)) + [
            workload("x", queue="lq-cq-a", cpu=6, priority=5), workload("y", queue="lq-cq-b", cpu=6, priority=1)],
            {"cycles": 1}),
        [expect(admitted=["ns/x"], pending={"ns/y": ("active", NO_LONGER_FITS)})],
        id="only one workload can borrow a resource in the same cycle if the cohort quota cannot fit both "
           "(TestSchedule): the higher priority head wins and the other goes back to the heap",
    ),
    pytest.param(
        trace(cohort(("cq-a", 2), ("cq-b", 2), ("lender", 6)) + [
            workload("x", queue="lq-cq-a", cpu=6, created=1), workload("y", queue="lq-cq-b", cpu=6, created=0)],
            {"cycles": 1}),
        [expect(admitted=["ns/y"], pending={"ns/x": ("active", NO_LONGER_FITS)})],
        id="same cycle competition at equal priority: the older head wins",
    ),
    pytest.param(
        trace(cohort(("cq-a", 2), ("cq-b", 2), ("lender", 6)) + [
            workload("x", queue="lq-cq-a", cpu=4), workload("y", queue="lq-cq-b", cpu=4)], {"cycles": 1}),
        [expect(admitted=["ns/x", "ns/y"])],
        id="two workloads can borrow the same resource in the same cycle if both fit the cohort quota (TestSchedule)",
    ),
    pytest.param(
        trace([flavor(), *(cluster_queue(name, group({"default": {"cpu": cpu, "memory": mem}}), cohort="c")
                           for name, cpu, mem in (("cq-a", 2, "2Gi"), ("cq-b", 2, "2Gi"), ("lender", 2, "2Gi"))),
               local_queue("lq-a", "cq-a"), local_queue("lq-b", "cq-b"),
               workload("cpu-hungry", queue="lq-a", cpu=4, memory="1Gi"),
               workload("memory-hungry", queue="lq-b", cpu=1, memory="4Gi")], {"cycles": 1}),
        [expect(admitted=["ns/cpu-hungry", "ns/memory-hungry"])],
        id="two workloads can borrow different resources from the same flavor in the same cycle (TestSchedule)",
    ),
    pytest.param(
        trace(cohort(("cq-a", 2), ("cq-b", 2), ("lender", 6)) + [
            workload("x", queue="lq-cq-a", cpu=6, priority=5), workload("y", queue="lq-cq-b", cpu=6, priority=1)]),
        [expect(admitted=["ns/x"], pending={"ns/y": ("inadmissible", "couldn't assign flavors to pod set main: "
                                                                     "insufficient unused quota for cpu in flavor default, 2 more needed")})],
        id="the loser of a same-cycle competition is retried next cycle and then parked",
    ),
]


@pytest.mark.parametrize(("scenario", "steps"), FLAVOR_SCENARIOS + AFFINITY_SCENARIOS + COHORT_SCENARIOS)
def test_flavor_and_cohort_scenario(scenario: dict, steps: list[dict]) -> None:
    check_scenario(scenario, steps)
