"""With the gateway down, a managed namespace still gets the pods its controllers make: the shipped
pods webhook's matchConditions (certs/scope.py, for a policy that refuses bare pods) keep them
away from the gateway, while a user's bare pod still waits on it and is refused (failurePolicy
Fail). The real kubectl and the local cluster's own ReplicaSet controller, as on a cluster."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from batchgate.policy import DEFAULT_POLICY
from certs.scope import POD_WEBHOOK, pod_match_conditions
from localcluster.apiserver.webhook_sources import ADDRESS_ANNOTATION
from tests.manifests.kustomize import webhook_documents

Kubectl = Callable[..., subprocess.CompletedProcess]

REFUSING_BARE_PODS = replace(DEFAULT_POLICY, allowed_kinds=replace(
    DEFAULT_POLICY.allowed_kinds, top_level=tuple(k for k in DEFAULT_POLICY.allowed_kinds.top_level if k != "Pod")))


def closed_port() -> int:
    """A port nothing listens on: the gateway scaled to zero."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pods_hook(namespace: str, service_namespace: str) -> dict[str, Any]:
    """The shipped pods webhook, its selector and conditions as the keeper would write them."""
    (config,) = [d for d in webhook_documents() if d["kind"] == "ValidatingWebhookConfiguration"]
    (hook,) = [h for h in config["webhooks"] if h["name"] == POD_WEBHOOK]
    client = {"service": {**hook["clientConfig"]["service"], "namespace": service_namespace}}
    return {**hook, "clientConfig": client, "namespaceSelector": {"matchLabels": {"managed-by-test": namespace}},
            "matchConditions": pod_match_conditions(REFUSING_BARE_PODS)}


@pytest.fixture
def managed(sim_kubectl: Kubectl, ns: str) -> Iterator[str]:
    """`ns`, managed, with the pods webhook registered and its gateway down."""
    gateway = f"gw-{uuid.uuid4().hex[:8]}"
    sim_kubectl("create", "namespace", gateway)
    sim_kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "batchgate-webhook", "namespace": gateway,
                     "annotations": {ADDRESS_ANNOTATION: f"127.0.0.1:{closed_port()}"}},
        "spec": {"ports": [{"port": 443}]}}))
    sim_kubectl("label", "namespace", ns, f"managed-by-test={ns}")
    name = f"{ns}-pods"
    sim_kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name}, "webhooks": [pods_hook(ns, gateway)]}))
    yield ns
    sim_kubectl("delete", "validatingwebhookconfiguration", name, "--ignore-not-found")
    sim_kubectl("delete", "namespace", gateway, "--ignore-not-found", "--wait=false")


def replica_set(namespace: str) -> str:
    labels = {"app": "web"}
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": namespace},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})


def test_a_controllers_pod_is_created_with_the_gateway_down(sim_kubectl: Kubectl, managed: str) -> None:
    sim_kubectl("apply", "-f", "-", input=replica_set(managed))
    deadline = time.monotonic() + 60
    names: list[str] = []
    while not names and time.monotonic() < deadline:
        out = sim_kubectl("get", "pods", "-n", managed, "-l", "app=web", "-o", "json").stdout
        names = [p["metadata"]["name"] for p in json.loads(out)["items"]]
        time.sleep(0.2)
    assert names, "the ReplicaSet controller's pod was not created"


def test_a_bare_pod_waits_on_the_gateway_and_is_refused(sim_kubectl: Kubectl, managed: str) -> None:
    result = sim_kubectl("run", "bare", "-n", managed, "--image=busybox", "--restart=Never", check=False)
    assert result.returncode != 0
    assert f'failed calling webhook "{POD_WEBHOOK}"' in result.stderr
