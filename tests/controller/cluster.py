"""A local cluster for the controller's runtime tests, with the CRDs installed by `kubectl apply`."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from demo.kubectl import KUBECTL
from kubeapi.client import ApiError

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def kubectl(kubeconfig: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    cache = kubeconfig.parent / "kubectl-cache"
    return subprocess.run([KUBECTL, f"--kubeconfig={kubeconfig}", f"--cache-dir={cache}", *args],
                          capture_output=True, text=True, timeout=60, check=check)


def get_or_none(client: Any, res: Any, name: str, namespace: str | None) -> dict[str, Any] | None:
    """The object, or None when the API server says it does not exist."""
    try:
        found: dict[str, Any] = client.get(res, name, namespace)
        return found
    except ApiError as exc:
        if exc.not_found:
            return None
        raise


def eventually(probe: Callable[[], T], timeout: float = 10.0, interval: float = 0.05,
               what: "str | Callable[[], str]" = "") -> T:
    """Poll until `probe` returns something truthy; fail with `what` (or what it returns) after `timeout`."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    told = what() if callable(what) else what
    raise AssertionError(f"timed out after {timeout}s waiting for {told or probe}; last: {last!r}")


def subprocess_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


CONTROLLER_NAMESPACE, CONTROLLER_ACCOUNT = "batchgate-system", "batchgate-controller"


def controller_kubeconfig(cluster: Any) -> Path:
    """A kubeconfig that is the controller's service account under the shipped roles
    (manifests/rbac applied), with a token from the TokenRequest API as its pod gets one. A
    controller under test runs as this, never as the admin: a write the shipped ClusterRole does
    not allow is then refused as on a real cluster (the slack ClusterQueue's update was not)."""
    from tests.localcluster_fixtures import service_account_kubeconfig

    target = Path(cluster.workdir) / f"{CONTROLLER_ACCOUNT}.kubeconfig"
    if not target.exists():
        kubectl(cluster.kubeconfig, "apply", "-k", str(ROOT / "manifests" / "rbac"))
        service_account_kubeconfig(cluster.kubeconfig, CONTROLLER_NAMESPACE, CONTROLLER_ACCOUNT, target)
    return target


def controller_client(cluster: Any) -> Any:
    """A KubeClient as the controller's service account (controller_kubeconfig)."""
    from controller.adapters.kube import KubeClient

    return KubeClient.from_kubeconfig(str(controller_kubeconfig(cluster)))


def started_controller(cluster: Any, watch_timeout: int = 2, **options: Any) -> Iterator[Any]:
    """A real Controller (no leader election) on `cluster` as its service account, synced before
    the tests see it; stopped after. `options` are more ControllerOptions (a namespace, ...)."""
    from batchgate.clock import SystemClock
    from controller.adapters.manager import Controller, ControllerOptions

    client = controller_client(cluster)
    ctl = Controller(client, SystemClock(), ControllerOptions(leader_elect=False, watch_timeout=watch_timeout,
                                                              **options))
    ctl.start()
    try:
        assert ctl.wait_synced(20)
        yield ctl
    finally:
        ctl.stop()
        client.close()


def running_cluster(workdir: Path, nodes_yaml: str) -> Iterator[Any]:
    """A local cluster that runs pods (simulated nodes, kubelets, workload controllers), our CRDs applied."""
    from localcluster.controllers import DEFAULT_CONTROLLERS
    from localcluster.runner import LocalCluster
    from localcluster.sim.nodes import parse_nodes_file

    with LocalCluster(workdir, controllers=DEFAULT_CONTROLLERS, nodes=parse_nodes_file(nodes_yaml)) as running:
        kubectl(running.kubeconfig, "apply", "-k", str(ROOT / "manifests" / "crds"))
        yield running
