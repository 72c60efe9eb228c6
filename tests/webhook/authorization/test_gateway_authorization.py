"""The gateway (real gunicorn over TLS) authorizing AppWrapper components with SubjectAccessReviews
sent over real HTTPS to a table-driven authorizer (tests/webhook/authorizer_stub.py)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any, Iterator

import jsonpatch
import pytest

from batchgate.clock import SystemClock
from certs.authority import service_names, write_serving_files
from tests.builders import a_deployment, an_appwrapper
from tests.webhook.authorizer_stub import AuthorizerStub
from tests.webhook.helpers import ALICE, BOB, review_for
from webhook.rules.review import UserInfo
from webhook.serving.client import GatewayClient
from webhook.serving.launch import RunningGateway, start_gateway

CONTROLLER = "system:serviceaccount:batchgate-system:batchgate-controller"
GRANTS = {
    ("alice", "batch", "jobs", "team-a"), ("alice", "", "configmaps", "team-a"),
    ("alice", "apps", "deployments", "team-a"),
    ("bob", "batch", "jobs", "team-a"),
    (CONTROLLER, "batch", "jobs", "team-a"), (CONTROLLER, "", "secrets", "team-a"),
    ("system:serviceaccounts:batchgate-system", "", "configmaps", "team-a"),  # a grant to its group
}


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthorizerStub]:
    with AuthorizerStub(tmp_path_factory.mktemp("authorizer"), grants=set(GRANTS)) as running:
        yield running


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory, stub: AuthorizerStub) -> Iterator[RunningGateway]:
    tmp = tmp_path_factory.mktemp("gateway")
    write_serving_files(tmp / "certs", service_names("batchgate-webhook", "batchgate-system"), SystemClock().now())
    policy = tmp / "policy.yaml"
    policy.write_text(f"controllers: {{appWrapper: ['{CONTROLLER}']}}\n")
    # One worker: every review meets the same answer cache.
    running = start_gateway(tmp / "certs", "--workers", "1", "--threads", "2", "--policy-file", str(policy),
                            "--kubeconfig", str(stub.kubeconfig), "--audit-log", str(tmp / "audit.log"))
    yield running
    running.stop()


def secret(name: str = "creds") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": {"token": "x"}}


def configmap(name: str = "settings") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


def appwrapper(name: str, *templates: dict[str, Any], namespace: str = "team-a") -> dict[str, Any]:
    builder = an_appwrapper(name, namespace).with_job()
    for template in templates:
        builder = builder.with_component(template)
    return builder.build()


def submit(gateway: RunningGateway, obj: dict[str, Any], user: UserInfo = ALICE) -> dict[str, Any]:
    """/mutate, the patch applied as the API server would, then /validate: the validating response."""
    client = gateway.client()
    namespace = obj["metadata"]["namespace"]
    try:
        _, mutated = client.review("/mutate", review_for(obj, user, namespace=namespace))
        patch = mutated["response"].get("patch")
        final = jsonpatch.apply_patch(obj, json.loads(base64.b64decode(patch))) if patch else obj
        _, validated = client.review("/validate", review_for(final, user, namespace=namespace))
    finally:
        client.close()
    return validated["response"]


def metric(gateway: RunningGateway, name: str, **labels: str) -> float:
    client: GatewayClient = gateway.client()
    _, text, _ = client.request("GET", "/metrics")
    client.close()
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    total = 0.0
    for line in text.decode().splitlines():
        match = re.fullmatch(rf"{name}\{{(.*)\}} (\S+)", line)
        if match and ",".join(sorted(match.group(1).split(","))) == wanted:
            total += float(match.group(2))
    return total


@pytest.mark.parametrize(
    ("templates", "allowed", "reason", "phrases"),
    [
        pytest.param((configmap(),), True, "", [], id="components alice and the controller may create are admitted"),
        pytest.param((secret(),), False, "ComponentForbidden",
                     ['spec.components[1].template: Secret: User "alice" cannot create resource "secrets" in API '
                      'group "" in the namespace "team-a" (the authorizer gave no reason)'],
                     id="a Secret alice may not create is refused, naming the component and kind"),
        pytest.param((a_deployment("web").build(),), False, "ComponentForbidden",
                     ['spec.components[1].template: Deployment.apps: the controller (User '
                      f'"{CONTROLLER}") cannot create resource "deployments" in API group "apps"'],
                     id="a Deployment the controller may not create is refused at submission"),
    ],
)
def test_components_are_authorized_for_the_user_and_the_controller(gateway: RunningGateway, templates, allowed,
                                                                   reason, phrases) -> None:
    response = submit(gateway, appwrapper("aw", *templates))
    assert response["allowed"] is allowed, response
    if not allowed:
        assert (response["status"]["code"], response["status"]["reason"]) == (403, reason)
        for phrase in phrases:
            assert phrase in response["status"]["message"]


def test_a_second_review_of_the_same_kinds_is_answered_from_the_cache(gateway: RunningGateway,
                                                                      stub: AuthorizerStub) -> None:
    # A namespace no other test asks about: nothing about it is cached yet.
    obj = appwrapper("cached", configmap("a"), configmap("b"), configmap("c"), namespace="team-c")
    hits, reviews_sent = metric(gateway, "batchgate_authorization_cache_total", result="hit"), len(stub.reviews)
    first = submit(gateway, obj, BOB)
    asked = len(stub.reviews) - reviews_sent
    assert first["allowed"] is False and "User \"bob\" cannot create resource \"configmaps\"" in \
        first["status"]["message"]
    assert asked == 4  # user and controller, Job and ConfigMap: one per distinct kind, not per component
    second = submit(gateway, obj, BOB)
    assert second == {**first, "uid": second["uid"]}
    assert len(stub.reviews) - reviews_sent == asked, "the second review sent no SubjectAccessReview"
    assert metric(gateway, "batchgate_authorization_cache_total", result="hit") - hits == 4


def test_an_authorizer_error_denies_and_is_not_cached(gateway: RunningGateway, stub: AuthorizerStub) -> None:
    carol = UserInfo("carol", "uid-carol", ("system:authenticated",))
    stub.mode = "error"
    try:
        response = submit(gateway, appwrapper("failing", configmap()), carol)
    finally:
        stub.mode = "ok"
    assert (response["allowed"], response["status"]["code"]) == (False, 503)
    assert response["status"]["reason"] == "AuthorizationUnavailable"
    assert "HTTP 500 Internal Server Error: etcdserver: request timed out" in response["status"]["message"]
    again = submit(gateway, appwrapper("failing", configmap()), carol)
    assert again["status"]["reason"] == "ComponentForbidden", "once the authorizer answers, its answer counts"
