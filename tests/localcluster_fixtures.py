"""Reusable local-cluster fixtures for any test package.

Import them into a conftest.py: `from tests.localcluster_fixtures import local_cluster, kube_api,
kubectl  # noqa: F401`. The cluster is session-scoped (starting one costs about half a second,
mostly key generation); tests isolate themselves with their own namespaces.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from demo.kubectl import KUBECTL
from localcluster.runner import LocalCluster
from realcluster.cluster import RealCluster



ON_REAL = os.environ.get("BATCHGATE_STANDIN_TESTS_ON") == "real"
"""The stand-in's tests run against Kubernetes' own API server (the conformance comparison: `make conformance`)."""


def skip_standin_only(item: pytest.Item) -> None:
    """On the real API server, skip a test marked `standin_only(reason)`, with that reason."""
    marker = item.get_closest_marker("standin_only")
    if marker is None or not ON_REAL:
        return
    if not marker.args:
        raise pytest.UsageError(f"{item.nodeid}: standin_only needs a reason: standin_only(\"why\")")
    pytest.skip(f"stand-in only: {marker.args[0]}")


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    if ON_REAL:
        with RealCluster(tmp_path_factory.mktemp("realcluster")) as real:
            yield real  # type: ignore[misc]
        return
    # The suite's shared cluster keeps only the last HISTORY_PER_RESOURCE events of a resource, not
    # also the last 75 s of them, so a test can push a version out of history with 1,001 quick writes
    # (a watch from it then gets 410, as from a version older than kube-apiserver's watch cache).
    with LocalCluster(tmp_path_factory.mktemp("localcluster"), watch_history=0.0) as cluster:
        yield cluster


def api_client(cluster: LocalCluster, user: str = "admin"):  # -> kubernetes.client.ApiClient
    """A real `kubernetes` client configured from the cluster's kubeconfig for `user`."""
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_kube_config(config_file=str(cluster.kubeconfig), context=user,
                            client_configuration=configuration)
    return client.ApiClient(configuration)


@pytest.fixture(scope="session")
def kube_api(local_cluster: LocalCluster):
    with api_client(local_cluster) as client:
        yield client


@pytest.fixture(scope="session")
def kubectl(local_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the real kubectl against the cluster: kubectl("get", "ns", input=None, check=True).

    `kubectl.command` is the argv prefix, for tests that need a long-running kubectl (get -w, wait).
    """
    return kubectl_runner(local_cluster, tmp_path_factory.mktemp("kubectl-cache"))


def kubectl_runner(cluster: LocalCluster | RealCluster, cache: Path, default_timeout: float = 30) -> Callable[..., subprocess.CompletedProcess[str]]:
    """The real kubectl against `cluster`, failing the test with what kubectl printed unless check=False.

    `run.command` is the argv prefix, for tests that start a long-running kubectl (get -w, wait).
    """
    # On the real control plane, the kubectl of its release: the user's may be more than one minor away
    binary = str(cluster.binaries["kubectl"]) if isinstance(cluster, RealCluster) else KUBECTL
    command = [binary, "--kubeconfig", str(cluster.kubeconfig), "--cache-dir", str(cache)]

    def run(*args: str, input: str | None = None, check: bool = True,
            timeout: float = default_timeout) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([*command, *args], input=input, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
        return result

    run.command = command  # type: ignore[attr-defined]  # for tests that start kubectl themselves
    return run


def role_binding(namespace: str, role: str, users: tuple[str, ...], kind: str = "ClusterRole") -> str:
    """A RoleBinding (YAML) giving `users` the role `role` in `namespace`."""
    subjects = "".join(f"  - {{apiGroup: rbac.authorization.k8s.io, kind: User, name: {u}}}\n" for u in users)
    return (f"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n"
            f"  name: {role.replace(':', '-')}-{'-'.join(users)}\n  namespace: {namespace}\n"
            f"roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: {kind}, name: {role}}}\nsubjects:\n{subjects}")


SHARED_USERS = ("alice", "bob")


def service_account_kubeconfig(kubeconfig: Path, namespace: str, account: str, target: Path) -> Path:
    """A kubeconfig that authenticates as the ServiceAccount `namespace/account` with a token the
    admin requests from the TokenRequest API (`kubectl create token`), as its pod would mount one."""
    token = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), "--context", "admin", "create", "token",
                            account, "-n", namespace, "--duration=24h"],
                           capture_output=True, text=True, check=True, timeout=30).stdout.strip()
    config = yaml.safe_load(kubeconfig.read_text())
    name = f"{namespace}-{account}"
    config["users"] = [{"name": name, "user": {"token": token}}]
    config["contexts"] = [{"name": name, "context": {"cluster": config["clusters"][0]["name"], "user": name,
                                                     "namespace": namespace}}]
    config["current-context"] = name
    target.write_text(yaml.safe_dump(config, sort_keys=False))
    target.chmod(0o600)
    return target


@pytest.fixture
def namespace(local_cluster: LocalCluster, kubectl: Callable[..., subprocess.CompletedProcess[str]]) -> str:
    """A fresh namespace per test, shared by alice and bob (both hold `edit` there)."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    kubectl("create", "-f", "-", input=f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n"
            "---\n" + role_binding(name, "edit", SHARED_USERS))
    return name


def wait_until(check: Callable[[], bool], timeout: float = 60.0) -> None:
    """Poll `check` until it holds. The bound is generous: kube-controller-manager's garbage collector
    and namespace controller take seconds where the stand-in's take milliseconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


def repo_root() -> Path:
    return Path(__file__).resolve().parents[1]
