"""Webhook configurations stored in the cluster are called on every matching write, with the
review a real API server sends, and their answers reach kubectl as on a real cluster."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Callable, Iterator

import pytest

from tests.localcluster.webhook_stub import WebhookStub
from tests.localcluster_fixtures import SHARED_USERS, role_binding

Kubectl = Callable[..., subprocess.CompletedProcess]


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookStub]:
    with WebhookStub(tmp_path_factory.mktemp("stub")) as server:
        yield server


@pytest.fixture
def policed(kubectl: Kubectl, stub: WebhookStub) -> Iterator[Callable[[str, str, str], str]]:
    """Register a webhook configuration for configmaps in one fresh labelled namespace."""
    made: list[str] = []
    kubectl("apply", "-f", "-", input=stub.routing())

    def register(kind: str, path: str, failure_policy: str = "Fail") -> str:
        namespace = f"p-{uuid.uuid4().hex[:8]}"
        kubectl("create", "namespace", namespace)
        kubectl("apply", "-f", "-", input=role_binding(namespace, "edit", SHARED_USERS))
        kubectl("label", "namespace", namespace, f"policed={namespace}")
        name = f"{namespace}-hook"
        kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "webhooks": [{"name": f"{path.strip('/').replace('/', '-')}.example.com", "sideEffects": "None",
                          "admissionReviewVersions": ["v1"], "failurePolicy": failure_policy,
                          "namespaceSelector": {"matchLabels": {"policed": namespace}},
                          "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                                     "resources": ["configmaps"]}],
                          "clientConfig": {"caBundle": stub.files.ca_bundle,
                                           "service": {"name": stub.service, "namespace": stub.namespace,
                                                       "path": path}}}]}))
        made.append(f"{kind.lower()}/{name}")
        return namespace

    yield register
    for ref in made:
        kubectl("delete", ref.replace("webhookconfiguration", "webhookconfigurations"), "--ignore-not-found")


def test_a_mutating_webhook_patches_what_kubectl_creates(kubectl: Kubectl, stub: WebhookStub, policed) -> None:
    namespace = policed("MutatingWebhookConfiguration", "/label/stamped/yes")
    kubectl("-n", namespace, "create", "configmap", "c", "--from-literal=a=b")
    labels = json.loads(kubectl("-n", namespace, "get", "configmap", "c", "-o", "json").stdout)["metadata"]["labels"]
    assert labels == {"stamped": "yes"}
    request = stub.received[-1].review["request"]
    assert request["operation"] == "CREATE" and request["userInfo"]["username"] == "admin"
    assert "uid" not in request["object"]["metadata"] and request["options"]["kind"] == "CreateOptions"
    assert stub.received[-1].query == {"timeout": "10s"}


def test_a_validating_webhook_sees_the_stored_form_and_its_denial_reaches_kubectl(kubectl: Kubectl, stub: WebhookStub,
                                                                                 policed) -> None:
    namespace = policed("ValidatingWebhookConfiguration", "/deny")
    refused = kubectl("--context", "alice", "-n", namespace, "create", "configmap", "c", check=False)
    assert refused.returncode == 1
    assert 'admission webhook "deny.example.com" denied the request: no GPUs on Tuesdays' in refused.stderr
    request = stub.received[-1].review["request"]
    assert request["userInfo"]["username"] == "alice" and request["object"]["metadata"]["uid"]
    assert kubectl("-n", namespace, "get", "configmap", "c", check=False).returncode == 1


def test_an_unreachable_webhook_fails_closed_or_open_by_its_failure_policy(kubectl: Kubectl, policed) -> None:
    closed = policed("ValidatingWebhookConfiguration", "/crash")
    refused = kubectl("-n", closed, "create", "configmap", "c", check=False)
    assert refused.returncode == 1 and 'failed calling webhook "crash.example.com"' in refused.stderr
    opened = policed("ValidatingWebhookConfiguration", "/crash", failure_policy="Ignore")
    kubectl("-n", opened, "create", "configmap", "c")


def test_webhook_warnings_reach_kubectl(kubectl: Kubectl, policed) -> None:
    namespace = policed("ValidatingWebhookConfiguration", "/warn")
    created = kubectl("-n", namespace, "create", "configmap", "c")
    assert "Warning: this is deprecated" in created.stderr
