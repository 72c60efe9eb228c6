"""`batchgate check` end to end: the local cluster with simulated nodes, CRDs and queues applied with
the real kubectl, a Workload's status written through /status, then the checker read through the
real kubernetes client. Cordoning a node with kubectl turns a sound quota setup into an
over-commitment; with the real controller running, the checker shows the controller's own words."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from batchgate.clock import SystemClock
from controller.adapters.kube import KubeClient
from controller.adapters.manager import Controller, ControllerOptions
from localcluster.controllers import DEFAULT_CONTROLLERS
from localcluster.runner import LocalCluster
from localcluster.sim.nodes import parse_nodes_file
from tests.controller.check.builders import GPU
from tests.controller.adapters.test_admission_cluster import KUEUE, reason, running, submit
from tests.controller.cluster import KUBECTL, ROOT, controller_client, eventually, kubectl, subprocess_env
from tests.controller.decisions.trace_builders import cluster_queue, flavor, group, local_queue, namespace, workload

pytestmark = pytest.mark.timeout(120)

NODES = """
- name: gpu
  count: 2
  labels: {gpu-type: a100}
  capacity: {cpu: "32", memory: 128Gi, nvidia.com/gpu: 8}
- name: spare
  taints: [{key: dedicated, value: spare, effect: NoSchedule}]
  capacity: {cpu: "8", memory: 32Gi}
"""


def queues() -> list[dict[str, Any]]:
    objects = [namespace("team-a"), namespace("team-b"), flavor("default-flavor")]
    for team in ("team-a", "team-b"):
        objects.append(cluster_queue(f"{team}-cq", group({"default-flavor": {"cpu": 24, GPU: 8}}),
                                     cohort="default-cohort"))
        objects.append(local_queue("default-queue", f"{team}-cq", ns=team))
    for obj in objects:
        obj.setdefault("apiVersion", "kueue.x-k8s.io/v1beta1" if obj["kind"] != "Namespace" else "v1")
    return objects


def as_created(obj: dict[str, Any]) -> dict[str, Any]:
    """A Workload as a user or job integration creates it: no timestamps, no status."""
    obj = json.loads(json.dumps(obj))
    obj["metadata"].pop("creationTimestamp", None)
    obj.pop("status", None)
    return obj


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path_factory.mktemp("check-cluster"), controllers=DEFAULT_CONTROLLERS,
                      nodes=parse_nodes_file(NODES)) as running:
        config = running.kubeconfig
        kubectl(config, "apply", "-k", str(ROOT / "manifests" / "crds"))
        eventually(lambda: kubectl(config, "get", "clusterqueues", check=False).returncode == 0,
                   timeout=20, what="the ClusterQueue CRD to be served")
        eventually(lambda: _ready_nodes(config) == 3, timeout=30, what="three Ready nodes")
        apply(config, queues())
        running_wl = workload("train", ns="team-b", queue="default-queue", admitted_to="team-b-cq",
                              flavors={"cpu": "default-flavor", GPU: "default-flavor"}, cpu=4, gpu=4, count=2)
        waiting_wl = workload("tune", ns="team-a", queue="default-queue", cpu=4, gpu=8, count=2)
        apply(config, [as_created(running_wl), as_created(waiting_wl)])
        status = {"status": running_wl["status"]}
        kubectl(config, "patch", "workload", "train", "-n", "team-b", "--subresource=status", "--type=merge",
                "-p", json.dumps(status))
        yield running


def apply(config: Path, objects: list[dict[str, Any]]) -> None:
    """`kubectl apply -f -` with the objects as YAML on stdin."""
    cache = config.parent / "kubectl-cache"
    subprocess.run([KUBECTL, f"--kubeconfig={config}", f"--cache-dir={cache}", "apply", "-f", "-"],
                   input=yaml.safe_dump_all(objects), capture_output=True, text=True, timeout=60, check=True)


def _ready_nodes(config: Path) -> int:
    result = kubectl(config, "get", "nodes", "-o", "json", check=False)
    if result.returncode != 0:
        return 0
    items = json.loads(result.stdout)["items"]
    return sum(any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))
               for n in items)


def check(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "batchgate.cli", "check", "--kubeconfig", str(cluster.kubeconfig),
                           *args], capture_output=True, text=True, timeout=60, env=subprocess_env(), cwd=ROOT)


def test_check_reads_the_cluster_and_explains_the_pending_workload(cluster: LocalCluster) -> None:
    result = check(cluster, "--context", "admin", "-o", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    doc = json.loads(result.stdout)
    nodes = {n["name"]: (n["counted"], n["reason"]) for n in doc["nodes"]}
    assert nodes["gpu-0"] == (True, "") and nodes["gpu-1"] == (True, "")
    assert not nodes["spare"][0] and "dedicated=spare:NoSchedule" in nodes["spare"][1]
    gpu = next(r for r in doc["capacity"] if r["resource"] == GPU)
    assert (gpu["capacity"], gpu["nominalQuota"], gpu["usage"], gpu["overCommitted"]) == ("16", "16", "8", False)
    team_b = next(q for q in doc["clusterQueues"] if q["name"] == "team-b-cq")
    assert (team_b["reservingWorkloads"], team_b["admittedWorkloads"]) == (1, 1)
    # Only the module's own namespaces: the controller test below may have run first and left its own.
    [pending] = [p for p in doc["pending"] if p["name"].split("/")[0] in ("team-a", "team-b")]
    assert pending["name"] == "team-a/tune"
    assert pending["reason"] == ("couldn't assign flavors to pod set main: insufficient unused quota for "
                                 "nvidia.com/gpu in flavor default-flavor, 8 more needed")


def test_cordoning_a_node_makes_the_gpu_quota_over_committed(cluster: LocalCluster) -> None:
    kubectl(cluster.kubeconfig, "cordon", "gpu-1")
    try:
        result = check(cluster)
        assert result.returncode == 1, result.stdout + result.stderr
        over = [line for line in result.stdout.splitlines() if line.startswith("error") and "OverCommitted" in line]
        assert any(f"resource {GPU}" in line and "sum to 16 but schedulable nodes have 8" in line for line in over)
        assert "cordoned (spec.unschedulable)" in result.stdout
    finally:
        kubectl(cluster.kubeconfig, "uncordon", "gpu-1")
    assert check(cluster).returncode == 0


def test_a_rejected_token_exits_2_with_one_line(cluster: LocalCluster, tmp_path: Path) -> None:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    for user in config["users"]:
        user["user"]["token"] = "not-a-token"
    bad = tmp_path / "kubeconfig"
    bad.write_text(yaml.safe_dump(config))
    result = subprocess.run([sys.executable, "-m", "batchgate.cli", "check", "--kubeconfig", str(bad)],
                            capture_output=True, text=True, timeout=60, env=subprocess_env(), cwd=ROOT)
    assert result.returncode == 2
    assert result.stderr.startswith("batchgate check: cannot list nodes: 401 Unauthorized")
    assert len(result.stderr.strip().splitlines()) == 1


def test_with_the_real_controller_the_pending_reason_is_the_controllers_own(cluster: LocalCluster) -> None:
    """Its own namespace and ClusterQueue, whose 4 cpu stay within the 64 counted (48 + 4), so the
    other tests of the module see the same verdicts whichever order they run in."""
    client = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
    ns = f"ctl-{uuid.uuid4().hex[:6]}"
    apply(cluster.kubeconfig, [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        {**cluster_queue(f"{ns}-cq", group({"default-flavor": {"cpu": 4}})), "apiVersion": KUEUE},
        {**local_queue("default-queue", f"{ns}-cq", ns=ns), "apiVersion": KUEUE}])
    controller = Controller(controller_client(cluster), SystemClock(),
                            ControllerOptions(leader_elect=False, watch_timeout=2, namespace=ns))
    controller.start()
    try:
        assert controller.wait_synced(20)
        submit(client, ns, "first", "3")
        eventually(lambda: running(client, ns, "first"), timeout=30, what="the first job to be admitted")
        second = submit(client, ns, "second", "2")
        message = eventually(lambda: reason(client, second), timeout=30, what="the second job's pending reason")
        result = check(cluster, "-o", "json")
        assert result.returncode == 0, result.stdout + result.stderr
        doc = json.loads(result.stdout)
        [pending] = [p for p in doc["pending"] if p["name"].startswith(f"{ns}/")]
        assert (pending["reason"], pending["reasonSource"], pending["clusterQueue"]) == (message, "status", f"{ns}-cq")
        assert message.endswith("insufficient unused quota for cpu in flavor default-flavor, 1 more needed")
        queue = next(q for q in doc["clusterQueues"] if q["name"] == f"{ns}-cq")
        assert (queue["reservingWorkloads"], queue["pendingWorkloads"]) == (1, 1)
        assert queue["resources"][0]["usage"] == "3"
    finally:
        controller.stop()
        client.close()
