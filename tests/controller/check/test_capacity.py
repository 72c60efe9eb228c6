"""Which nodes count as capacity, and over-commitment of nominal quotas against them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.check.findings import NODE_NOT_COUNTED, OVER_COMMITTED, UNQUOTED_CAPACITY
from tests.controller.check.builders import GPU, codes, node, run_check, taint
from tests.controller.decisions.trace_builders import (
    cluster_queue, flavor, group, local_queue, pod_set, quota, workload,
)

TOLERATE_ALL = {"operator": "Exists"}


def rf(name: str = "default", *, labels: dict[str, str] | None = None, node_taints: list[dict[str, str]] | None = None,
       tolerations: list[dict[str, str]] | None = None) -> dict[str, Any]:
    out = flavor(name, labels=labels, taints=node_taints)
    if tolerations:
        out["spec"]["tolerations"] = tolerations
    return out


def gpu_queue(name: str, gpus: Any, flavor_name: str = "default", cohort: str = "") -> dict[str, Any]:
    return cluster_queue(name, group({flavor_name: {GPU: gpus}}), cohort=cohort)


@pytest.mark.parametrize("nodes, flavors, counted, reason", [
    pytest.param([node("n")], [rf()], True, "",
                 id="a Ready untainted node counts for a flavor without node labels"),
    pytest.param([node("n", cordoned=True)], [rf()], False, "cordoned",
                 id="a cordoned node does not count"),
    pytest.param([node("n", ready=False)], [rf()], False, "not Ready",
                 id="a NotReady node does not count"),
    pytest.param([node("n", ready=None)], [rf()], False, "not Ready",
                 id="a node that never reported Ready does not count"),
    pytest.param([node("n", labels={"autopilot.ibm.com/gpuhealth": "EVICT"})], [rf()], False,
                 "autopilot.ibm.com/gpuhealth=EVICT", id="a node Autopilot marks GPU-unhealthy does not count"),
    pytest.param([node("n", labels={"autopilot.ibm.com/gpuhealth": "PASS"})], [rf()], True, "",
                 id="a node Autopilot marks healthy counts"),
    pytest.param([node("n", taints=[taint("dedicated", value="infra")])], [rf()], False,
                 "taint dedicated=infra:NoSchedule is not tolerated",
                 id="a NoSchedule taint no flavor tolerates keeps the node out"),
    pytest.param([node("n", taints=[taint("maint", "NoExecute")])], [rf()], False, "maint:NoExecute",
                 id="a NoExecute taint no flavor tolerates keeps the node out"),
    pytest.param([node("n", taints=[taint("soft", "PreferNoSchedule")])], [rf()], True, "",
                 id="a PreferNoSchedule taint does not keep the node out"),
    pytest.param([node("n", taints=[taint("gpu", value="a100")])],
                 [rf(tolerations=[{"key": "gpu", "operator": "Equal", "value": "a100", "effect": "NoSchedule"}])],
                 True, "", id="a taint the flavor's tolerations tolerate lets the node count"),
    pytest.param([node("n", taints=[taint("gpu", value="a100")])],
                 [rf(tolerations=[{"key": "gpu", "operator": "Equal", "value": "h100"}])],
                 False, "gpu=a100:NoSchedule", id="a toleration for another value does not tolerate the taint"),
    pytest.param([node("n", taints=[taint("anything", "NoExecute")])], [rf(tolerations=[TOLERATE_ALL])], True, "",
                 id="an Exists toleration without a key tolerates every taint"),
    pytest.param([node("n", taints=[taint("spot", value="true")])],
                 [rf(node_taints=[taint("spot", value="true")])], True, "",
                 id="a taint the flavor declares in nodeTaints counts for that flavor"),
    pytest.param([node("n", labels={"pool": "a"})], [rf(labels={"pool": "b"})], False,
                 "lacks the flavor's node label pool=b", id="a node without the flavor's node labels does not count"),
    pytest.param([node("n", gpus=8, taints=[taint(GPU, value="present")])],
                 [rf(), workload("w", pod_sets=[pod_set(tolerations=[{"key": GPU, "operator": "Exists"}], gpu=1)])],
                 True, "", id="a taint the Workloads' own pods tolerate lets the node count"),
    pytest.param([node("n", gpus=8, taints=[taint(GPU, value="present")])],
                 [rf(), workload("w", pod_sets=[pod_set(tolerations=[{"key": "other", "operator": "Exists"}], gpu=1)])],
                 False, "nvidia.com/gpu=present:NoSchedule", id="a Workload tolerating another taint does not help"),
    pytest.param([node("n", taints=[taint("t")])], [], False, "no ResourceFlavor",
                 id="with no ResourceFlavor a tainted node does not count"),
    pytest.param([node("n")], [], True, "", id="with no ResourceFlavor an untainted node counts"),
])
def test_which_nodes_count(nodes: list[dict[str, Any]], flavors: list[dict[str, Any]], counted: bool,
                           reason: str) -> None:
    report = run_check([*nodes, *flavors])
    verdict = report.nodes[0]
    assert verdict.counted is counted
    assert reason in verdict.reason
    assert (NODE_NOT_COUNTED in codes(report, "info")) is not counted


def test_a_node_counts_when_any_one_flavor_can_use_it() -> None:
    report = run_check([node("n", labels={"pool": "b"}), rf("a", labels={"pool": "a"}), rf("b", labels={"pool": "b"})])
    assert report.nodes[0].counted and report.nodes[0].flavors == ("b",)


@pytest.mark.parametrize("objects, gpu_capacity, gpu_nominal, expected_codes", [
    pytest.param([node("n1", gpus=8), node("n2", gpus=8), rf(), gpu_queue("a", 8), gpu_queue("b", 8)],
                 "16", "16", [], id="quotas that add up to capacity are neither over-committed nor short"),
    pytest.param([node("n1", gpus=8), rf(), gpu_queue("a", 8), gpu_queue("b", 8)],
                 "8", "16", [OVER_COMMITTED], id="quotas above the schedulable GPUs are an over-commitment error"),
    pytest.param([node("n1", gpus=8), node("n2", gpus=8, cordoned=True), rf(), gpu_queue("a", 16)],
                 "8", "16", [OVER_COMMITTED], id="a cordoned node's GPUs do not back quota"),
    pytest.param([node("n1", gpus=8), node("n2", gpus=8), rf(), gpu_queue("a", 8)],
                 "16", "8", [UNQUOTED_CAPACITY], id="capacity in no quota is reported as information"),
    pytest.param([node("n1", gpus=8), rf(), gpu_queue("a", 4, cohort="c"), gpu_queue("slack", 4, cohort="c")],
                 "8", "8", [], id="a slack queue's quota counts towards the sum like any other"),
])
def test_gpu_quota_against_capacity(objects: list[dict[str, Any]], gpu_capacity: str, gpu_nominal: str,
                                    expected_codes: list[str]) -> None:
    report = run_check(objects)
    row = next(r.to_json() for r in report.capacity if r.resource == GPU)
    assert (row["capacity"], row["nominalQuota"]) == (gpu_capacity, gpu_nominal)
    gpu_findings = [f.code for f in report.findings if f.subject == f"resource {GPU}"]
    assert gpu_findings == expected_codes
    assert report.has_errors is (OVER_COMMITTED in expected_codes)


def test_over_commitment_message_gives_both_figures_in_quantity_units() -> None:
    report = run_check([node("n", cpu="1"), rf(), cluster_queue("a", cpu="1500m")])
    [finding] = [f for f in report.findings if f.code == OVER_COMMITTED]
    assert finding.subject == "resource cpu"
    assert "sum to 1500m" in finding.reason and "have 1 allocatable" in finding.reason


def test_a_flavor_bound_to_some_nodes_is_over_committed_even_when_the_cluster_is_not() -> None:
    objects = [node("a100-1", gpus=8, labels={"gpu": "a100"}), node("h100-1", gpus=8, labels={"gpu": "h100"}),
               rf("a100", labels={"gpu": "a100"}), rf("h100", labels={"gpu": "h100"}),
               cluster_queue("q", group({"a100": {GPU: 12}, "h100": {GPU: 4}}))]
    report = run_check(objects)
    assert [r.to_json()["overCommitted"] for r in report.capacity] == [False]
    errors = [f for f in report.findings if f.severity == "error"]
    assert [f.subject for f in errors] == [f"ResourceFlavor a100 resource {GPU}"]
    assert "1 node(s) it can use have 8 allocatable" in errors[0].reason
    per_flavor = {r.flavor: (r.nodes, r.capacity, r.nominal) for r in report.flavor_capacity}
    assert per_flavor == {"a100": (1, 8, 12), "h100": (1, 8, 4)}


def test_usage_in_the_capacity_table_is_the_quota_held_by_admitted_workloads() -> None:
    objects = [node("n", gpus=8), rf(), gpu_queue("a", 8), local_queue("lq", "a"),
               workload("w", admitted_to="a", gpu=3, cpu=1, count=2)]
    row = next(r for r in run_check(objects).capacity if r.resource == GPU)
    assert row.usage == 6


@settings(max_examples=60, deadline=None)
@given(nodes=st.lists(st.tuples(st.integers(0, 16), st.booleans(), st.booleans(), st.booleans()), min_size=1, max_size=6),
       quotas=st.lists(st.integers(0, 40), min_size=1, max_size=4),
       tolerate=st.booleans())
def test_capacity_splits_every_node_once_and_errors_exactly_when_quota_exceeds_it(
        nodes: list[tuple[int, bool, bool, bool]], quotas: list[int], tolerate: bool) -> None:
    objects: list[dict[str, Any]] = [
        node(f"n{i}", gpus=gpus, cordoned=cordoned, ready=ready, taints=[taint("t")] if tainted else None)
        for i, (gpus, cordoned, ready, tainted) in enumerate(nodes)]
    objects.append(rf(tolerations=[TOLERATE_ALL] if tolerate else None))
    objects += [cluster_queue(f"q{i}", group({"default": {GPU: quota(q)}})) for i, q in enumerate(quotas)]
    report = run_check(objects)
    assert sorted(v.name for v in report.nodes) == sorted(f"n{i}" for i in range(len(nodes)))
    [row] = report.capacity
    expected = sum(g for g, cordoned, ready, tainted in nodes if not cordoned and ready and (tolerate or not tainted))
    assert row.capacity == expected
    assert row.capacity + row.not_counted == sum(g for g, *_ in nodes)
    assert row.nominal == sum(quotas)
    assert (OVER_COMMITTED in codes(report, "error")) is (sum(quotas) > expected)


def test_a_node_listed_twice_is_counted_once() -> None:
    report = run_check([node("n", gpus=8), node("n", gpus=4), rf(), gpu_queue("a", 4)])
    assert [v.name for v in report.nodes] == ["n"]
    assert report.capacity[0].capacity == 4
