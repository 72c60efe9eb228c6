"""Unusable capacity and the slack ClusterQueue's lending limits, as upstream's node monitors.

Reference: project-codeflare/appwrapper internal/controller/appwrapper/node_health_monitor.go
(nodeIsUnscheduable, updateNoScheduleNodes) and slackcq_monitor.go with its tests in
node_health_monitor_test.go (before the slack monitor's removal in 10c7292): a cordoned or NotReady
node makes all its capacity unusable; a NoSchedule or NoExecute health value its GPUs; the slack
queue's first flavor gets lendingLimit = nominal - unusable (0 at least), and none once all is
usable again.
"""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest

from batchgate import keys
from batchgate.policy import NodeHealth
from controller.decisions.appwrapper.node_health import LendingChange, slack_lending_limits, unusable, unusable_total

HEALTH = NodeHealth()  # upstream's Autopilot defaults: WARN PreferNoSchedule, TESTING NoSchedule, EVICT NoExecute
GPU = keys.GPU_RESOURCE
CAPACITY = {"cpu": "16", "memory": "64Gi", GPU: "8", "pods": "110"}


def a_node(name: str = "n1", *, health: str | None = None, cordoned: bool = False, taint: str | None = None,
           ready: str | None = "True", gpus: str = "8") -> dict[str, Any]:
    node: dict[str, Any] = {"metadata": {"name": name, "labels": {}}, "spec": {},
                            "status": {"capacity": {**CAPACITY, GPU: gpus}}}
    if health is not None:
        node["metadata"]["labels"][keys.AUTOPILOT_GPU_HEALTH_LABEL] = health
    if cordoned:
        node["spec"]["unschedulable"] = True
    if taint is not None:
        node["spec"]["taints"] = [{"key": taint, "effect": "NoSchedule"}]
    if ready is not None:
        node["status"]["conditions"] = [{"type": "Ready", "status": ready}]
    return node


ALL_BUT_PODS = {"cpu": Decimal(16), "memory": Decimal(64 * 2**30), GPU: Decimal(8)}

UNUSABLE_CASES = [
    pytest.param(a_node(), {}, id="a healthy node loses nothing"),
    pytest.param(a_node(cordoned=True), ALL_BUT_PODS, id="a cordoned node loses everything but its pod count"),
    pytest.param(a_node(taint="node.kubernetes.io/not-ready"), ALL_BUT_PODS,
                 id="a node tainted not-ready by the lifecycle controller loses everything"),
    pytest.param(a_node(taint="node.kubernetes.io/unreachable"), ALL_BUT_PODS, id="an unreachable node loses everything"),
    pytest.param(a_node(ready="False"), ALL_BUT_PODS, id="a node whose kubelet says NotReady loses everything"),
    pytest.param(a_node(health="EVICT"), {GPU: Decimal(8)}, id="a NoExecute health value loses the GPUs"),
    pytest.param(a_node(health="TESTING"), {GPU: Decimal(8)}, id="a NoSchedule health value loses the GPUs"),
    pytest.param(a_node(health="WARN"), {}, id="a PreferNoSchedule health value loses nothing"),
    pytest.param(a_node(health="EVICT", gpus="0"), {}, id="a flagged node without GPUs loses nothing"),
    pytest.param(a_node(taint="example.com/other"), {}, id="another taint loses nothing"),
]


@pytest.mark.parametrize("node, expected", UNUSABLE_CASES)
def test_unusable(node: dict[str, Any], expected: dict[str, Decimal]) -> None:
    assert unusable(node, HEALTH) == expected


def test_unusable_adds_up_over_nodes_and_ignores_junk() -> None:
    nodes = [a_node("a", health="EVICT"), a_node("b", health="TESTING", gpus="4"), a_node("c"),
             {"metadata": "junk"}, {"status": {"capacity": {GPU: "lots"}}, "spec": {"unschedulable": True}}]
    assert unusable_total(nodes, HEALTH) == {GPU: Decimal(12)}


def test_a_policy_without_health_labels_only_counts_unschedulable_nodes() -> None:
    assert unusable(a_node(health="EVICT"), NodeHealth(labels={})) == {}


def a_slack_queue(gpu: str = "16", cpu: str = "64", *, gpu_limit: str | None = None) -> dict[str, Any]:
    gpu_quota: dict[str, Any] = {"name": GPU, "nominalQuota": gpu}
    if gpu_limit is not None:
        gpu_quota["lendingLimit"] = gpu_limit
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
            "metadata": {"name": "slack", "resourceVersion": "7"},
            "spec": {"cohort": "all", "resourceGroups": [
                {"coveredResources": ["cpu", GPU], "flavors": [
                    {"name": "default", "resources": [{"name": "cpu", "nominalQuota": cpu}, gpu_quota]},
                    {"name": "other", "resources": [{"name": "cpu", "nominalQuota": "1"},
                                                    {"name": GPU, "nominalQuota": "1"}]}]}]}}


def gpu_quota_of(cq: dict[str, Any], flavor: int = 0) -> dict[str, Any]:
    return cq["spec"]["resourceGroups"][0]["flavors"][flavor]["resources"][1]


SLACK_CASES = [
    pytest.param(a_slack_queue(), {GPU: Decimal(8)}, "8", (LendingChange(GPU, None, Decimal(8)),),
                 id="unusable GPUs cap what the slack queue lends"),
    pytest.param(a_slack_queue(gpu_limit="8"), {GPU: Decimal(12)}, "4", (LendingChange(GPU, Decimal(8), Decimal(4)),),
                 id="more unusable GPUs lower the cap further"),
    pytest.param(a_slack_queue(), {GPU: Decimal(40)}, "0", (LendingChange(GPU, None, Decimal(0)),),
                 id="more unusable than nominal lends nothing, never a negative limit"),
    pytest.param(a_slack_queue(gpu_limit="8"), {}, None, (LendingChange(GPU, Decimal(8), None),),
                 id="all usable again removes the limit"),
]


@pytest.mark.parametrize("cq, missing, limit, changes", SLACK_CASES)
def test_slack_lending_limits(cq: dict[str, Any], missing: dict[str, Decimal], limit: str | None,
                              changes: tuple[LendingChange, ...]) -> None:
    before = copy.deepcopy(cq)
    update = slack_lending_limits(cq, missing)
    assert update is not None and update.changes == changes
    assert gpu_quota_of(update.cluster_queue).get("lendingLimit") == limit
    assert gpu_quota_of(update.cluster_queue, flavor=1) == gpu_quota_of(cq, flavor=1), "only the first flavor changes"
    assert update.cluster_queue["metadata"]["resourceVersion"] == "7", "written back guarded by the version read"
    assert cq == before, "the observed object is not changed"


@pytest.mark.parametrize("cq, missing", [
    pytest.param(a_slack_queue(gpu_limit="8"), {GPU: Decimal(8)}, id="a limit already right changes nothing"),
    pytest.param(a_slack_queue(gpu_limit="8000m"), {GPU: Decimal(8)}, id="the same quantity written differently is right"),
    pytest.param(a_slack_queue(), {}, id="no limit and nothing unusable changes nothing"),
    pytest.param({"spec": {"resourceGroups": []}}, {GPU: Decimal(8)}, id="a queue without a resource group is left alone"),
    pytest.param({"spec": "junk"}, {GPU: Decimal(8)}, id="a malformed queue is left alone"),
])
def test_nothing_to_write(cq: dict[str, Any], missing: dict[str, Decimal]) -> None:
    assert slack_lending_limits(cq, missing) is None


def test_cpu_of_a_cordoned_node_caps_cpu_lending_too() -> None:
    update = slack_lending_limits(a_slack_queue(), unusable_total([a_node(cordoned=True)], HEALTH))
    assert update is not None
    resources = update.cluster_queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert [(r["name"], r.get("lendingLimit")) for r in resources] == [("cpu", "48"), (GPU, "8")]
    assert update.changes[0].describe(Decimal(16)) == (
        "lendingLimit of cpu set to 48: 16 unusable on unhealthy or unschedulable nodes")
