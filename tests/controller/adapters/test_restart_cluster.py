"""A controller killed mid-way and started again admits nothing twice: the quota held is rebuilt
from the Workloads' own status, and waiting work is admitted in order once room frees."""

from __future__ import annotations

import uuid
from typing import Any, Iterator

import pytest

from batchgate.clock import SystemClock
from controller.adapters.kube import RESOURCES, KubeClient
from controller.adapters.manager import Controller, ControllerOptions
from tests.controller.cluster import ROOT, controller_client, eventually, kubectl, make_team
from tests.controller.adapters.test_admission_cluster import running, submit
from tests.controller.adapters.test_jobs import workload_of

pytestmark = pytest.mark.timeout(120)
JOBS = RESOURCES["Job"]


@pytest.fixture(scope="module")
def client(local_cluster: Any) -> Iterator[KubeClient]:
    kubectl(local_cluster.kubeconfig, "apply", "-k", str(ROOT / "manifests" / "crds"))
    c = KubeClient.from_kubeconfig(str(local_cluster.kubeconfig))
    yield c
    c.close()


def holding(client: KubeClient, ns: str) -> list[str]:
    items = client.list(RESOURCES["Workload"], ns)["items"]
    return sorted(w["metadata"]["ownerReferences"][0]["name"] for w in items if (w.get("status") or {}).get("admission"))


def test_a_restarted_controller_admits_nothing_twice(local_cluster: Any, client: KubeClient) -> None:
    ns = make_team(client, prefix="restart", flavor=f"flavor-{uuid.uuid4().hex[:6]}")["ns"]
    first = Controller(as_controller := controller_client(local_cluster), SystemClock(),
                       ControllerOptions(leader_elect=False, watch_timeout=2, namespace=ns))
    first.start()
    try:
        # One after the other: Workloads made at once by parallel workers would reach the queue in
        # any order, and the first two to arrive would be admitted, not necessarily a and b.
        for name in ("a", "b"):
            submit(client, ns, name, "2")
        eventually(lambda: holding(client, ns) == ["a", "b"], what="two 2-cpu jobs in 4 cpu")
        c = submit(client, ns, "c", "2")
        eventually(lambda: "insufficient unused quota" in str(workload_of(client, "Job", c)), what="c's reason")
    finally:
        first.stop()  # gone mid-way: "c" still waits, "d" arrives while nobody watches
    submit(client, ns, "d", "1")

    second = Controller(as_controller, SystemClock(),
                        ControllerOptions(leader_elect=False, watch_timeout=2, namespace=ns))
    second.start()
    try:
        assert second.wait_synced(20)
        eventually(lambda: second.admission.cycles >= 3, what="the new controller to run cycles")
        assert holding(client, ns) == ["a", "b"], "the quota held before the restart is still held, nothing more"
        d = client.get(JOBS, "d", ns)
        eventually(lambda: "insufficient unused quota" in str(workload_of(client, "Job", d)), what="d's reason")

        client.patch(JOBS, "a", ns, {"status": {"conditions": [
            {"type": "Complete", "status": "True", "reason": "Done", "message": "done"}]}}, subresource="status")
        eventually(lambda: running(client, ns, "c"), what="the oldest waiting job to get a's quota")
        assert holding(client, ns) == ["a", "b", "c"], "a finished Workload keeps its admission record, as in Kueue"
        assert not running(client, ns, "d"), "b and c use all 4 cpu"
    finally:
        second.stop()
