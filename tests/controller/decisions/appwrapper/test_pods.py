"""Pod accounting of an AppWrapper and the Autopilot noExecute nodes (docs/appwrapper.md, "Lifecycle", "Node health").

We test these aspects: counts by phase with terminating pods; exit codes of failed pods; which
running pods must leave a flagged node (upstream item 19 for the node side); and invariants with
Hypothesis (counts never exceed the pods present, order does not matter).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchgate import keys
from controller.decisions.appwrapper.pods import PodCounts, count_pods, no_execute_nodes

EVICT_LABEL = {keys.AUTOPILOT_GPU_HEALTH_LABEL: "EVICT"}
EVICT = {keys.AUTOPILOT_GPU_HEALTH_LABEL: ("EVICT",)}


def a_pod(name: str = "p", phase: str | None = "Running", *, node: str | None = "n1", gpus: str | None = None,
          gpu_limit: str | None = None, init_gpus: str | None = None, deleting: bool = False,
          exit_codes: tuple[int, ...] = ()) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if gpus is not None:
        resources["requests"] = {keys.GPU_RESOURCE: gpus, "cpu": "1"}
    if gpu_limit is not None:
        resources["limits"] = {keys.GPU_RESOURCE: gpu_limit}
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox", "resources": resources}]}
    if init_gpus is not None:
        spec["initContainers"] = [{"name": "init", "image": "busybox",
                                   "resources": {"requests": {keys.GPU_RESOURCE: init_gpus}}}]
    if node:
        spec["nodeName"] = node
    meta: dict[str, Any] = {"name": name, "namespace": "team-a", "labels": {keys.APPWRAPPER_LABEL: "aw"}}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-23T12:00:00Z"
    status: dict[str, Any] = {}
    if phase is not None:
        status["phase"] = phase
    if exit_codes:
        status["containerStatuses"] = [{"name": f"c{i}", "state": {"terminated": {"exitCode": code}}}
                                       for i, code in enumerate(exit_codes)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def a_node(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels)}}


COUNT_CASES = [
    pytest.param([], frozenset(), PodCounts(), id="no pods count nothing"),
    pytest.param(
        [a_pod("a", "Pending"), a_pod("b", "Running"), a_pod("c", "Succeeded"), a_pod("d", "Failed")], frozenset(),
        PodCounts(pending=1, running=1, succeeded=1, failed=1, present=4),
        id="each phase is counted once",
    ),
    pytest.param(
        [a_pod("a", "Running", deleting=True), a_pod("b", "Running")], frozenset(),
        PodCounts(running=1, present=2),
        id="a running pod being deleted is not running but still present",
    ),
    pytest.param(
        [a_pod("a", "Succeeded", deleting=True), a_pod("b", "Failed", deleting=True)], frozenset(),
        PodCounts(succeeded=1, failed=1, present=2),
        id="finished pods being deleted still count in their phase",
    ),
    pytest.param([a_pod("a", None, node=None)], frozenset(), PodCounts(pending=1, present=1),
                 id="a pod without a phase yet is pending"),
    pytest.param([a_pod("a", "Unknown")], frozenset(), PodCounts(present=1),
                 id="a pod in phase Unknown is present but in no count"),
    pytest.param(
        [a_pod("a", "Failed", exit_codes=(0, 42)), a_pod("b", "Failed", exit_codes=(3, 42))], frozenset(),
        PodCounts(failed=2, failed_exit_codes=(3, 42), present=2),
        id="failed pods give their non-zero exit codes sorted and unique",
    ),
    pytest.param([a_pod("a", "Running", exit_codes=(1,))], frozenset(), PodCounts(running=1, present=1),
                 id="exit codes of pods that have not failed are ignored"),
    pytest.param(
        [a_pod("a", gpus="1", node="n1"), a_pod("b", gpus="1", node="n2")], frozenset({"n1"}),
        PodCounts(running=2, evicting=("a",), evicting_nodes=("n1",), present=2),
        id="a running gpu pod on a flagged node must leave",
    ),
    pytest.param([a_pod("a", node="n1")], frozenset({"n1"}), PodCounts(running=1, present=1),
                 id="a pod without gpus may stay on a flagged node"),
    pytest.param([a_pod("a", gpus="0", node="n1")], frozenset({"n1"}), PodCounts(running=1, present=1),
                 id="a pod requesting zero gpus may stay on a flagged node"),
    pytest.param(
        [a_pod("a", gpu_limit="2", node="n1")], frozenset({"n1"}),
        PodCounts(running=1, evicting=("a",), evicting_nodes=("n1",), present=1),
        id="a gpu limit alone is enough to leave",
    ),
    pytest.param(
        [a_pod("a", init_gpus="1", node="n1")], frozenset({"n1"}),
        PodCounts(running=1, evicting=("a",), evicting_nodes=("n1",), present=1),
        id="a gpu asked for by an init container is enough to leave",
    ),
    pytest.param([a_pod("a", "Pending", gpus="1", node="n1")], frozenset({"n1"}), PodCounts(pending=1, present=1),
                 id="a pending pod on a flagged node is not evicting"),
    pytest.param([a_pod("a", gpus="1", node="n1", deleting=True)], frozenset({"n1"}), PodCounts(present=1),
                 id="a pod already being deleted is not evicting"),
]


@pytest.mark.parametrize(("pods", "flagged", "expected"), COUNT_CASES)
def test_count_pods(pods: list[dict[str, Any]], flagged: frozenset[str], expected: PodCounts) -> None:
    assert count_pods(pods, flagged) == expected


def test_another_flagged_resource_is_checked_instead_of_gpus() -> None:
    pod = a_pod("a", gpus="1", node="n1")
    pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/roce_gdr"] = "1"
    assert count_pods([pod], frozenset({"n1"}), "nvidia.com/roce_gdr").evicting == ("a",)
    assert count_pods([a_pod("b", gpus="1", node="n1")], frozenset({"n1"}), "nvidia.com/roce_gdr").evicting == ()


NODE_CASES = [
    pytest.param([a_node("n1", **EVICT_LABEL)], EVICT, frozenset({"n1"}), id="a node labelled EVICT is flagged"),
    pytest.param([a_node("n1", **{keys.AUTOPILOT_GPU_HEALTH_LABEL: "WARN"})], EVICT, frozenset(),
                 id="a node labelled with another value is not flagged"),
    pytest.param([a_node("n1")], EVICT, frozenset(), id="a node whose label was removed is not flagged"),
    pytest.param([a_node("n1", **EVICT_LABEL), a_node("n2", **EVICT_LABEL), a_node("n3")], EVICT, frozenset({"n1", "n2"}),
                 id="every flagged node is found"),
    pytest.param([a_node("n1", **EVICT_LABEL)], {}, frozenset(), id="a policy without NoExecute values flags nothing"),
    pytest.param([a_node("n1", health="bad")], {**EVICT, "health": ("worse", "bad")}, frozenset({"n1"}),
                 id="any NoExecute value of any one of several policy labels flags a node"),
    pytest.param([{"metadata": {"name": "n1"}}], EVICT, frozenset(), id="a node without labels is not flagged"),
]


@pytest.mark.parametrize(("nodes", "labels", "expected"), NODE_CASES)
def test_no_execute_nodes(nodes: list[dict[str, Any]], labels: dict[str, tuple[str, ...]],
                          expected: frozenset[str]) -> None:
    assert no_execute_nodes(nodes, labels) == expected


pods_st = st.lists(
    st.builds(
        a_pod,
        name=st.sampled_from(["a", "b", "c", "d"]),
        phase=st.sampled_from([None, "Pending", "Running", "Succeeded", "Failed", "Unknown"]),
        node=st.sampled_from([None, "n1", "n2"]),
        gpus=st.sampled_from([None, "0", "1", "500m"]),
        deleting=st.booleans(),
        exit_codes=st.lists(st.integers(0, 3), max_size=2).map(tuple),
    ),
    max_size=8,
)


@given(pods_st, st.frozensets(st.sampled_from(["n1", "n2"])), st.randoms())
def test_counts_are_bounded_and_independent_of_order(pods: list[dict[str, Any]], flagged: frozenset[str],
                                                     rnd: Any) -> None:
    counts = count_pods(pods, flagged)
    assert counts.present == len(pods)
    assert counts.pending + counts.running + counts.succeeded + counts.failed <= counts.present
    assert set(counts.evicting_nodes) <= flagged
    assert list(counts.failed_exit_codes) == sorted(set(counts.failed_exit_codes)) and 0 not in counts.failed_exit_codes
    shuffled = list(pods)
    rnd.shuffle(shuffled)
    assert count_pods(shuffled, flagged) == counts


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
pod_parts = st.fixed_dictionaries({}, optional={
    "metadata": json_values | st.fixed_dictionaries({"name": json_values, "deletionTimestamp": json_values}),
    "spec": json_values | st.fixed_dictionaries({"nodeName": st.just("n1") | json_values, "containers": json_values}),
    "status": json_values | st.fixed_dictionaries({"phase": st.sampled_from(["Running", "Failed"]) | json_values,
                                                   "containerStatuses": json_values}),
})


@given(st.lists(pod_parts, max_size=4), st.lists(pod_parts, max_size=3))
def test_malformed_pods_and_nodes_are_counted_without_raising(pods: list[dict[str, Any]],
                                                              nodes: list[dict[str, Any]]) -> None:
    flagged = no_execute_nodes(nodes, EVICT)
    assert count_pods(pods, flagged | {"n1"}).present == len(pods)
