"""The flask app in-process: replies, denials, malformed input, audit lines, probes, metrics.

The same app runs under gunicorn in test_gateway_tls.py; here it is driven by flask's test
client so hostile input can be thrown at it by the thousand.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchgate.clock import FakeClock
from batchgate.policy import parse_policy
from tests.builders import sample, samples
from tests.upstream_corpus import corpus_manifests, corpus_rows
from tests.webhook.helpers import ALICE, BOB, hostile_reviews, review_for
from webhook import rules
from webhook.serving.admission_review import parse_review
from webhook.serving.app import GatewayContext, create_app
from webhook.serving.audit import AuditLog
from webhook.policy.store import DEFAULTS, LoadedPolicy, PolicyStore
from webhook.rules.review import GroupVersionKind, UserInfo


def build_app(tmp_path: Path, store: PolicyStore | None = None) -> tuple[Flask, Path]:
    if store is None:
        store = PolicyStore()
        store.install(DEFAULTS)
    audit_path = tmp_path / "audit.log"
    context = GatewayContext(store=store, audit=AuditLog(str(audit_path)), clock=FakeClock())
    return create_app(context), audit_path


@pytest.fixture
def app_and_audit(tmp_path: Path) -> tuple[Flask, Path]:
    return build_app(tmp_path)


@pytest.fixture
def client(app_and_audit: tuple[Flask, Path]) -> FlaskClient:
    return app_and_audit[0].test_client()


def post(client: FlaskClient, path: str, body: Any) -> tuple[int, dict[str, Any], str]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    response = client.post(path, data=data, content_type="application/json")
    return response.status_code, json.loads(response.data), response.content_type


def audit_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def decoded_patch(response: dict[str, Any]) -> list[dict[str, Any]]:
    return json.loads(base64.b64decode(response["patch"])) if "patch" in response else []


def as_mutated(client: FlaskClient, obj: dict[str, Any], user: Any = ALICE) -> dict[str, Any]:
    """What the API server sends to /validate: the object with /mutate's patch applied."""
    _, body, _ = post(client, "/mutate", review_for(obj, user))
    return review_for(jsonpatch.apply_patch(obj, decoded_patch(body["response"])), user)


OBJECTS = [pytest.param(s, o, id=f"demo/samples/{s} {o['kind']}") for s, o in samples()] + corpus_rows(
    ((f"{name} {o['kind']}", (name, o)) for name, _, o in corpus_manifests()), 2)


@pytest.mark.parametrize(("source", "obj"), OBJECTS)
def test_each_sample_is_mutated_exactly_as_the_rules_say(client: FlaskClient, source: str, obj: dict) -> None:
    review = review_for(obj, BOB)
    status, body, content_type = post(client, "/mutate", review)
    assert (status, content_type) == (200, "application/json")
    response = body["response"]
    assert response["uid"] == review["request"]["uid"]
    assert body["apiVersion"] == "admission.k8s.io/v1" and body["kind"] == "AdmissionReview"
    expected = rules.mutate(parse_review(review), DEFAULTS.policy)
    if expected.denial is not None:
        assert response["allowed"] is False and response["status"]["code"] == expected.denial.code
        return
    assert response["allowed"] is True
    if expected.object is None or expected.object == obj:
        assert "patch" not in response and "patchType" not in response
    else:
        assert response["patchType"] == "JSONPatch"
        assert jsonpatch.apply_patch(obj, decoded_patch(response)) == expected.object


def test_identity_labels_come_from_the_request_user_not_from_the_object(client: FlaskClient) -> None:
    aw = sample("alice/appwrapper-pytorchjob.yaml")
    aw["metadata"]["labels"] = {"workload.codeflare.dev/user": "admin"}
    _, body, _ = post(client, "/mutate", review_for(aw, ALICE))
    mutated = jsonpatch.apply_patch(aw, decoded_patch(body["response"]))
    assert mutated["metadata"]["labels"]["workload.codeflare.dev/user"] == "alice"


def test_a_validation_denial_is_403_and_names_the_rule_and_the_field(client: FlaskClient) -> None:
    status, body, _ = post(client, "/validate", as_mutated(client, sample("bob/appwrapper-jobset.yaml")))
    response = body["response"]
    assert status == 200 and response["allowed"] is False
    assert response["status"]["code"] == 403
    assert response["status"]["reason"]
    assert "spec.components[0].template.kind" in response["status"]["message"]
    assert "patch" not in response


def test_validate_never_sends_a_patch(tmp_path: Path) -> None:
    store = PolicyStore()  # no API server here to authorize the components with (user or controller)
    store.install(LoadedPolicy.of(parse_policy("authorization: {userRBACCheck: false}\ncontrollers: {appWrapper: []}"),
                                  "test"))
    client = build_app(tmp_path, store)[0].test_client()
    _, body, _ = post(client, "/validate", as_mutated(client, sample("alice/appwrapper-pytorchjob.yaml")))
    assert body["response"]["allowed"] is True and "patch" not in body["response"]


def test_without_an_api_server_an_appwrapper_needing_authorization_is_denied(client: FlaskClient) -> None:
    _, body, _ = post(client, "/validate", as_mutated(client, sample("alice/appwrapper-pytorchjob.yaml")))
    status = body["response"]["status"]
    assert body["response"]["allowed"] is False
    assert (status["code"], status["reason"]) == (503, "AuthorizationUnavailable")
    assert "without an API server connection" in status["message"]
    assert "spec.components[0].template: PyTorchJob.kubeflow.org" in status["message"]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        pytest.param(b"{", 400, None, id="broken JSON is an HTTP 400"),
        pytest.param({"apiVersion": "v1", "kind": "Pod"}, 400, None, id="a Pod instead of a review is an HTTP 400"),
        pytest.param({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}, 400, None,
                     id="a review without request is an HTTP 400"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, 400, None, id="nesting 100k deep is an HTTP 400"),
        pytest.param(b" " * (10 * 1024 * 1024), 400, None, id="a 10 MB body is an HTTP 400"),
        pytest.param(review_for("a string object", kind=GroupVersionKind("", "v1", "Pod")), 200, 400,
                     id="an object that is a string is denied with code 400"),
        pytest.param(review_for(["a", "list"], kind=GroupVersionKind("batch", "v1", "Job")), 200, 400,
                     id="an object that is a list is denied with code 400"),
        pytest.param(review_for({"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": "g"}}),
                     200, 403, id="an unknown kind is denied as not allowed"),
    ],
)
@pytest.mark.parametrize("path", ["/mutate", "/validate"])
def test_bad_input_gets_a_clear_answer_and_an_audit_line(app_and_audit: tuple[Flask, Path], path: str, body: Any,
                                                         status: int, code: int | None) -> None:
    app, audit_path = app_and_audit
    got_status, reply, content_type = post(app.test_client(), path, body)
    assert (got_status, content_type) == (status, "application/json")
    if got_status == 400:
        assert reply["code"] == 400 and reply["message"]
    elif path == "/validate" or code == 400:
        assert reply["response"]["allowed"] is False
        assert reply["response"]["status"]["code"] == code and reply["response"]["status"]["message"]
    (line,) = audit_lines(audit_path)
    assert line["allowed"] is (got_status == 200 and reply["response"]["allowed"])
    assert line["endpoint"] == path.strip("/")


def test_an_unknown_kind_passes_mutation_untouched(client: FlaskClient) -> None:
    _, body, _ = post(client, "/mutate", review_for({"apiVersion": "example.com/v1", "kind": "Gizmo",
                                                     "metadata": {"name": "g"}}))
    assert body["response"]["allowed"] is True and "patch" not in body["response"]


def test_an_audit_line_answers_who_submitted_what_and_what_the_gateway_did(app_and_audit: tuple[Flask, Path]) -> None:
    app, audit_path = app_and_audit
    review = review_for(sample("alice/appwrapper-pytorchjob.yaml"), ALICE)
    review["request"]["dryRun"] = True
    post(app.test_client(), "/mutate", review)
    (line,) = audit_lines(audit_path)
    assert line["uid"] == review["request"]["uid"]
    assert line["operation"] == "CREATE" and line["kind"] == "workload.codeflare.dev/v1beta2/AppWrapper"
    assert (line["namespace"], line["name"]) == ("team-a", "resnet-ddp")
    assert line["user"] == "alice" and line["groups"] == ["system:authenticated", "team-a"]
    assert line["allowed"] is True and line["code"] == 200 and line["dryRun"] is True
    assert line["policyVersion"] == DEFAULTS.version
    assert {"op": "add", "path": "/spec/suspend"} in line["patch"]
    assert all(set(op) == {"op", "path"} for op in line["patch"])
    assert line["ts"] == "2025-01-01T00:00:00.000000Z"
    assert line["durationMs"] == 0.0


def test_a_malformed_review_is_audited_with_what_could_be_read(app_and_audit: tuple[Flask, Path]) -> None:
    app, audit_path = app_and_audit
    review = review_for(sample("alice/appwrapper-job.yaml"), BOB)
    review["request"]["dryRun"] = "maybe"
    status, reply, _ = post(app.test_client(), "/mutate", review)
    assert status == 200 and reply["response"]["status"]["code"] == 400
    (line,) = audit_lines(audit_path)
    assert line["uid"] == review["request"]["uid"] and line["user"] == "bob" and line["code"] == 400
    assert "dryRun" in line["message"]


def test_probes_report_health_and_the_loaded_policy(client: FlaskClient) -> None:
    assert client.get("/healthz").status_code == 200
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json["policyVersion"] == DEFAULTS.version


def test_not_ready_and_no_answers_until_a_policy_is_loaded(tmp_path: Path) -> None:
    app, _ = build_app(tmp_path, PolicyStore())
    client = app.test_client()
    assert client.get("/readyz").status_code == 503
    status, body, _ = post(client, "/mutate", review_for(sample("alice/appwrapper-job.yaml")))
    assert status == 503 and body["reason"] == "ServiceUnavailable"


def test_an_invalid_policy_keeps_the_last_good_one_and_is_counted(tmp_path: Path) -> None:
    store = PolicyStore()
    app, _ = build_app(tmp_path, store)
    store.install(LoadedPolicy.of(parse_policy("queues: {defaultQueueName: q-one}"), "test"))
    store.reject("test", "policy.yaml:1: queues: must be a mapping")
    client = app.test_client()
    ready = client.get("/readyz").json
    assert ready["lastError"].endswith("must be a mapping") and ready["source"] == "test"
    _, body, _ = post(client, "/mutate", review_for(sample("alice/appwrapper-job.yaml")))
    mutated = jsonpatch.apply_patch(sample("alice/appwrapper-job.yaml"), decoded_patch(body["response"]))
    assert mutated["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "q-one"
    metrics = client.get("/metrics").data.decode()
    assert 'batchgate_policy_errors_total{source="test"} 1.0' in metrics
    assert 'batchgate_policy_loads_total{source="test"} 1.0' in metrics


def test_metrics_count_reviews_by_outcome(client: FlaskClient) -> None:
    post(client, "/mutate", review_for(sample("alice/appwrapper-job.yaml")))
    post(client, "/validate", as_mutated(client, sample("bob/appwrapper-jobset.yaml")))
    post(client, "/mutate", b"nope")
    text = client.get("/metrics").data.decode()
    assert ('batchgate_webhook_reviews_total{allowed="true",code="200",endpoint="mutate",'
            'kind="AppWrapper.workload.codeflare.dev",operation="CREATE",rule=""} 2.0') in text
    assert 'allowed="false",code="403",endpoint="validate"' in text
    assert 'allowed="false",code="400",endpoint="mutate",kind="",operation="",rule="BadRequest"} 1.0' in text
    assert 'code="403",endpoint="validate",kind="AppWrapper.workload.codeflare.dev",operation="CREATE",rule="InvalidAppWrapper"' in text
    assert 'batchgate_webhook_review_duration_seconds_count{endpoint="mutate"} 3.0' in text


@pytest.mark.parametrize(("method", "path", "status"), [
    pytest.param("GET", "/mutate", 405, id="GET on mutate is 405 in JSON"),
    pytest.param("POST", "/nowhere", 404, id="an unknown path is 404 in JSON"),
])
def test_flask_errors_are_json_too(client: FlaskClient, method: str, path: str, status: int) -> None:
    response = client.open(path, method=method)
    assert response.status_code == status and response.content_type == "application/json"
    assert response.json["code"] == status


class BrokenClock(FakeClock):
    """A clock that fails when the audit line asks the time: a bug outside the rules."""

    def now(self) -> Any:
        raise RuntimeError("clock broken")


def test_a_bug_outside_the_rules_is_a_json_500_and_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = PolicyStore()
    store.install(DEFAULTS)
    context = GatewayContext(store=store, audit=AuditLog(str(tmp_path / "audit.log")), clock=BrokenClock())
    response = create_app(context).test_client().post(
        "/mutate", data=json.dumps(review_for(sample("alice/appwrapper-job.yaml"))), content_type="application/json")
    assert response.status_code == 500 and response.content_type == "application/json"
    assert response.json["reason"] == "InternalServerError"
    assert "Exception on /mutate [POST]" in caplog.text and "clock broken" in caplog.text


@pytest.mark.parametrize("method", ["GET", "PUT", "HEAD"])
def test_a_review_path_answers_only_post(client: FlaskClient, method: str) -> None:
    response = client.open("/validate", method=method)
    assert response.status_code == 405 and response.content_type == "application/json"


# --- hostile reviews ----------------------------------------------------------------------
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(review=hostile_reviews(), path=st.sampled_from(["/mutate", "/validate"]))
def test_hostile_reviews_never_get_a_500_nor_an_internal_error(client: FlaskClient, review: Any, path: str) -> None:
    status, body, content_type = post(client, path, review)
    assert content_type == "application/json"
    assert status in (200, 400), body
    if status == 200:
        response = body["response"]
        assert response["allowed"] or response["status"]["code"] in (400, 403), response
        if path == "/validate":
            assert "patch" not in response


def test_a_lost_audit_line_is_counted_and_the_review_still_answered(tmp_path: Path) -> None:
    store = PolicyStore()
    store.install(DEFAULTS)
    audit = AuditLog(str(tmp_path / "audit.log"))
    audit.close()  # writes now fail with EBADF, as on a full disk or a closed pipe
    client = create_app(GatewayContext(store=store, audit=audit, clock=FakeClock())).test_client()
    status, body, _ = post(client, "/mutate", review_for(sample("alice/appwrapper-job.yaml")))
    assert status == 200 and body["response"]["allowed"] is True
    assert "batchgate_audit_write_errors_total 1.0" in client.get("/metrics").data.decode()


@pytest.mark.parametrize("template", [pytest.param(["a", "list"], id="a list"), pytest.param("a string", id="a string")])
def test_an_appwrapper_component_template_that_is_not_an_object_is_denied_naming_the_field(
        client: FlaskClient, template: Any) -> None:
    aw = sample("alice/appwrapper-pytorchjob.yaml")
    aw["spec"]["components"][0]["template"] = template
    status, body, _ = post(client, "/validate", as_mutated(client, aw))
    response = body["response"]
    assert status == 200 and response["allowed"] is False and response["status"]["code"] in (400, 403)
    assert "spec.components[0].template" in response["status"]["message"]


@pytest.mark.parametrize(
    ("configmap", "allowed"),
    [
        pytest.param(("ops", "gate-policy"), False, id="the configured policy ConfigMap is checked"),
        pytest.param(("ops", "other-config"), True, id="another ConfigMap is not a policy"),
    ],
)
def test_an_invalid_edit_of_the_policy_configmap_is_denied_with_line_and_field(
        tmp_path: Path, configmap: tuple[str, str], allowed: bool) -> None:
    store = PolicyStore()
    store.install(DEFAULTS)
    context = GatewayContext(store=store, audit=AuditLog(str(tmp_path / "audit.log")), clock=FakeClock(),
                             policy_configmap=("ops", "gate-policy"))
    client = create_app(context).test_client()
    edit = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": configmap[1], "namespace": configmap[0]},
            "data": {"policy.yaml": "queues:\n  defaultQueueName: [a, b]\n"}}
    _, body, _ = post(client, "/validate", review_for(edit, namespace=configmap[0]))
    response = body["response"]
    assert response["allowed"] is allowed
    if not allowed:
        assert "queues.defaultQueueName" in response["status"]["message"] and ":2" in response["status"]["message"]


def _series(client: FlaskClient) -> set[str]:
    text = client.get("/metrics").data.decode()
    return {line.rsplit(" ", 1)[0] for line in text.splitlines() if line and not line.startswith("#")}


def _distinct_object(i: int) -> dict[str, Any]:
    """Object i of 10,000: its own made-up kind and group, name, namespace, user and labels."""
    return {"apiVersion": f"g{i}.example.com/v{i}", "kind": f"Widget{i}",
            "metadata": {"name": f"w{i}", "namespace": f"ns-{i}", "labels": {f"k{i}": f"v{i}"}}}


def test_ten_thousand_distinct_objects_add_no_metric_series(client: FlaskClient) -> None:
    def send(i: int) -> None:
        user = UserInfo(f"user-{i}", f"uid-{i}", ("system:authenticated",))
        for path in ("/mutate", "/validate"):
            assert post(client, path, review_for(_distinct_object(i), user, namespace=f"ns-{i}"))[0] == 200

    send(0)
    before = _series(client)
    for i in range(1, 10_000):
        send(i)
    assert _series(client) == before
