"""The real control plane for tests (realcluster/): one session cluster, and the marker that
names every test that needs it.

`make test` builds the binaries first (with Go); where they are not built, the tests that need
them are skipped with one reason, and the run's summary says in one line how many did not run.
`make test PYTEST_ARGS='-m realcluster'` runs the real-cluster part alone.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from localcluster.sim.nodes import parse_nodes_file
from realcluster import toolchain
from realcluster.cluster import RealCluster

BINARIES = toolchain.locate()
NOT_BUILT = "the real control plane is not built (make test builds it; it needs Go 1.25+)"
PEERS = toolchain.locate(which=toolchain.peer_programs)
PEERS_NOT_BUILT = "Kueue and the AppWrapper controller are not built (make peers builds them; it needs Go 1.26+)"
MARK = "realcluster"
NODES = """
- name: gpu
  count: 2
  labels: {gpu-type: a100}
  capacity: {cpu: "32", memory: 128Gi, nvidia.com/gpu: 8}
- name: cpu-0
  capacity: {cpu: "16", memory: 64Gi}
"""


def real_kubectl() -> str:
    """The kubectl of the control plane's release (within one minor of its API server)."""
    if BINARIES is None:
        pytest.skip(NOT_BUILT)
    return str(BINARIES["kubectl"])


def real_helm() -> str:
    """The helm built with the control plane (charts/batchgate's tests)."""
    if BINARIES is None:
        pytest.skip(NOT_BUILT)
    return str(BINARIES["helm"])


def new_real_cluster(workdir: Path) -> RealCluster:
    """A real cluster with the suite's nodes (not started); skips the test where it is not built."""
    if BINARIES is None:
        pytest.skip(NOT_BUILT)
    return RealCluster(workdir, nodes=parse_nodes_file(NODES), binaries=BINARIES)


@pytest.fixture(scope="session")
def real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    with new_real_cluster(tmp_path_factory.mktemp("realcluster")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def real_kubectl_run(real_cluster: RealCluster,
                     tmp_path_factory: pytest.TempPathFactory) -> Callable[..., subprocess.CompletedProcess[str]]:
    """kubectl(*args, user="admin", input=None, check=True) against the session's real cluster."""
    cache = tmp_path_factory.mktemp("real-kubectl-cache")
    binary = real_kubectl()

    def run(*args: str, user: str = "admin", input: str | None = None, check: bool = True,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([binary, "--kubeconfig", str(real_cluster.kubeconfig), "--cache-dir", str(cache),
                               "--context", user, *args], input=input, capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} (as {user}) failed ({done.returncode}):\n"
                                 f"{done.stdout}\n{done.stderr}")
        return done

    return run


def admin_kubectl(cluster: RealCluster, cache: Path) -> Callable[..., str]:
    """kubectl(*args, input=None) as admin on a cluster of a test's own: its output; a failure fails the test."""
    def kubectl(*args: str, input: str | None = None) -> str:
        done = subprocess.run([str(cluster.binaries["kubectl"]), "--kubeconfig", str(cluster.kubeconfig),
                               "--cache-dir", str(cache), "--context", "admin", *args],
                              input=input, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout

    return kubectl


def get_object(kubectl: Callable[..., str], *args: str) -> dict[str, Any]:
    """`kubectl get ARGS -o json`, read."""
    return dict(json.loads(kubectl("get", *args, "-o", "json")))


def uses_real_cluster(item: pytest.Item) -> bool:
    return "real_cluster" in getattr(item, "fixturenames", ()) or item.get_closest_marker(MARK) is not None


def mark_real(items: list[pytest.Item]) -> None:
    for item in items:
        if uses_real_cluster(item) and item.get_closest_marker(MARK) is None:
            item.add_marker(MARK)
