"""The confused deputy, closed at `kubectl apply`: the real gateway, connected to the local
cluster, authorizes each AppWrapper component with SubjectAccessReviews against the cluster's
RBAC, for the submitter and for the controller's service account (the shipped ClusterRole).

The gateway asks as its own service account, with the shipped role that lets it create
SubjectAccessReviews.
"""

from __future__ import annotations

import base64
import re
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from batchgate.clock import SystemClock
from certs.authority import service_names, write_serving_files
from demo.stack import gateway_configurations, gateway_service, wait_until_ready
from demo.kubectl import Kubectl
from tests import clusters
from tests.builders import an_appwrapper
from tests.localcluster_fixtures import service_account_kubeconfig
from webhook.serving.launch import REPO_ROOT, RunningGateway, start_gateway

pytestmark = pytest.mark.timeout(180)
NAMESPACE = "team-a"
CONTROLLER = "system:serviceaccount:batchgate-system:batchgate-controller"
POLICY = f"""\
exempt: {{groups: [system:masters]}}
queues: {{requireQueueFor: []}}
scheduling: {{schedulerName: '', gang: false}}
allowedKinds:
  wrapped: [Job.batch, ConfigMap, Secret, ServiceAccount]
authorization: {{userRBACCheck: true}}
controllers: {{appWrapper: ['{CONTROLLER}']}}
"""
# alice may submit AppWrappers and create Jobs, ConfigMaps and ServiceAccounts in her namespace,
# but not Secrets.
ALICE_ROLE = f"""\
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: submitter, namespace: {NAMESPACE}}}
rules:
  - apiGroups: [workload.codeflare.dev]
    resources: [appwrappers]
    verbs: [get, list, watch, create, update, patch]
  - apiGroups: [batch]
    resources: [jobs]
    verbs: [create]
  - apiGroups: [""]
    resources: [configmaps, serviceaccounts]
    verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: submitter-alice, namespace: {NAMESPACE}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: submitter}}
subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}}]
"""
@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Kubectl, RunningGateway]]:
    tmp = tmp_path_factory.mktemp("component-authorization")
    with clusters.cluster(tmp / "cluster") as (cluster, kubectl):
        kubectl.run("apply", "-k", str(REPO_ROOT / "manifests" / "crds"))
        kubectl.run("apply", "-k", str(REPO_ROOT / "manifests" / "rbac"))  # the controller's shipped role
        kubectl.run("create", "namespace", NAMESPACE)
        kubectl.run("label", "namespace", NAMESPACE, "mlbatch-team-namespace=true")  # a team namespace opts in
        kubectl.run("apply", "-f", "-", stdin=ALICE_ROLE)
        certs, policy = tmp / "gateway-certs", tmp / "policy.yaml"
        # The gateway asks its SubjectAccessReviews as its own service account (manifests/rbac/gateway.yaml).
        identity = service_account_kubeconfig(cluster.kubeconfig, "batchgate-system", "batchgate-webhook",
                                              tmp / "gateway.kubeconfig")
        policy.write_text(POLICY)
        write_serving_files(certs, service_names("batchgate-webhook", "batchgate-system"), SystemClock().now())
        # One worker, so the second of two reviews meets the first one's answers in the cache.
        gateway = start_gateway(certs, "--workers", "1", "--threads", "4", "--policy-file", str(policy),
                                "--kubeconfig", str(identity), "--audit-log", str(tmp / "audit.log"))
        try:
            wait_until_ready(gateway, SystemClock())
            kubectl.run("apply", "-f", "-", stdin=gateway_service(f"{gateway.host}:{gateway.port}"))
            ca_bundle = base64.b64encode((certs / "ca.crt").read_bytes()).decode()
            kubectl.run("apply", "-f", "-", stdin=gateway_configurations(ca_bundle, kubectl))
            yield kubectl, gateway
        finally:
            gateway.stop()


def appwrapper(name: str, *templates: dict[str, Any]) -> str:
    builder = an_appwrapper(name, NAMESPACE).with_job()
    for template in templates:
        builder = builder.with_component(template)
    return yaml.safe_dump(builder.build())


def core(kind: str, name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name}}


def apply_as_alice(kubectl: Kubectl, manifest: str) -> subprocess.CompletedProcess[str]:
    return kubectl.run("apply", "-f", "-", user="alice", stdin=manifest, check=False)


def metric(gateway: RunningGateway, name: str, **labels: str) -> float:
    """The sum of a counter's samples whose labels include `labels`."""
    client = gateway.client()
    _, text, _ = client.request("GET", "/metrics")
    client.close()
    total = 0.0
    for line in text.decode().splitlines():
        match = re.fullmatch(rf"{name}\{{(.*)\}} (\S+)", line)
        if match and all(f'{k}="{v}"' in match.group(1).split(",") for k, v in labels.items()):
            total += float(match.group(2))
    return total


def test_alice_cannot_have_the_controller_create_a_secret_she_may_not_create(stack) -> None:
    kubectl, _ = stack
    done = apply_as_alice(kubectl, appwrapper("steal", core("Secret", "creds")))
    assert done.returncode != 0
    assert "denied the request" in done.stderr
    assert ('spec.components[1].template: Secret: User "alice" cannot create resource "secrets" in API group "" '
            f'in the namespace "{NAMESPACE}"') in done.stderr
    assert "spec.components[0]" not in done.stderr, "her Job is one she may create"
    assert kubectl.run("get", "appwrapper", "steal", "-n", NAMESPACE, check=False).returncode != 0


def test_a_kind_the_controller_may_not_create_fails_at_apply(stack) -> None:
    kubectl, _ = stack
    done = apply_as_alice(kubectl, appwrapper("runner", core("ServiceAccount", "runner")))
    assert done.returncode != 0
    assert (f'spec.components[1].template: ServiceAccount: the controller (User "{CONTROLLER}") cannot create '
            'resource "serviceaccounts"') in done.stderr


def test_a_second_appwrapper_of_the_same_kinds_is_authorized_from_the_cache(stack) -> None:
    kubectl, gateway = stack
    sent = metric(gateway, "batchgate_subject_access_reviews_total")
    hits = metric(gateway, "batchgate_authorization_cache_total", result="hit")
    first = apply_as_alice(kubectl, appwrapper("first", core("ConfigMap", "a"), core("ConfigMap", "b")))
    assert first.returncode == 0, first.stderr
    asked = metric(gateway, "batchgate_subject_access_reviews_total") - sent
    assert 0 < asked <= 4  # Job and ConfigMap, for alice and the controller; fewer if already cached
    second = apply_as_alice(kubectl, appwrapper("second", core("ConfigMap", "c")))
    assert second.returncode == 0, second.stderr
    assert metric(gateway, "batchgate_subject_access_reviews_total") - sent == asked, "no SubjectAccessReview sent"
    assert metric(gateway, "batchgate_authorization_cache_total", result="hit") - hits >= 4
