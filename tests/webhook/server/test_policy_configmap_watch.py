"""The policy from a ConfigMap and namespace labels from Namespaces, watched on the local cluster.

We test these aspects: the gateway (2 gunicorn workers, each with its own watches) follows a
ConfigMap edited with the real kubectl, keeps the last good policy when an edit is invalid, falls
back to the defaults when the ConfigMap is deleted, and follows Namespace labels for
`managedNamespaces.selector` — all without a restart.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path
from typing import Callable

import yaml

from localcluster.runner import LocalCluster
from tests.localcluster_fixtures import kubectl, local_cluster  # noqa: F401 - fixtures
from tests.webhook.server.helpers import RELOAD_TIMEOUT_SECONDS, policy_text, wait_until_every_worker_injects
from webhook.launch import RunningGateway

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def apply_policy(kubectl: Kubectl, namespace: str, text: str) -> None:  # noqa: F811
    manifest = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "batchgate-policy", "namespace": namespace}, "data": {"policy.yaml": text}}
    kubectl("apply", "-f", "-", input=yaml.safe_dump(manifest))


def ready_body(gateway: RunningGateway) -> dict:
    client = gateway.client()
    _, body, _ = client.request("GET", "/readyz")
    client.close()
    return json.loads(body)


def test_the_gateway_follows_the_policy_configmap_and_namespace_labels(
        local_cluster: LocalCluster, kubectl: Kubectl, cert_dir: Path,  # noqa: F811
        launch: Callable[..., RunningGateway]) -> None:
    system = f"gw-system-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", system)
    apply_policy(kubectl, system, policy_text("q-one"))
    gateway = launch(cert_dir, "--workers", "2", "--policy-configmap", f"{system}/batchgate-policy",
                     "--kubeconfig", str(local_cluster.kubeconfig))
    wait_until_every_worker_injects(gateway, "q-one")
    assert ready_body(gateway)["source"] == f"configmap {system}/batchgate-policy"

    apply_policy(kubectl, system, policy_text("q-two"))
    wait_until_every_worker_injects(gateway, "q-two")

    apply_policy(kubectl, system, "queues:\n  defaultQueueName: [nope]\n")
    deadline = time.monotonic() + RELOAD_TIMEOUT_SECONDS
    while "lastError" not in ready_body(gateway):
        assert time.monotonic() < deadline, "the invalid policy was never seen"
        time.sleep(0.1)
    assert "queues.defaultQueueName" in ready_body(gateway)["lastError"]
    wait_until_every_worker_injects(gateway, "q-two")

    kubectl("delete", "configmap", "batchgate-policy", "-n", system)
    wait_until_every_worker_injects(gateway, "default-queue")

    team = f"team-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", team)
    apply_policy(kubectl, system, "managedNamespaces:\n  selector:\n    matchLabels: {batchgate.dev/managed: 'yes'}\n")
    wait_until_every_worker_injects(gateway, None, namespace=team)
    kubectl("label", "namespace", team, "batchgate.dev/managed=yes")
    wait_until_every_worker_injects(gateway, "default-queue", namespace=team)
    assert sum("Booting worker" in line for line in gateway.stderr_lines) == 2, "no worker was restarted"

