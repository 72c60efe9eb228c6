"""Shared fixtures for the controller's tests against the real local cluster."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from controller.adapters.kube import KubeClient
from tests.controller.cluster import ROOT, kubectl
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
