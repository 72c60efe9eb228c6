"""The per-node filters, the GPU packing score and kube-scheduler's FailedScheduling wording."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from typing import Any

import pytest

from batchgate.api.errors import FieldError
from controller.decisions.gang.node_fit import failure_message, free_of, gpu_score, node_reason, parse_pod, resource_reasons
from tests.controller.decisions.gang_builders import a_node, a_pod, a_pod_dict

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
ZONE_A = {"topology.kubernetes.io/zone": "a"}


def term(key: str, operator: str, *values: str, field: bool = False) -> dict[str, Any]:
    return {"matchFields" if field else "matchExpressions": [{"key": key, "operator": operator, "values": list(values)}]}


@pytest.mark.parametrize(("pod", "node", "reason"), [
    pytest.param(a_pod("p"), a_node("n"), None, id="a plain pod fits a plain node"),
    pytest.param(a_pod("p"), a_node("n", unschedulable=True), "node(s) were unschedulable",
                 id="a cordoned node is refused"),
    pytest.param(a_pod("p", tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                                          "effect": "NoSchedule"}]),
                 a_node("n", unschedulable=True), None, id="a pod tolerating the cordon may use the cordoned node"),
    pytest.param(a_pod("p"), a_node("n", taints=[GPU_TAINT]), "node(s) had untolerated taint {nvidia.com/gpu: true}",
                 id="an untolerated NoSchedule taint refuses the node"),
    pytest.param(a_pod("p", tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}]),
                 a_node("n", taints=[GPU_TAINT]), None, id="an Exists toleration of the key tolerates the taint"),
    pytest.param(a_pod("p", tolerations=[{"key": "nvidia.com/gpu", "value": "false"}]),
                 a_node("n", taints=[GPU_TAINT]), "node(s) had untolerated taint {nvidia.com/gpu: true}",
                 id="an Equal toleration with another value does not tolerate the taint"),
    pytest.param(a_pod("p"), a_node("n", taints=[{"key": "soft", "value": "", "effect": "PreferNoSchedule"}]), None,
                 id="a PreferNoSchedule taint does not filter"),
    pytest.param(a_pod("p"), a_node("n", taints=[{"key": "node.kubernetes.io/unreachable", "value": "",
                                                  "effect": "NoExecute"}]),
                 "node(s) had untolerated taint {node.kubernetes.io/unreachable: }",
                 id="an untolerated NoExecute taint refuses the node"),
    pytest.param(a_pod("p"), a_node("n", ready=False), "node(s) were not ready", id="a NotReady node is refused"),
    pytest.param(a_pod("p", node_selector=ZONE_A), a_node("n"), "node(s) didn't match Pod's node affinity/selector",
                 id="a nodeSelector the node's labels lack refuses it"),
    pytest.param(a_pod("p", node_selector=ZONE_A), a_node("n", labels=ZONE_A), None,
                 id="a nodeSelector the node's labels carry accepts it"),
    pytest.param(a_pod("p", affinity=[term("zone", "In", "a", "b")]), a_node("n", labels={"zone": "b"}), None,
                 id="required affinity In accepts a listed value"),
    pytest.param(a_pod("p", affinity=[term("zone", "NotIn", "b")]), a_node("n", labels={"zone": "b"}),
                 "node(s) didn't match Pod's node affinity/selector", id="required affinity NotIn refuses a listed value"),
    pytest.param(a_pod("p", affinity=[term("zone", "In", "x"), term("gpus", "Gt", "4")]),
                 a_node("n", labels={"gpus": "8"}), None, id="affinity terms are ORed and Gt compares integers"),
    pytest.param(a_pod("p", affinity=[term("gpus", "Lt", "4")]), a_node("n", labels={"gpus": "eight"}),
                 "node(s) didn't match Pod's node affinity/selector", id="Lt on a label that is no integer does not match"),
    pytest.param(a_pod("p", affinity=[term("metadata.name", "In", "n", field=True)]), a_node("n"), None,
                 id="matchFields on metadata.name picks the node by name"),
    pytest.param(a_pod("p", affinity=[{}]), a_node("n"), "node(s) didn't match Pod's node affinity/selector",
                 id="an empty affinity term matches no node"),
])
def test_node_filters(pod: Any, node: Any, reason: str | None) -> None:
    assert node_reason(pod.constraints, node) == reason


@pytest.mark.parametrize(("pod", "used", "node", "reasons"), [
    pytest.param(a_pod("p", gpus=4), {"nvidia.com/gpu": Decimal(4)}, a_node("n"), [],
                 id="four GPUs fit in the four left"),
    pytest.param(a_pod("p", gpus=4), {"nvidia.com/gpu": Decimal(5)}, a_node("n"), ["Insufficient nvidia.com/gpu"],
                 id="four GPUs do not fit in three"),
    pytest.param(a_pod("p", gpus=1, cpu="40"), {}, a_node("n"), ["Insufficient cpu"],
                 id="cpu beyond allocatable is insufficient"),
    pytest.param(a_pod("p", gpus=1), {}, a_node("n", gpus=0), ["Insufficient nvidia.com/gpu"],
                 id="a node without GPUs cannot take a GPU pod"),
    pytest.param(a_pod("p"), {"pods": Decimal(2)}, a_node("n", pods=2), ["Too many pods"],
                 id="the pods count is a resource"),
    pytest.param(a_pod("p"), {"pods": Decimal(110)}, a_node("n"), ["Too many pods"],
                 id="a node reporting no pods capacity holds 110"),
    pytest.param(a_pod("p", gpus=2, init_gpus=6), {"nvidia.com/gpu": Decimal(4)}, a_node("n"),
                 ["Insufficient nvidia.com/gpu"], id="an init container asking for more than the containers counts"),
])
def test_resource_fit(pod: Any, used: dict[str, Decimal], node: Any, reasons: list[str]) -> None:
    assert resource_reasons(pod.requests, free_of(node, used)) == reasons


@pytest.mark.parametrize(("gpus", "used", "node_gpus", "score"), [
    pytest.param(4, 0, 8, 50, id="four GPUs on an empty 8-GPU node score 50"),
    pytest.param(4, 4, 8, 100, id="four GPUs filling a half-full node score 100"),
    pytest.param(1, 2, 8, 37, id="the ratio is rounded down as kube-scheduler's integer arithmetic does"),
    pytest.param(0, 4, 8, 0, id="a pod asking for no GPU scores 0 everywhere"),
    pytest.param(1, 0, 0, 0, id="a node without GPUs scores 0"),
])
def test_gpu_packing_score(gpus: int, used: int, node_gpus: int, score: int) -> None:
    pod, node = a_pod("p", gpus=gpus), a_node("n", gpus=node_gpus)
    assert gpu_score(dict(pod.requests), node, free_of(node, {"nvidia.com/gpu": Decimal(used)})) == score


def test_the_failure_message_is_kube_schedulers_sorted_histogram() -> None:
    reasons = Counter({"node(s) didn't match Pod's node affinity/selector": 3, "Insufficient nvidia.com/gpu": 2})
    assert failure_message(5, reasons) == ("0/5 nodes are available: 2 Insufficient nvidia.com/gpu, "
                                           "3 node(s) didn't match Pod's node affinity/selector.")
    assert failure_message(0, Counter()) == "no nodes available to schedule pods"


@pytest.mark.parametrize(("patch", "path"), [
    pytest.param({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}},
                 "spec.containers[0].resources.requests", id="a request that is no quantity names its field"),
    pytest.param({"spec": {"containers": [], "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "k", "operator": "Near"}]}]}}}}},
                 "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
                 ".matchExpressions[0].operator", id="an unknown affinity operator names its field"),
    pytest.param({"spec": {"containers": [], "tolerations": "all"}}, "spec.tolerations",
                 id="tolerations that are no list name their field"),
])
def test_a_malformed_pod_is_a_field_error_never_a_traceback(patch: dict[str, Any], path: str) -> None:
    raw = a_pod_dict("p")
    raw["spec"] = {**raw["spec"], **patch["spec"]}
    with pytest.raises(FieldError) as caught:
        parse_pod(raw)
    assert str(caught.value).startswith(path)
