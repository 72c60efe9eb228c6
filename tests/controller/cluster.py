"""A local cluster for the controller's runtime tests, with the CRDs installed by `kubectl apply`."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from batchgate import keys
from controller.adapters.kube import RESOURCES
from demo.kubectl import KUBECTL
from kubeapi.client import ApiError

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")
KUEUE = keys.KUEUE_API_VERSION


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


def make_team(client: Any, *, prefix: str = "team", quota: dict[str, str] | None = None, flavor: str = "default",
              preemption: dict[str, str] | None = None) -> dict[str, str]:
    """A fresh namespace whose LocalQueue `default-queue` feeds its own ClusterQueue (`quota`, 4 cpu
    unless given, in `flavor`, made when missing); returns the namespace and ClusterQueue names."""
    quota = quota or {"cpu": "4"}
    suffix = uuid.uuid4().hex[:6]
    ns, cq = f"{prefix}-{suffix}", f"cq-{suffix}"
    client.create(RESOURCES["Namespace"], {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    try:
        client.create(RESOURCES["ResourceFlavor"], {"apiVersion": KUEUE, "kind": "ResourceFlavor",
                                                    "metadata": {"name": flavor}})
    except ApiError as exc:
        if not exc.already_exists:
            raise
    client.create(RESOURCES["ClusterQueue"], {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": cq}, "spec": {
        "namespaceSelector": {}, **({"preemption": preemption} if preemption else {}),
        "resourceGroups": [{"coveredResources": list(quota), "flavors": [
            {"name": flavor, "resources": [{"name": r, "nominalQuota": q} for r, q in quota.items()]}]}]}})
    client.create(RESOURCES["LocalQueue"], {"apiVersion": KUEUE, "kind": "LocalQueue",
                                            "metadata": {"name": "default-queue", "namespace": ns},
                                            "spec": {"clusterQueue": cq}})
    return {"ns": ns, "cq": cq}


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
