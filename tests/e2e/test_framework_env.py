"""End to end: framework Indexed Jobs on the local cluster, every pod admitted by the real gateway.

The local cluster calls the gateway (gunicorn over TLS, verified against the caBundle) through
the webhook configurations the project ships, `kubectl apply` creates the Job, the simulated Job
controller creates its pods with generateName, and each pod's env is read back with
`kubectl get pod -o jsonpath`, as a user would. The stack is tests/e2e/stack.py; no controller
runs here (tests/e2e/test_framework_appwrapper.py starts one).
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from batchgate import keys
from tests.e2e.stack import NAMESPACE, USER, Kubectl
from tests.e2e.stack import pods_env as pods_env_by


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


def pods_env(kubectl: Kubectl, job: str, count: int) -> dict[str, dict[str, str]]:
    return pods_env_by(kubectl, f"{keys.JOB_NAME_LABEL}={job}", count)


def test_a_pytorch_indexed_job_on_the_local_cluster_gets_master_world_size_and_ranks(kubectl: Kubectl) -> None:
    created = kubectl("apply", "-f", "-", input=indexed_job("train", "pytorch", 3, {"nprocPerNode": "4"}), user=USER)
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
    kubectl("apply", "-f", "-", input=indexed_job("tfjob", "tensorflow", 2), user=USER)
    envs = pods_env(kubectl, "tfjob", 2)
    assert {host: json.loads(e["TF_CONFIG"]) for host, e in envs.items()} == {
        f"tfjob-{i}": {"cluster": {"worker": ["tfjob-0.tfjob:2222", "tfjob-1.tfjob:2222"]}, "task": {"type": "worker", "index": i}}
        for i in range(2)
    }


def test_an_mpi_indexed_job_on_the_local_cluster_mounts_the_hostfile_and_the_launcher_waits(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input=indexed_job("mpijob", "mpi", 3), user=USER)
    envs = pods_env(kubectl, "mpijob", 3)
    assert {e["OMPI_MCA_orte_default_hostfile"] for e in envs.values()} == {"/etc/mpi/hostfile"}
    pods = json.loads(kubectl("get", "pods", "-n", NAMESPACE, "-l", f"{keys.JOB_NAME_LABEL}=mpijob", "-o", "json").stdout)
    init = {p["spec"]["hostname"]: [c["name"] for c in p["spec"].get("initContainers", [])] for p in pods["items"]}
    assert init == {"mpijob-0": ["wait-for-workers"], "mpijob-1": [], "mpijob-2": []}


def test_a_bad_framework_job_is_refused_by_kubectl_with_the_field(kubectl: Kubectl) -> None:
    bad = indexed_job("bad", "pytorch", 1)
    refused = kubectl("apply", "-f", "-", input=bad, check=False, user=USER)
    assert refused.returncode != 0
    assert "InvalidFramework: spec: pytorch needs at least one 'worker' pod, found none" in refused.stderr
