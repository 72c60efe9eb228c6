"""The policy from a ConfigMap and namespace labels from Namespaces, watched on the local cluster.

We test these aspects: the gateway (2 gunicorn workers, each with its own watches) follows a
ConfigMap edited with the real kubectl, keeps the last good policy when an edit is invalid, falls
back to the defaults when the ConfigMap is deleted, and follows Namespace labels for
`managedNamespaces.selector` — all without a restart.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import yaml
from kubernetes import client

from localcluster.runner import LocalCluster
from localcluster.store import HISTORY_PER_RESOURCE
from tests.localcluster_fixtures import kubectl, local_cluster  # noqa: F401 - fixtures
from tests.webhook.helpers import RELOAD_TIMEOUT_SECONDS, policy_text, wait_until_every_worker_injects
from webhook.serving.launch import RunningGateway
from webhook.policy.reloader import ClusterPolicySource, api_client
from webhook.policy.store import PolicyStore

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



def test_a_watch_resumed_after_its_history_is_gone_lists_again(tmp_path: Path) -> None:
    """410 Gone: the watch's resourceVersion fell out of the server's bounded history; the policy
    the list finds is installed, and the watch that follows it sees the next edit."""
    with LocalCluster(tmp_path / "cluster", watch_history=0.0) as cluster:  # history: the last 1,000 events only
        core = client.CoreV1Api(api_client(str(cluster.kubeconfig)))
        core.create_namespace({"metadata": {"name": "busy"}})
        core.create_namespaced_config_map("busy", {"metadata": {"name": "policy"}, "data": {"policy.yaml": "{}"}})
        stale = core.read_namespaced_config_map("policy", "busy").metadata.resource_version
        noise = [{"metadata": {"name": f"noise-{i}"}} for i in range(HISTORY_PER_RESOURCE + 10)]
        with ThreadPoolExecutor(8) as pool:  # other ConfigMaps push the policy's version out of history
            list(pool.map(lambda body: core.create_namespaced_config_map("busy", body), noise))
        store = PolicyStore()
        source = ClusterPolicySource(store, ("busy", "policy"), kubeconfig=str(cluster.kubeconfig))
        watch = source.watches[0]
        watch.resource_version = stale  # as a watch resumed from where it stood before the noise
        core.patch_namespaced_config_map("policy", "busy", {"data": {"policy.yaml": policy_text("q-listed")}})
        source.start()
        try:
            wait_for(lambda: watch.expired == 1 and watch.lists == 1, lambda: f"expired={watch.expired} lists={watch.lists}")
            wait_for(lambda: store.current is not None and store.current.policy.queues.default_queue_name == "q-listed")
            core.patch_namespaced_config_map("policy", "busy", {"data": {"policy.yaml": policy_text("q-watched")}})
            wait_for(lambda: store.current is not None and store.current.policy.queues.default_queue_name == "q-watched")
            assert watch.lists == 1, "the edit came by the watch"
        finally:
            source.stop()


def wait_for(condition: Callable[[], bool], state: Callable[[], str] = lambda: "",
             timeout: float = RELOAD_TIMEOUT_SECONDS) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"condition not reached in time {state()}"
        time.sleep(0.05)


def _worker_pids(gateway: RunningGateway) -> list[int]:
    return [int(m.group(1)) for line in gateway.stderr_lines if (m := re.search(r"Booting worker with pid: (\d+)", line))]


def test_a_bad_stored_policy_never_takes_the_gateway_down_and_keeps_it_unready_until_a_good_one(
        local_cluster: LocalCluster, kubectl: Kubectl, cert_dir: Path, tmp_path: Path,  # noqa: F811
        launch: Callable[..., RunningGateway]) -> None:
    system = f"gw-system-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", system)
    # Stored while no gateway guarded it: the policy the gateway finds at start is invalid.
    apply_policy(kubectl, system, "queues: {defaultQueueName: [nope]}\n")
    gateway = launch(cert_dir, "--workers", "2", "--policy-configmap", f"{system}/batchgate-policy",
                     "--kubeconfig", str(local_cluster.kubeconfig), "--policy-cache", str(tmp_path / "last-good.yaml"))
    wait_until_every_worker_injects(gateway, "default-queue")
    ready = ready_body(gateway)  # answering with the defaults, yet not Ready: the operator's policy never loaded
    assert (ready["ready"], ready["source"]) == (False, "built-in defaults")
    assert "queues.defaultQueueName" in ready["error"]
    assert f"kubectl edit configmap -n {system} batchgate-policy" in ready["error"] and "break-glass" in ready["error"]
    events = json.loads(kubectl("get", "events", "-n", system, "-o", "json",
                                "--field-selector", "involvedObject.name=batchgate-policy").stdout)["items"]
    assert [(e["reason"], e["type"]) for e in events] == [("InvalidPolicy", "Warning")]
    assert "built-in defaults" in events[0]["message"] and "queues.defaultQueueName" in events[0]["message"]

    apply_policy(kubectl, system, policy_text("q-good"))
    wait_until_every_worker_injects(gateway, "q-good")
    assert ready_body(gateway)["ready"]
    apply_policy(kubectl, system, "exempt: {users: alice}\n")  # invalid again, and a worker restarts
    deadline = time.monotonic() + RELOAD_TIMEOUT_SECONDS
    while "exempt.users" not in ready_body(gateway).get("lastError", ""):
        assert time.monotonic() < deadline, "the invalid policy was never seen"
        time.sleep(0.1)
    for pid in _worker_pids(gateway):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + RELOAD_TIMEOUT_SECONDS
    while len(_worker_pids(gateway)) < 4:
        assert time.monotonic() < deadline, "the workers were not replaced"
        time.sleep(0.1)
    wait_until_every_worker_injects(gateway, "q-good")  # the replacements kept the last good policy
    ready = ready_body(gateway)
    assert ready["source"].startswith("last good policy") and "exempt.users" in ready["lastError"]
