"""The controller's adapters against Kubernetes' own API server, where it differs from the stand-in."""

from __future__ import annotations

from controller.adapters.informer import Informer
from controller.adapters.kube import RESOURCES, KubeClient
from controller.adapters.store import SharedStore
from realcluster.cluster import RealCluster


def test_a_relisted_built_in_kind_keeps_its_kind_though_kube_apiserver_leaves_it_out_of_list_items(
        real_cluster: RealCluster) -> None:
    """A real kube-apiserver's list of a built-in kind has no kind or apiVersion on its items (a
    watch event's object has them). The controller checks every object's kind, so a controller
    that started after a namespace was made dropped that namespace, and Workloads there waited
    with `Workload namespace doesn't match ClusterQueue selector` (found by the leader handover
    on the real control plane)."""
    client = KubeClient.from_kubeconfig(str(real_cluster.kubeconfig))
    try:
        raw = client.list(RESOURCES["Namespace"], None)
        assert all("kind" not in item for item in raw["items"]), "kube-apiserver's list items carry no kind"
        store = SharedStore()
        informer = Informer(client, RESOURCES["Namespace"], store, lambda change: None, watch_timeout=2)
        informer.start()
        try:
            assert informer.synced.wait(10)
            default = store.get("Namespace", "", "default")
            assert default is not None and default["kind"] == "Namespace" and default["apiVersion"] == "v1"
        finally:
            informer.stop()
    finally:
        client.close()
