"""Shared fixtures for the controller's tests against the real local cluster."""

from __future__ import annotations

import uuid
from typing import Any, Iterator

import pytest

from controller.adapters.kube import RESOURCES, KubeClient
from tests.controller.cluster import ROOT, controller_client, kubectl, running_cluster
from tests.localcluster_fixtures import local_cluster  # noqa: F401  (session-scoped local cluster)


@pytest.fixture(scope="module")
def cluster(local_cluster: Any) -> Any:  # noqa: F811
    """The session's local cluster with our CRDs applied the way users apply them."""
    kubectl(local_cluster.kubeconfig, "apply", "-k", str(ROOT / "manifests" / "crds"))
    return local_cluster


@pytest.fixture(scope="module")
def client(cluster: Any) -> Iterator[KubeClient]:
    c = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
    yield c
    c.close()


@pytest.fixture(scope="module")
def controller_api(cluster: Any) -> Iterator[KubeClient]:
    """The controller's service account under the shipped roles: what the adapters a test builds
    by hand (writers, reconcilers, electors) write as, so the ClusterRole is what they are held to."""
    c = controller_client(cluster)
    yield c
    c.close()


@pytest.fixture
def namespace(client: KubeClient) -> str:
    """A fresh namespace on the session cluster, so tests never see each other's objects."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    client.create(RESOURCES["Namespace"], {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


LIVE_NODES = "- name: node\n  count: 2\n  capacity: {cpu: '16', memory: 64Gi, nvidia.com/gpu: '8'}\n"


@pytest.fixture(scope="module")
def live_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local cluster that runs pods (simulated nodes, kubelets, Job controller), CRDs applied.

    Module-scoped and separate from the session's API-only cluster: its simulated controllers
    would otherwise act on every other test's objects.
    """
    yield from running_cluster(tmp_path_factory.mktemp("live-cluster"), LIVE_NODES)


@pytest.fixture(scope="module")
def live_client(live_cluster: Any) -> Iterator[KubeClient]:
    c = KubeClient.from_kubeconfig(str(live_cluster.kubeconfig))
    yield c
    c.close()
