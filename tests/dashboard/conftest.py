"""A local cluster that runs pods, the real controller, and `batchgate dashboard` serving it.

Module-scoped like the controller's live tests: the simulated controllers act on every object.
"""

from __future__ import annotations

import json
import queue
import threading
from typing import Any, Iterator

import pytest
import requests

from batchgate import keys
from batchgate.kinds import APPWRAPPER
from batchgate.clock import SystemClock
from controller.adapters.kube import KubeClient
from dashboard.server import Server, serve
from dashboard.watch import Hub, hub_from_kubeconfig
from tests.controller.cluster import make_team, running_cluster, started_controller

KUEUE = keys.KUEUE_API_VERSION
LIVE_NODES = "- name: gpu-node\n  count: 2\n  capacity: {cpu: '16', memory: 64Gi, nvidia.com/gpu: '8'}\n"
BEHAVIOR = "localcluster.batchgate.dev/behavior"


@pytest.fixture(scope="module")
def live_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from running_cluster(tmp_path_factory.mktemp("dashboard-cluster"), LIVE_NODES)


@pytest.fixture(scope="module")
def live_client(live_cluster: Any) -> Iterator[KubeClient]:
    c = KubeClient.from_kubeconfig(str(live_cluster.kubeconfig))
    yield c
    c.close()


@pytest.fixture(scope="module")
def controller(live_cluster: Any) -> Iterator[Any]:
    yield from started_controller(live_cluster, watch_timeout=5)


@pytest.fixture(scope="module")
def dashboard(live_cluster: Any, controller: Any) -> Iterator[tuple[Hub, str]]:
    """`batchgate dashboard` as its command starts it: the admin's kubeconfig, a free port."""
    hub = hub_from_kubeconfig(str(live_cluster.kubeconfig), None, SystemClock(), watch_timeout=5)
    server = serve(hub, "127.0.0.1", 0)
    hub.start()
    yield hub, f"http://127.0.0.1:{server.port}"
    server.close()
    hub.stop()


@pytest.fixture(scope="module")
def team(live_client: KubeClient, controller: Any) -> dict[str, str]:
    """A namespace whose LocalQueue `default-queue` feeds its own ClusterQueue of 4 cpu and 8 GPUs."""
    return make_team(live_client, quota={"cpu": "4", "nvidia.com/gpu": "8"})


def an_appwrapper(ns: str, name: str, *, pods: int = 2, run_for: str = "4s", gpus: int = 1) -> dict[str, Any]:
    """A queued, suspended AppWrapper of one Job of `pods` pods (1 cpu, `gpus` GPUs each), as the gateway leaves it."""
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": f"{name}-job"}, "spec": {
        "parallelism": pods, "completions": pods, "template": {
            "metadata": {"annotations": {BEHAVIOR: json.dumps({"startAfter": "1s", "runFor": run_for})}},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "containers": [
                {"name": "main", "image": "busybox",
                 "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)},
                               "limits": {"nvidia.com/gpu": str(gpus)}}}]}}}}
    return {"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper",
            "metadata": {"name": name, "namespace": ns, "labels": {keys.QUEUE_NAME_LABEL: "default-queue"}},
            "spec": {"suspend": True, "components": [{"template": job}]}}


class EventStream:
    """The dashboard's `/events` read as a browser's EventSource would, on a thread, into a queue."""

    def __init__(self, url: str) -> None:
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self._closed = False
        self._response = requests.get(f"{url}/events", stream=True, timeout=(5, 60))
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        kind = ""
        try:
            for line in self._response.iter_lines(decode_unicode=True):
                if line.startswith("event: "):
                    kind = line[len("event: "):]
                elif line.startswith("data: ") and kind == "digest":
                    self.events.put(json.loads(line[len("data: "):]))
        except Exception:
            if not self._closed:  # closing the response under the reader ends it with some error
                raise

    def next(self, timeout: float) -> dict[str, Any]:
        return self.events.get(timeout=timeout)

    def close(self) -> None:
        self._closed = True
        self._response.close()
