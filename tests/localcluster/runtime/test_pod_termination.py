"""We test how a deleted pod leaves, as kube-apiserver and the kubelet decide it: an object being
deleted goes at once when its last finalizer goes only if its grace period is 0; a pod in its
grace period stays Terminating until its kubelet stopped the containers and deleted it with grace
0, so on a node whose kubelet went silent it stays until someone force-deletes it."""

from __future__ import annotations

import time

from kubernetes import client

from tests.localcluster.runtime.conftest import eventually
from tests.localcluster.runtime.test_cluster_pods import create, pod_manifest

HEALTH = "localcluster.batchgate.dev/health"


def core(api):
    return client.CoreV1Api(api)


def names(api, ns):
    return [p.metadata.name for p in core(api).list_namespaced_pod(ns).items]


def on_spare(name, finalizer=None):
    manifest = pod_manifest(name, restart="Always", nodeSelector={"pool": "spare"},
                            tolerations=[{"key": "dedicated", "operator": "Equal", "value": "spare",
                                          "effect": "NoSchedule"}])
    if finalizer:
        manifest["metadata"]["finalizers"] = [finalizer]
    return manifest


def test_a_pod_whose_last_finalizer_goes_during_its_grace_period_stays_until_its_kubelet_stopped_it(sim_api, sim_kubectl, ns):
    create(sim_api, ns, on_spare("held", "example.com/hold"))
    eventually(lambda: core(sim_api).read_namespaced_pod("held", ns).status.phase == "Running")
    sim_kubectl("label", "node", "spare", f"{HEALTH}=unreachable")
    try:
        core(sim_api).delete_namespaced_pod("held", ns)
        core(sim_api).patch_namespaced_pod("held", ns, {"metadata": {"finalizers": None}})
        time.sleep(1)
        pod = core(sim_api).read_namespaced_pod("held", ns)
        assert pod.metadata.deletion_timestamp and pod.metadata.deletion_grace_period_seconds == 30
        assert pod.status.phase == "Running", "the silent kubelet cannot have stopped it"
    finally:
        sim_kubectl("label", "node", "spare", f"{HEALTH}-")
    assert eventually(lambda: names(sim_api, ns) == []), "the kubelet, back, stops and deletes it"


def test_a_pod_on_a_silent_node_stays_terminating_until_it_is_force_deleted(sim_api, sim_kubectl, ns):
    create(sim_api, ns, on_spare("stuck"))
    eventually(lambda: core(sim_api).read_namespaced_pod("stuck", ns).status.phase == "Running")
    sim_kubectl("label", "node", "spare", f"{HEALTH}=unreachable")
    try:
        sim_kubectl("delete", "pod", "-n", ns, "stuck", "--wait=false")
        time.sleep(1)
        assert names(sim_api, ns) == ["stuck"]
        assert core(sim_api).read_namespaced_pod("stuck", ns).metadata.deletion_timestamp
        sim_kubectl("delete", "pod", "-n", ns, "stuck", "--grace-period=0", "--force")
        assert names(sim_api, ns) == []
    finally:
        sim_kubectl("label", "node", "spare", f"{HEALTH}-")
