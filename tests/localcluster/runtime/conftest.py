"""A local cluster with the simulated nodes, kubelets, scheduler and controllers, shared by the
runtime tests (each test works in its own namespace). Time runs 20x faster, so a `runFor: 10s`
pod takes half a second and a 10s backoff as long."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from localcluster.controllers import DEFAULT_CONTROLLERS
from localcluster.runner import LocalCluster
from localcluster.sim.nodes import parse_nodes_file
from tests.localcluster_fixtures import api_client, kubectl_runner

SPEED = 20.0
NODES = """
- name: gpu
  count: 2
  labels: {gpu-type: a100}
  capacity: {cpu: "32", memory: 128Gi, nvidia.com/gpu: 8}
- name: cpu-0
  capacity: {cpu: "16", memory: 64Gi}
- name: spare
  labels: {pool: spare}
  taints: [{key: dedicated, value: spare, effect: NoSchedule}]
  capacity: {cpu: "8", memory: 32Gi}
"""


@pytest.fixture(scope="session")
def sim_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path_factory.mktemp("simcluster"), speed=SPEED, controllers=DEFAULT_CONTROLLERS,
                           nodes=parse_nodes_file(NODES))
    with cluster:
        yield cluster


@pytest.fixture(scope="session")
def sim_api(sim_cluster: LocalCluster) -> Iterator[Any]:
    with api_client(sim_cluster) as client:
        yield client


@pytest.fixture(scope="session")
def sim_kubectl(sim_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., subprocess.CompletedProcess[str]]:
    cache = tmp_path_factory.mktemp("sim-kubectl-cache")

    return kubectl_runner(sim_cluster, cache, 30)


@pytest.fixture
def ns(sim_kubectl: Callable[..., subprocess.CompletedProcess[str]]) -> str:
    name = f"rt-{uuid.uuid4().hex[:8]}"
    sim_kubectl("create", "namespace", name)
    return name


def eventually(check: Callable[[], Any], timeout: float = 20.0, interval: float = 0.1) -> Any:
    """Poll `check` until it returns something truthy; fail with its last value after `timeout`."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except AssertionError as err:
            last = err
        else:
            if last:
                return last
        time.sleep(interval)
    raise AssertionError(f"condition not met in {timeout}s; last: {last!r}")
