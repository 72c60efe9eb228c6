"""The real control plane as a user meets it: Kubernetes' own API server at the pinned release,
the users and what RBAC lets them do, the local kubelets as nodes that the real scheduler places
pods on and the real controllers drive, Services on the loopback range, and a stop that leaves
nothing behind."""

from __future__ import annotations

import ipaddress
import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from localcluster.sim.nodes import parse_nodes_file
from realcluster import toolchain
from realcluster.cluster import RealCluster
from realcluster.processes import port_taken
from tests.e2e.test_install import eventually
from tests.realcluster_fixtures import BINARIES, NOT_BUILT

Kubectl = Callable[..., Any]


def get(kubectl: Kubectl, *args: str, user: str = "admin") -> dict[str, Any]:
    return json.loads(kubectl("get", *args, "-o", "json", user=user).stdout)


@pytest.fixture
def ns(real_kubectl_run: Kubectl) -> str:
    name = f"rc-{uuid.uuid4().hex[:8]}"
    real_kubectl_run("create", "namespace", name)
    return name


def test_the_server_is_kubernetes_at_the_pinned_release(real_kubectl_run: Kubectl) -> None:
    version = json.loads(real_kubectl_run("version", "-o", "json").stdout)
    pinned = toolchain.load_versions().kubernetes
    assert version["serverVersion"]["gitVersion"] == pinned
    assert version["clientVersion"]["gitVersion"] == pinned


def test_every_node_registers_ready_with_its_capacity_on_loopback(real_kubectl_run: Kubectl) -> None:
    nodes = {n["metadata"]["name"]: n for n in get(real_kubectl_run, "nodes")["items"]}
    assert set(nodes) == {"gpu-0", "gpu-1", "cpu-0"}
    for node in nodes.values():
        assert any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"]["conditions"])
        assert {"type": "InternalIP", "address": "127.0.0.1"} in node["status"]["addresses"]
    assert nodes["gpu-0"]["status"]["allocatable"]["nvidia.com/gpu"] == "8"


def test_users_are_who_the_token_file_says_and_rbac_decides(real_kubectl_run: Kubectl) -> None:
    review = json.loads(real_kubectl_run("auth", "whoami", "-o", "json", user="alice").stdout)
    assert review["status"]["userInfo"]["username"] == "alice"
    assert review["status"]["userInfo"]["uid"] == "1001"
    denied = real_kubectl_run("get", "nodes", user="alice", check=False)
    assert denied.returncode != 0 and "Forbidden" in denied.stderr
    assert real_kubectl_run("auth", "can-i", "list", "nodes", user="admin").stdout.strip() == "yes"
    # An impersonated service account gets its groups when none are asked for (the stand-in does the same).
    account = json.loads(real_kubectl_run("--as", "system:serviceaccount:team-a:trainer", "auth", "whoami", "-o",
                                          "json").stdout)
    assert account["status"]["userInfo"]["groups"] == ["system:serviceaccounts", "system:serviceaccounts:team-a",
                                                       "system:authenticated"]


def test_the_real_scheduler_places_a_deployment_s_pods_on_the_local_kubelets(real_kubectl_run: Kubectl,
                                                                                ns: str) -> None:
    real_kubectl_run("create", "deployment", "web", "-n", ns, "--image=busybox", "--replicas=2")

    def ready() -> bool:
        pods = get(real_kubectl_run, "pods", "-n", ns, "-l", "app=web")["items"]
        return len(pods) == 2 and all(
            p["spec"].get("nodeName") and any(c["type"] == "Ready" and c["status"] == "True"
                                              for c in p["status"].get("conditions", [])) for p in pods)
    eventually(ready, "two Ready pods of deployment/web, bound by kube-scheduler")
    events = get(real_kubectl_run, "events", "-n", ns)["items"]
    assert any(e.get("reason") == "Scheduled" and e.get("source", {}).get("component", e.get("reportingComponent"))
               in ("default-scheduler",) for e in events), [e.get("reason") for e in events]


def test_a_job_runs_to_complete_under_the_real_job_controller(real_kubectl_run: Kubectl, ns: str) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "done", "namespace": ns},
           "spec": {"template": {"metadata": {"annotations": {
               "localcluster.batchgate.dev/behavior": json.dumps({"runFor": "1s", "exitCode": 0})}},
               "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}
    real_kubectl_run("apply", "-f", "-", input=json.dumps(job))
    eventually(lambda: any(c["type"] == "Complete" and c["status"] == "True"
                           for c in get(real_kubectl_run, "job", "done", "-n", ns).get("status", {}).get("conditions", [])),
               "job/done Complete")


def test_services_get_cluster_ips_on_the_cluster_s_loopback_range(real_cluster: RealCluster,
                                                                  real_kubectl_run: Kubectl, ns: str) -> None:
    real_kubectl_run("create", "service", "clusterip", "svc", "-n", ns, "--tcp=443:8443")
    address = ipaddress.ip_address(get(real_kubectl_run, "service", "svc", "-n", ns)["spec"]["clusterIP"])
    assert address.is_loopback and address in real_cluster.services


@pytest.mark.skipif(BINARIES is None, reason=NOT_BUILT)
def test_a_stopped_cluster_leaves_no_process_port_or_file(tmp_path: Path) -> None:
    assert BINARIES is not None
    cluster = RealCluster(nodes=parse_nodes_file("- name: n\n  capacity: {cpu: '4', memory: 8Gi}\n"),
                          binaries=BINARIES, operators=False)
    cluster.start()
    pids = [p.process.pid for p in cluster.programs.values() if p.process is not None]
    workdir, port = cluster.workdir, cluster.port
    assert len(pids) == 4
    cluster.stop()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not workdir.exists()
    assert not port_taken(port)  # free again (a server may bind it; closed connections may linger in TIME_WAIT)
