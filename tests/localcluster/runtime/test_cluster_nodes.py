"""We test nodes on the running cluster: registration with capacity and leases, a node turned
NotReady or unreachable by a label getting the upstream taints and its pods evicted after their
toleration time, recovery, kubectl drain/taint/label, and pod GC for a deleted node."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.localcluster.runtime.conftest import eventually

HEALTH = "localcluster.batchgate.dev/health"


def core(api):
    return client.CoreV1Api(api)


def test_nodes_register_with_capacity_and_heartbeat_leases(sim_api):
    nodes = {n.metadata.name: n for n in core(sim_api).list_node().items}
    assert set(nodes) == {"gpu-0", "gpu-1", "cpu-0", "spare"}
    gpu = nodes["gpu-0"]
    assert gpu.status.allocatable["nvidia.com/gpu"] == "8" and gpu.status.capacity["cpu"] == "32"
    assert gpu.metadata.labels["gpu-type"] == "a100"
    leases = client.CoordinationV1Api(sim_api).list_namespaced_lease("kube-node-lease").items
    assert sorted(lease.metadata.name for lease in leases) == sorted(nodes)
    assert all([(o.kind, o.uid) for o in lease.metadata.owner_references] == [("Node", nodes[lease.metadata.name].metadata.uid)]
               for lease in leases)
    ready = next(c for c in gpu.status.conditions if c.type == "Ready")
    assert (ready.status, ready.reason) == ("True", "KubeletReady")


def pinned_pod(name, toleration_seconds):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeSelector": {"pool": "spare"}, "containers": [{"name": "main", "image": "busybox"}],
                     "tolerations": [
                         {"key": "dedicated", "operator": "Equal", "value": "spare", "effect": "NoSchedule"},
                         {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                          "tolerationSeconds": toleration_seconds},
                         {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                          "tolerationSeconds": toleration_seconds}]}}


def taint_keys(api, node):
    return sorted((t.key, t.effect) for t in core(api).read_node(node).spec.taints or [])


def pod_names(api, ns):
    return [p.metadata.name for p in core(api).list_namespaced_pod(ns).items if not p.metadata.deletion_timestamp]


@pytest.mark.parametrize(
    ("health", "taint", "ready"),
    [
        pytest.param("not-ready", "node.kubernetes.io/not-ready", "False", id="a NotReady node"),
        pytest.param("unreachable", "node.kubernetes.io/unreachable", "Unknown", id="a node whose kubelet went silent"),
    ],
)
def test_a_failed_node_is_tainted_and_its_pods_evicted_after_their_toleration(sim_api, sim_kubectl, ns, health, taint, ready):
    core(sim_api).create_namespaced_pod(ns, pinned_pod("short", 20))
    core(sim_api).create_namespaced_pod(ns, pinned_pod("long", 3600))
    eventually(lambda: all(p.status.phase == "Running" for p in core(sim_api).list_namespaced_pod(ns).items))
    sim_kubectl("label", "node", "spare", f"{HEALTH}={health}")
    try:
        assert eventually(lambda: (taint, "NoExecute") in taint_keys(sim_api, "spare"))
        assert (taint, "NoSchedule") in taint_keys(sim_api, "spare")
        status = next(c.status for c in core(sim_api).read_node("spare").status.conditions if c.type == "Ready")
        assert status == ready
        assert eventually(lambda: pod_names(sim_api, ns) == ["long"])
        reasons = [e.reason for e in core(sim_api).list_namespaced_event(ns).items if e.involved_object.name == "short"]
        assert "TaintManagerEviction" in reasons
    finally:
        sim_kubectl("label", "node", "spare", f"{HEALTH}-")
    assert eventually(lambda: taint_keys(sim_api, "spare") == [("dedicated", "NoSchedule")])
    assert eventually(lambda: next(c.status for c in core(sim_api).read_node("spare").status.conditions if c.type == "Ready") == "True")


def test_kubectl_drain_cordons_and_empties_a_node(sim_api, sim_kubectl, ns):
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": "cpu-0"}, "containers": [{"name": "main", "image": "busybox"}]}}
    core(sim_api).create_namespaced_pod(ns, body)
    eventually(lambda: core(sim_api).read_namespaced_pod("p", ns).status.phase == "Running")
    try:
        out = sim_kubectl("drain", "cpu-0", "--force", "--ignore-daemonsets", "--timeout=20s").stdout
        assert "node/cpu-0 drained" in out
        assert core(sim_api).read_node("cpu-0").spec.unschedulable is True
        assert eventually(lambda: pod_names(sim_api, ns) == [])
    finally:
        sim_kubectl("uncordon", "cpu-0")
        # The node lifecycle controller drops the unschedulable taint a moment after: wait, so that no
        # later test on this cluster sees it in a scheduling message.
        eventually(lambda: ("node.kubernetes.io/unschedulable", "NoSchedule") not in taint_keys(sim_api, "cpu-0"))


def test_kubectl_taint_and_label_node(sim_api, sim_kubectl, ns):
    sim_kubectl("taint", "node", "cpu-0", "maintenance=soon:NoSchedule")
    sim_kubectl("label", "node", "cpu-0", "team=ml")
    try:
        node = core(sim_api).read_node("cpu-0")
        assert ("maintenance", "NoSchedule") in [(t.key, t.effect) for t in node.spec.taints]
        assert node.metadata.labels["team"] == "ml"
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"nodeSelector": {"team": "ml"}, "containers": [{"name": "main", "image": "busybox"}]}}
        core(sim_api).create_namespaced_pod(ns, body)
        message = eventually(lambda: next((e.message for e in core(sim_api).list_namespaced_event(ns).items
                                           if e.reason == "FailedScheduling"), None))
        assert "1 node(s) had untolerated taint {maintenance: soon}" in message
    finally:
        sim_kubectl("taint", "node", "cpu-0", "maintenance-")
        sim_kubectl("label", "node", "cpu-0", "team-")
    assert eventually(lambda: core(sim_api).read_namespaced_pod("p", ns).spec.node_name == "cpu-0")


def test_pods_and_lease_of_a_deleted_node_go(sim_api, ns):
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"ghost-{ns}"}}
    core(sim_api).create_node(node)
    core(sim_api).patch_node_status(node["metadata"]["name"], {"status": {"capacity": {"cpu": "4", "pods": "10"},
                                                                          "allocatable": {"cpu": "4", "pods": "10"}}})
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"nodeName": node["metadata"]["name"], "containers": [{"name": "main", "image": "busybox"}]}}
    core(sim_api).create_namespaced_pod(ns, body)
    eventually(lambda: core(sim_api).read_namespaced_pod("p", ns).status.phase == "Running")
    leases = client.CoordinationV1Api(sim_api)
    assert eventually(lambda: node["metadata"]["name"] in [lease.metadata.name for lease in
                                                           leases.list_namespaced_lease("kube-node-lease").items])
    core(sim_api).delete_node(node["metadata"]["name"])
    assert eventually(lambda: pod_names(sim_api, ns) == [])
    # The node's heartbeat Lease is owned by the Node, so it goes with it (as kube-controller-manager's GC does).
    assert eventually(lambda: node["metadata"]["name"] not in [lease.metadata.name for lease in
                                                               leases.list_namespaced_lease("kube-node-lease").items])
