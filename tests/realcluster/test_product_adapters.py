"""The controller's adapters against Kubernetes' own API server, where it differs from the stand-in."""

from __future__ import annotations

import contextlib
import time
import uuid
from typing import Any

from batchgate.clock import SystemClock
from controller.adapters.informer import Informer
from controller.adapters.kube import RESOURCES, KubeClient
from controller.adapters.store import SharedStore
from kubeapi.client import CONFIGMAPS, NAMESPACES
from kubeapi.listwatch import ListReason, ListWatch
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


def test_a_quiet_watch_ends_when_the_relist_falls_due_and_a_watch_only_caller_gets_the_object_first(
        real_cluster: RealCluster) -> None:
    """The two things kubeapi's list + watch asks of kube-apiserver beyond the stand-in: that
    `timeoutSeconds` ends a watch with nothing to say (so a due relist is never held back by a
    silent stream), and that a watch by name without a resourceVersion opens with the object
    as ADDED (the certificate keeper may watch but not list)."""
    namespace = f"lw-{uuid.uuid4().hex[:6]}"
    told: list[tuple[str, str]] = []

    def listed(items: list[dict[str, Any]], why: ListReason) -> None:
        told.append(("list", why))

    def event(kind: str, obj: dict[str, Any]) -> None:
        told.append((kind, obj["metadata"]["name"]))

    with contextlib.closing(KubeClient.from_kubeconfig(str(real_cluster.kubeconfig))) as client:
        client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        client.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": "there", "namespace": namespace}, "data": {"v": "1"}})
        relisting = ListWatch(client, CONFIGMAPS, listed, event, clock=SystemClock(), namespace=namespace,
                              watch_timeout=300, relist_every=2)
        watching = ListWatch(client, CONFIGMAPS, listed, event, clock=SystemClock(), namespace=namespace,
                             field_selector="metadata.name=there", watch_timeout=300, watch_only=True)
        relisting.start()
        watching.start()
        try:
            deadline = time.monotonic() + 30
            while (relisting.lists < 3 or ("ADDED", "there") not in told) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert relisting.lists >= 3, f"the relist every 2 s was held back by a 300 s watch: {told}"
            assert ("list", "periodic") in told and ("ADDED", "there") in told
            assert watching.lists == 0
        finally:
            relisting.stop()
            watching.stop()
