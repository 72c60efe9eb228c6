"""We test simulated nodes: flags and nodes files (and their errors), heartbeats, the lifecycle
controller's taints for NotReady, unreachable and cordoned nodes, and taint-based eviction."""

from __future__ import annotations

import datetime as dt

import pytest

from localcluster.sim.nodes import (
    NodesError,
    evictions,
    full_disruption,
    kubelet_conditions,
    new_node,
    node_health,
    nodes_from_flags,
    parse_nodes_file,
    unhealthy,
)
from tests.localcluster.runtime.builders import a_node, a_pod, at


def test_flag_nodes_have_capacity_allocatable_gpus_and_ready():
    spec = nodes_from_flags(2, "16", "64Gi", 8)
    node = new_node(spec[1], 1, at(0))
    assert node["metadata"]["name"] == "node-1"
    assert node["status"]["capacity"] == node["status"]["allocatable"] == {
        "cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "8", "pods": "110"}
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "KubeletReady")
    assert node["status"]["addresses"][0] == {"type": "InternalIP", "address": "10.0.0.3"}


def test_a_nodes_file_gives_names_labels_taints_counts():
    nodes = parse_nodes_file("""
nodes:
- name: gpu
  count: 2
  labels: {gpu-type: a100}
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  capacity: {cpu: "32", memory: 256Gi, nvidia.com/gpu: 8}
- name: cpu-0
  capacity: {cpu: 8, memory: 32Gi}
""")
    assert [n.name for n in nodes] == ["gpu-0", "gpu-1", "cpu-0"]
    assert nodes[0].labels == {"gpu-type": "a100"}
    assert nodes[0].taints == ({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},)
    assert nodes[2].capacity == {"cpu": "8", "memory": "32Gi", "pods": "110"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("- name: a\n  capacity: {cpu: lots}\n", "nodes[0] (a) capacity cpu: invalid quantity 'lots'",
                     id="a capacity that is not a quantity"),
        pytest.param("- name: a\n  capacity: {memory: -1Gi}\n", "capacity memory: must not be negative",
                     id="a negative capacity"),
        pytest.param("- capacity: {cpu: 1}\n", "nodes[0].name: required", id="a node without a name"),
        pytest.param("- name: a\n", "nodes[0].capacity: required", id="a node without capacity"),
        pytest.param("- name: a\n  cpu: 4\n  capacity: {cpu: 1}\n", "unknown field(s) cpu", id="a misplaced field"),
        pytest.param("- name: a\n  capacity: {cpu: 1}\n  taints: [{key: x, effect: Sometimes}]\n",
                     "taints[0].effect: must be one of", id="a taint with a bad effect"),
        pytest.param("- {name: a, capacity: {cpu: 1}}\n- {name: a, capacity: {cpu: 1}}\n", "'a' appears twice",
                     id="a duplicate name"),
        pytest.param("{}", "expected a non-empty list", id="no nodes"),
        pytest.param("[unclosed", "not YAML", id="not yaml"),
    ],
)
def test_bad_nodes_files_are_clear_errors(text, message):
    with pytest.raises(NodesError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")):
        parse_nodes_file(text)


def test_bad_flags_are_clear_errors():
    with pytest.raises(NodesError, match="capacity memory: invalid quantity '64 gigs'"):
        nodes_from_flags(1, "8", "64 gigs", 0)


def heartbeating(node, seconds, ready=True):
    node["status"]["conditions"] = kubelet_conditions(node["status"].get("conditions"), ready, at(seconds))
    return node


@pytest.mark.parametrize(
    ("ready", "last_beat", "unschedulable", "keys", "unknown"),
    [
        pytest.param(True, 0, False, [], False, id="a heartbeating ready node has no taints"),
        pytest.param(False, 0, False, ["node.kubernetes.io/not-ready"] * 2, False, id="a NotReady node is tainted not-ready"),
        pytest.param(True, -40, False, ["node.kubernetes.io/unreachable"] * 2, True,
                     id="a node silent for the grace period is unreachable and Unknown"),
        pytest.param(True, 0, True, ["node.kubernetes.io/unschedulable"], False, id="a cordoned node is tainted unschedulable"),
    ],
)
def test_node_lifecycle_taints(ready, last_beat, unschedulable, keys, unknown):
    node = heartbeating(a_node("n1", unschedulable=unschedulable), 100 + last_beat, ready)
    health = node_health(node, None, at(100))
    assert [t["key"] for t in health.taints] == keys
    assert health.ready_unknown is unknown


def test_user_taints_are_kept_and_no_execute_taints_keep_their_time_added():
    node = heartbeating(a_node("n1", taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]), 0, ready=False)
    first = node_health(node, None, at(5))
    node["spec"]["taints"] = first.taints
    heartbeating(node, 45, ready=False)
    again = node_health(node, None, at(50))
    assert again.taints[0]["key"] == "dedicated"
    assert next(t for t in again.taints if t["effect"] == "NoExecute")["timeAdded"] == "2026-01-01T00:00:05Z"


def test_a_renewed_lease_keeps_the_node_reachable():
    node = heartbeating(a_node("n1"), 0)
    assert node_health(node, at(90), at(100)).taints == []


def tainted(seconds_ago, key="node.kubernetes.io/not-ready", now=400):
    node = a_node("n1")
    node["spec"]["taints"] = [{"key": key, "effect": "NoExecute",
                               "timeAdded": (at(now - seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")}]
    return node


@pytest.mark.parametrize(
    ("pod", "seconds_ago", "evicted", "wake"),
    [
        pytest.param(a_pod("p", node="n1"), 299, [], 1, id="a pod is tolerated for the default 300s"),
        pytest.param(a_pod("p", node="n1"), 300, ["p"], None, id="after 300s it is evicted"),
        pytest.param(a_pod("p", node="n1", tolerations=[{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                                         "effect": "NoExecute", "tolerationSeconds": 10}]),
                     10, ["p"], None, id="its own tolerationSeconds wins"),
        pytest.param(a_pod("p", node="n1", tolerations=[{"operator": "Exists"}]), 10_000, [], None,
                     id="a toleration without seconds stays forever"),
    ],
)
def test_taint_based_eviction(pod, seconds_ago, evicted, wake):
    due, wake_at = evictions(tainted(seconds_ago), [pod], at(400))
    assert [e.name for e in due] == evicted
    assert (None if wake_at is None else (wake_at - at(400)).total_seconds()) == wake


def test_an_untolerated_no_execute_taint_evicts_at_once():
    node = a_node("n1", taints=[{"key": "maintenance", "effect": "NoExecute"}])
    due, _ = evictions(node, [a_pod("p", node="n1")], at(0))
    assert [(e.name, e.taint) for e in due] == [("p", "maintenance")]


def test_when_every_node_is_unhealthy_nothing_is_evicted():
    nodes = [heartbeating(a_node(f"n{i}"), 0) for i in range(3)]
    flags = [unhealthy(n, None, at(100)) for n in nodes]
    assert full_disruption(flags) is True
    health = node_health(nodes[0], None, at(100), disrupted=True)
    assert [(t["key"], t["effect"]) for t in health.taints] == [("node.kubernetes.io/unreachable", "NoSchedule")]


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        pytest.param([True, False, True], False, id="one healthy node is no full disruption"),
        pytest.param([True], True, id="a single unhealthy node is"),
        pytest.param([], False, id="no nodes is not"),
    ],
)
def test_full_disruption(flags, expected):
    assert full_disruption(flags) is expected
