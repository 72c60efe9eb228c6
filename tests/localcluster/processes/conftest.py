"""A local cluster whose kubelets run pods of the image `fixture:1` as real processes (tiny
Python fixture commands, not the product), at 10x speed so a 10 s backoff takes a second."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from localcluster.controllers import DEFAULT_CONTROLLERS
from localcluster.runner import LocalCluster
from localcluster.sim.nodes import nodes_from_flags
from tests.localcluster_fixtures import api_client, kubectl_runner

IMAGE = "fixture:1"
SPEED = 10.0


@pytest.fixture(scope="session")
def proc_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path_factory.mktemp("proccluster"), speed=SPEED, controllers=DEFAULT_CONTROLLERS,
                           nodes=nodes_from_flags(2, "8", "16Gi", 0), run_images=[IMAGE])
    with cluster:
        yield cluster


@pytest.fixture(scope="session")
def proc_api(proc_cluster: LocalCluster) -> Iterator[Any]:
    with api_client(proc_cluster) as client:
        yield client


@pytest.fixture(scope="session")
def pk(proc_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., subprocess.CompletedProcess[str]]:
    """kubectl against the process cluster."""
    cache = tmp_path_factory.mktemp("proc-kubectl-cache")

    return kubectl_runner(proc_cluster, cache, 60)


@pytest.fixture
def pns(pk: Callable[..., subprocess.CompletedProcess[str]]) -> str:
    name = f"pp-{uuid.uuid4().hex[:8]}"
    pk("create", "namespace", name)
    return name
