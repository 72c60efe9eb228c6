"""The gateway behind an API server: real kubectl -> local cluster -> our gunicorn over TLS.

The local cluster calls webhooks as kube-apiserver does (service reference, caBundle checked
against `<service>.<namespace>.svc`, JSON Patch applied, denial message relayed), so this is the
wire contract end to end. Built-in Jobs are used (no CRDs needed); the webhook configurations
select only this test's namespace, so other tests sharing the cluster are untouched.
"""

from __future__ import annotations

import base64
import json
import subprocess
import uuid
from pathlib import Path
from typing import Callable

import yaml

from batchgate.clock import SystemClock
from certs.authority import service_names, write_serving_files
from localcluster.runner import LocalCluster
from tests.localcluster_fixtures import SHARED_USERS, role_binding
from tests.localcluster_fixtures import kubectl, local_cluster  # noqa: F401 - fixtures
from webhook.serving.launch import RunningGateway

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def job(name: str, queue: str | None) -> dict:
    labels = {"kueue.x-k8s.io/queue-name": queue} if queue else {}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "labels": labels},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "main", "image": "busybox", "command": ["true"]}]}}}}


def webhook_configurations(test_id: str, system: str, ca_bundle: str) -> list[dict]:
    def hook(name: str, path: str) -> dict:
        return {"name": name, "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Fail",
                "timeoutSeconds": 5,
                "clientConfig": {"service": {"name": "batchgate-webhook", "namespace": system, "path": path},
                                 "caBundle": ca_bundle},
                "namespaceSelector": {"matchLabels": {"batchgate-test": test_id}},
                "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["batch"], "apiVersions": ["v1"],
                           "resources": ["jobs"]}]}

    return [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
         "metadata": {"name": f"batchgate-mutating-{test_id}"}, "webhooks": [hook("mutate.batchgate.dev", "/mutate")]},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
         "metadata": {"name": f"batchgate-validating-{test_id}"},
         "webhooks": [hook("validate.batchgate.dev", "/validate")]},
    ]


def test_kubectl_apply_as_alice_is_mutated_and_validated_by_the_gateway(
        local_cluster: LocalCluster, kubectl: Kubectl,  # noqa: F811
        launch: Callable[..., RunningGateway], tmp_path: Path) -> None:
    test_id = f"t{uuid.uuid4().hex[:7]}"  # a letter first: kubectl reads a bare 123e4567 as a number
    system, team = f"gw-sys-{test_id}", f"gw-team-{test_id}"
    cert_dir = tmp_path / "certs"  # the API server checks the name <service>.<namespace>.svc
    write_serving_files(cert_dir, service_names("batchgate-webhook", system), SystemClock().now())
    audit = tmp_path / "audit.log"
    gateway = launch(cert_dir, "--workers", "2", "--audit-log", str(audit))
    kubectl("create", "namespace", system)
    kubectl("create", "namespace", team)
    kubectl("apply", "-f", "-", input=role_binding(team, "edit", SHARED_USERS))
    kubectl("label", "namespace", team, f"batchgate-test={test_id}")
    service = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "batchgate-webhook", "namespace": system,
                            "annotations": {"localcluster.batchgate.dev/address": f"127.0.0.1:{gateway.port}"}},
               "spec": {"ports": [{"port": 443, "targetPort": 9443}]}}
    ca_bundle = base64.b64encode((cert_dir / "ca.crt").read_bytes()).decode()
    configs = webhook_configurations(test_id, system, ca_bundle)
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all([service, *configs]))
    try:
        kubectl("--context", "alice", "-n", team, "apply", "-f", "-", input=yaml.safe_dump(job("train", "team-q")))
        stored = json.loads(kubectl("-n", team, "get", "job", "train", "-o", "json").stdout)
        labels = stored["metadata"]["labels"]
        assert labels["workload.codeflare.dev/user"] == "alice"
        assert labels["kueue.x-k8s.io/queue-name"] == "team-q"
        assert stored["spec"]["suspend"] is True
        assert stored["spec"]["template"]["spec"]["schedulerName"] == "batchgate-scheduler"

        denied = kubectl("--context", "alice", "-n", team, "apply", "-f", "-", input=yaml.safe_dump(job("loose", None)),
                         check=False)
        assert denied.returncode == 1
        assert 'admission webhook "validate.batchgate.dev" denied the request' in denied.stderr
        assert "kueue.x-k8s.io/queue-name" in denied.stderr
    finally:
        kubectl("delete", "mutatingwebhookconfiguration", f"batchgate-mutating-{test_id}", check=False)
        kubectl("delete", "validatingwebhookconfiguration", f"batchgate-validating-{test_id}", check=False)
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert {(line["endpoint"], line["name"], line["user"], line["allowed"]) for line in lines} >= {
        ("mutate", "train", "alice", True), ("validate", "train", "alice", True), ("validate", "loose", "alice", False)}
