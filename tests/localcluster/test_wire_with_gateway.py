"""The real batchgate gateway (gunicorn over TLS) as the local cluster's admission webhook, registered
from the shipped manifests and driven by the real kubectl as alice and bob."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from certs.authority import service_names, write_serving_files
from demo.kubectl import KUBECTL
from localcluster.runner import LocalCluster
from tests.localcluster_fixtures import SHARED_USERS, role_binding
from webhook.serving.launch import start_gateway

REPO_ROOT = Path(__file__).resolve().parents[2]
Kubectl = Callable[..., subprocess.CompletedProcess[str]]
JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: train
  labels: {kueue.x-k8s.io/queue-name: team-a-queue}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: trainer
        image: trainer:1
        resources: {limits: {nvidia.com/gpu: "1"}}
"""


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    """A cluster of its own (the gateway's configurations admit every namespaced write) with the
    gateway registered exactly as manifests/webhook/gateway.yaml does, caBundle filled in."""
    workdir = tmp_path_factory.mktemp("gateway")
    serving = write_serving_files(workdir / "certs", service_names("batchgate-webhook", "batchgate-system"),
                                  dt.datetime.now(dt.timezone.utc))
    gateway = start_gateway(workdir / "certs", "--workers", "1")
    try:
        address = {"batchgate-webhook.batchgate-system": f"127.0.0.1:{gateway.port}"}
        with LocalCluster(workdir / "cluster", webhook_addresses=address) as cluster:
            def run(*args: str, user: str = "admin", input: str | None = None,
                    check: bool = True) -> subprocess.CompletedProcess[str]:
                result = subprocess.run(
                    [KUBECTL, "--kubeconfig", str(cluster.kubeconfig), "--context", user,
                     "--cache-dir", str(workdir / "cache"), *args],
                    input=input, capture_output=True, text=True, timeout=60)
                if check and result.returncode != 0:
                    raise AssertionError(f"kubectl {' '.join(args)}: {result.stderr}")
                return result

            manifests = yaml.safe_load_all((REPO_ROOT / "manifests" / "webhook" / "gateway.yaml").read_text())
            configurations = [doc for doc in manifests if doc and doc["kind"].endswith("WebhookConfiguration")]
            for configuration in configurations:
                for hook in configuration["webhooks"]:
                    hook["clientConfig"]["caBundle"] = serving.ca_bundle
            run("create", "namespace", "team-a")
            run("label", "namespace", "team-a", "mlbatch-team-namespace=true")  # a team namespace opts in
            run("apply", "-f", "-", input=role_binding("team-a", "edit", SHARED_USERS))
            run("apply", "-f", "-", input=yaml.safe_dump_all(configurations))
            yield run
    finally:
        gateway.stop()


def test_a_job_alice_creates_is_suspended_and_labelled_with_her_identity(kubectl: Kubectl) -> None:
    kubectl("-n", "team-a", "create", "-f", "-", user="alice", input=JOB)
    job = json.loads(kubectl("-n", "team-a", "get", "job", "train", "-o", "json").stdout)
    whoami = kubectl("auth", "whoami", "-o", "json", user="alice").stdout
    alice = json.loads(whoami)["status"]["userInfo"]
    assert job["metadata"]["labels"]["workload.codeflare.dev/user"] == alice["username"] == "alice"
    assert job["metadata"]["labels"]["workload.codeflare.dev/userid"] == alice["uid"]
    assert job["spec"]["suspend"] is True
    assert job["spec"]["template"]["spec"]["schedulerName"] == "batchgate-scheduler"
    assert job["spec"]["template"]["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "train"


def test_a_job_without_a_queue_sent_as_protobuf_is_denied_in_the_gateways_words(kubectl: Kubectl) -> None:
    result = kubectl("-n", "team-a", "create", "job", "loose", "--image=busybox", user="alice", check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        'error: failed to create job: admission webhook "workloads.validate.batchgate.dev" denied the request: '
        "QueueRequired: metadata.labels[kueue.x-k8s.io/queue-name]: Job needs a LocalQueue label")


def test_bob_cannot_take_over_alices_job_by_relabelling_it(kubectl: Kubectl) -> None:
    kubectl("-n", "team-a", "create", "-f", "-", user="alice", input=JOB.replace("name: train", "name: mine"))
    result = kubectl("-n", "team-a", "label", "job", "mine", "workload.codeflare.dev/user=bob", "--overwrite",
                     user="bob", check=False)
    assert result.returncode == 1
    assert 'admission webhook "workloads.validate.batchgate.dev" denied the request: IdentityForged' in result.stderr
    labels = json.loads(kubectl("-n", "team-a", "get", "job", "mine", "-o", "json").stdout)["metadata"]["labels"]
    assert labels["workload.codeflare.dev/user"] == "alice"


def test_writes_outside_the_gateways_rules_pass_untouched(kubectl: Kubectl) -> None:
    kubectl("-n", "team-a", "create", "configmap", "settings", "--from-literal=a=b", user="alice")
    metadata = json.loads(kubectl("-n", "team-a", "get", "configmap", "settings", "-o", "json").stdout)["metadata"]
    assert "labels" not in metadata
