"""End to end: framework Indexed Jobs on the local cluster, every pod admitted by the real gateway.

The local cluster calls the gateway (gunicorn over TLS, verified against the caBundle) through
the webhook configurations the project ships, `kubectl apply` creates the Job, the simulated Job
controller creates its pods with generateName, and each pod's env is read back with
`kubectl get pod -o jsonpath`, as a user would. No AppWrapper here: running one needs the
controller, which these tests do not start.
"""

from __future__ import annotations

import base64
import json
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml

from batchgate import keys
from batchgate.clock import SystemClock
from certs.authority import service_names, write_serving_files
from localcluster.controllers import DEFAULT_CONTROLLERS
from localcluster.runner import LocalCluster
from localcluster.sim.nodes import parse_nodes_file
from webhook.launch import start_gateway

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = "/usr/bin/kubectl"
NAMESPACE = "team1"
# The controller (quota, gang placement) is not running here: nothing is queued or gang-scheduled.
POLICY = "queues: {requireQueueFor: []}\nscheduling: {schedulerName: '', gang: false}\n"
NODES = "- name: node\n  count: 2\n  capacity: {cpu: '64', memory: 256Gi}\n"

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def webhook_configurations(ca_bundle: str) -> str:
    """The shipped Mutating/ValidatingWebhookConfigurations (kustomize), with the real caBundle."""
    built = subprocess.run([KUBECTL, "kustomize", str(ROOT / "manifests" / "webhook")], capture_output=True,
                           text=True, check=True, timeout=60).stdout
    configs = [d for d in yaml.safe_load_all(built) if d and d["kind"].endswith("WebhookConfiguration")]
    for config in configs:
        for hook in config["webhooks"]:
            hook["clientConfig"]["caBundle"] = ca_bundle
    return yaml.safe_dump_all(configs)


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    tmp = tmp_path_factory.mktemp("framework-e2e")
    certs = tmp / "gateway-certs"
    write_serving_files(certs, service_names("batchgate-webhook", "batchgate-system"), SystemClock().now())
    policy = tmp / "policy.yaml"
    policy.write_text(POLICY)
    gateway = start_gateway(certs, "--workers", "1", "--threads", "4", "--policy-file", str(policy),
                            "--audit-log", str(tmp / "audit.log"))
    cluster = LocalCluster(tmp / "cluster", speed=20.0, controllers=DEFAULT_CONTROLLERS,
                           nodes=parse_nodes_file(NODES),
                           webhook_addresses={"batchgate-webhook.batchgate-system": f"{gateway.host}:{gateway.port}"})
    try:
        with cluster:
            def run(*args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
                done = subprocess.run([KUBECTL, "--kubeconfig", str(cluster.kubeconfig), *args], input=input,
                                      capture_output=True, text=True, timeout=30)
                if check and done.returncode != 0:
                    raise AssertionError(f"kubectl {' '.join(args)}: {done.stderr}")
                return done

            run("create", "namespace", NAMESPACE)
            ca_bundle = base64.b64encode((certs / "ca.crt").read_bytes()).decode()
            run("apply", "-f", "-", input=webhook_configurations(ca_bundle))
            yield run
    finally:
        gateway.stop()


def indexed_job(name: str, framework: str, completions: int, args: dict[str, Any] | None = None) -> str:
    job: dict[str, Any] = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {keys.FRAMEWORK_LABEL: framework}},
        "spec": {"completions": completions, "template": {
            "metadata": {"annotations": {"localcluster.batchgate.dev/behavior": json.dumps({"runFor": "1s"})}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "trainer:1"}]}}},
    }
    if args:
        job["metadata"]["annotations"] = {keys.FRAMEWORK_ARGS_ANNOTATION: json.dumps(args)}
    return yaml.safe_dump(job)


def pods_env(kubectl: Kubectl, job: str, count: int, timeout: float = 30.0) -> dict[str, dict[str, str]]:
    """Wait for the Job's pods, then read hostname and env with jsonpath: {hostname: {name: value}}.

    Only literal values: the Job controller's own JOB_COMPLETION_INDEX is a fieldRef. A loaded
    machine can stall the sped-up kubelets long enough for a pod to fail and be replaced; the
    replacement of an index must then carry exactly the same env as the pod it replaces.
    """
    jsonpath = '{range .items[*]}{.spec.hostname}{"\\t"}{.spec.containers[0].env}{"\\n"}{end}'
    deadline = time.monotonic() + timeout
    while True:
        out = kubectl("get", "pods", "-n", NAMESPACE, "-l", f"{keys.JOB_NAME_LABEL}={job}",
                      "-o", f"jsonpath={jsonpath}").stdout
        rows = [line.split("\t", 1) for line in out.splitlines() if line.strip()]
        by_host: dict[str, list[dict[str, str]]] = {}
        for host, env in rows:
            literal = {e["name"]: e["value"] for e in json.loads(env or "[]") if "value" in e}
            by_host.setdefault(host, []).append(literal)
        if len(by_host) >= count or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert len(by_host) == count, out
    for host, envs in by_host.items():
        assert all(env == envs[0] for env in envs), f"pods of {host} disagree: {envs}"
    return {host: envs[0] for host, envs in by_host.items()}


def test_a_pytorch_indexed_job_on_the_local_cluster_gets_master_world_size_and_ranks(kubectl: Kubectl) -> None:
    created = kubectl("apply", "-f", "-", input=indexed_job("train", "pytorch", 3, {"nprocPerNode": "4"}))
    assert "job.batch/train created" in created.stdout
    envs = pods_env(kubectl, "train", 3)
    assert {host: (e["MASTER_ADDR"], e["WORLD_SIZE"], e["RANK"], e["PET_NPROC_PER_NODE"]) for host, e in envs.items()} == {
        "train-0": ("train-0.train", "3", "0", "4"),
        "train-1": ("train-0.train", "3", "1", "4"),
        "train-2": ("train-0.train", "3", "2", "4"),
    }
    stored = json.loads(kubectl("get", "job", "train", "-n", NAMESPACE, "-o", "json").stdout)
    assert (stored["spec"]["completionMode"], stored["spec"]["parallelism"]) == ("Indexed", 3)


def test_a_tensorflow_indexed_job_on_the_local_cluster_gets_tf_config(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input=indexed_job("tf", "tensorflow", 2))
    envs = pods_env(kubectl, "tf", 2)
    assert {host: json.loads(e["TF_CONFIG"]) for host, e in envs.items()} == {
        f"tf-{i}": {"cluster": {"worker": ["tf-0.tf:2222", "tf-1.tf:2222"]}, "task": {"type": "worker", "index": i}}
        for i in range(2)
    }


def test_an_mpi_indexed_job_on_the_local_cluster_mounts_the_hostfile_and_the_launcher_waits(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input=indexed_job("mpi", "mpi", 3))
    envs = pods_env(kubectl, "mpi", 3)
    assert {e["OMPI_MCA_orte_default_hostfile"] for e in envs.values()} == {"/etc/mpi/hostfile"}
    pods = json.loads(kubectl("get", "pods", "-n", NAMESPACE, "-l", f"{keys.JOB_NAME_LABEL}=mpi", "-o", "json").stdout)
    init = {p["spec"]["hostname"]: [c["name"] for c in p["spec"].get("initContainers", [])] for p in pods["items"]}
    assert init == {"mpi-0": ["wait-for-workers"], "mpi-1": [], "mpi-2": []}


def test_a_bad_framework_job_is_refused_by_kubectl_with_the_field(kubectl: Kubectl) -> None:
    bad = indexed_job("bad", "pytorch", 1)
    refused = kubectl("apply", "-f", "-", input=bad, check=False)
    assert refused.returncode != 0
    assert "InvalidFramework: spec: pytorch needs at least one 'worker' pod, found none" in refused.stderr
