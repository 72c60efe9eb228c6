"""The dispatcher against a real TLS webhook: ordering, patches, failures, timeouts, TLS, dry run."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from certs.authority import service_names, write_serving_files
from localcluster.apiserver.admission import AdmissionAttributes, AdmissionDenied, WebhookDispatcher
from localcluster.sim.endpoints import NoEndpoints
from tests.localcluster.webhook_stub import WebhookStub

ALICE = {"username": "alice", "uid": "uid-alice", "groups": ["team-a", "system:authenticated"],
         "extra": {"scopes": ["x"]}}
CREATE_OPTIONS = {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions", "fieldManager": "kubectl-create"}


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookStub]:
    with WebhookStub(tmp_path_factory.mktemp("stub")) as server:
        yield server


@pytest.fixture(autouse=True)
def fresh_records(stub: WebhookStub) -> None:
    stub.received.clear()
    stub.most_in_flight.clear()


class Cluster:
    """The three callables a dispatcher reads the cluster through, backed by plain dicts."""

    def __init__(self, stub: WebhookStub) -> None:
        self.stub = stub
        self.configurations: dict[str, list[dict[str, Any]]] = {"MutatingWebhookConfiguration": [],
                                                                 "ValidatingWebhookConfiguration": []}
        self.labels: dict[str, dict[str, str]] = {"team-a": {}}
        self.services = {("hooks", "stub", 443): ("127.0.0.1", stub.port)}
        self.dispatcher = WebhookDispatcher(lambda kind: self.configurations[kind],
                                            lambda ns: self.labels.get(ns, {}), self._resolve)
        self.loop = asyncio.new_event_loop()

    def close(self) -> None:
        self.loop.run_until_complete(self.dispatcher.close())
        self.loop.close()

    def _resolve(self, namespace: str, name: str, port: int) -> list[tuple[str, int]]:
        found = self.services[(namespace, name, port)]
        if isinstance(found, Exception):
            raise found
        return found if isinstance(found, list) else [found]

    def mutating(self, name: str, *hooks: dict[str, Any]) -> None:
        self.configurations["MutatingWebhookConfiguration"].append({"metadata": {"name": name}, "webhooks": hooks})

    def validating(self, name: str, *hooks: dict[str, Any]) -> None:
        self.configurations["ValidatingWebhookConfiguration"].append({"metadata": {"name": name},
                                                                      "webhooks": hooks})

    def hook(self, name: str, path: str, **overrides: Any) -> dict[str, Any]:
        return {"name": name, "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "clientConfig": {"service": {"namespace": "hooks", "name": "stub", "path": path},
                                 "caBundle": self.stub.files.ca_bundle},
                "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                           "resources": ["configmaps"]}], **overrides}

    def admit(self, obj: dict[str, Any] | None = None, old: dict[str, Any] | None = None, operation: str = "CREATE",
              dry_run: bool = False, warnings: list[str] | None = None) -> dict[str, Any] | None:
        attrs = AdmissionAttributes(operation, "", "v1", "ConfigMap", "configmaps", "", "team-a", "cm", ALICE,
                                    dry_run, CREATE_OPTIONS)
        obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "team-a"}} \
            if obj is None and operation != "DELETE" else obj
        return self.loop.run_until_complete(asyncio.wait_for(self.dispatcher.admit(attrs, obj, old, warnings), 40))


@pytest.fixture
def cluster(stub: WebhookStub) -> Iterator[Cluster]:
    cluster = Cluster(stub)
    yield cluster
    cluster.close()


def denial(cluster: Cluster, **admit: Any) -> dict[str, Any]:
    with pytest.raises(AdmissionDenied) as caught:
        cluster.admit(**admit)
    return caught.value.status


def test_a_mutating_patch_is_applied_and_the_review_carries_the_request(cluster: Cluster, stub: WebhookStub) -> None:
    cluster.mutating("m", cluster.hook("label.batchgate.dev", "/label/team/a"))
    old = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"v": "0"}}
    result = cluster.admit(old=old, operation="UPDATE")
    assert result is not None and result["metadata"]["labels"] == {"team": "a"}
    (call,) = stub.received
    request = call.review["request"]
    assert (call.path, call.query, call.headers["Host"]) == ("/label/team/a", {"timeout": "10s"},
                                                            "stub.hooks.svc:443")
    assert (request["userInfo"], request["oldObject"], request["dryRun"], request["options"]) == (
        ALICE, old, False, CREATE_OPTIONS)
    assert (request["operation"], request["namespace"], request["resource"]["resource"]) == ("UPDATE", "team-a",
                                                                                            "configmaps")


def test_mutating_configurations_run_in_name_order_each_seeing_the_last_patch(cluster: Cluster,
                                                                           stub: WebhookStub) -> None:
    cluster.mutating("b-second", cluster.hook("second", "/label/second/yes"))
    cluster.mutating("a-first", cluster.hook("first", "/label/first/yes"), cluster.hook("first-b", "/allow"))
    result = cluster.admit()
    assert stub.paths() == ["/label/first/yes", "/allow", "/label/second/yes"]
    assert stub.received[1].review["request"]["object"]["metadata"]["labels"] == {"first": "yes"}
    assert result is not None and result["metadata"]["labels"] == {"first": "yes", "second": "yes"}


def test_each_call_gets_a_fresh_uid(cluster: Cluster, stub: WebhookStub) -> None:
    cluster.mutating("m", cluster.hook("a", "/allow"), cluster.hook("b", "/allow"))
    cluster.admit()
    assert len({r.review["request"]["uid"] for r in stub.received}) == 2


def test_connections_to_a_webhook_are_kept_alive_across_requests(cluster: Cluster, stub: WebhookStub) -> None:
    cluster.validating("v", cluster.hook("a", "/allow"))
    for _ in range(3):
        cluster.admit()
    assert len({r.peer for r in stub.received}) == 1


def test_a_kept_alive_connection_is_not_reused_for_another_service_name(cluster: Cluster,
                                                                       stub: WebhookStub) -> None:
    cluster.validating("v", cluster.hook("a", "/allow"))
    cluster.admit()
    cluster.services[("hooks", "impostor", 443)] = ("127.0.0.1", stub.port)
    hook = cluster.hook("name.batchgate.dev", "/allow")
    hook["clientConfig"]["service"]["name"] = "impostor"
    cluster.configurations["ValidatingWebhookConfiguration"] = [{"metadata": {"name": "v"}, "webhooks": [hook]}]
    assert "impostor.hooks.svc" in denial(cluster)["message"]


def test_reinvocation_if_needed_calls_an_earlier_webhook_again_after_a_later_change(cluster: Cluster,
                                                                                  stub: WebhookStub) -> None:
    cluster.mutating("a", cluster.hook("counter", "/count", reinvocationPolicy="IfNeeded"))
    cluster.mutating("b", cluster.hook("labeler", "/label/late/yes"))
    result = cluster.admit()
    assert stub.paths() == ["/count", "/label/late/yes", "/count"]
    assert result is not None and result["metadata"]["labels"] == {"count": "2", "late": "yes"}


def test_without_reinvocation_an_earlier_webhook_is_called_once(cluster: Cluster, stub: WebhookStub) -> None:
    cluster.mutating("a", cluster.hook("counter", "/count"))
    cluster.mutating("b", cluster.hook("labeler", "/label/late/yes"))
    cluster.admit()
    assert stub.paths() == ["/count", "/label/late/yes"]


DENIALS = [
    pytest.param("/deny", 403, 'admission webhook "guard.batchgate.dev" denied the request: no GPUs on Tuesdays',
                 id="a denial keeps its code and names the webhook"),
    pytest.param("/deny-with-code-200", 400,
                 'admission webhook "guard.batchgate.dev" denied the request: quota exhausted',
                 id="a denial with a success code becomes 400"),
    pytest.param("/deny-bare", 400, 'admission webhook "guard.batchgate.dev" denied the request without explanation',
                 id="a denial without a status is without explanation"),
]


@pytest.mark.parametrize(("path", "code", "message"), DENIALS)
@pytest.mark.parametrize("kind", ["mutating", "validating"])
def test_denials_reach_the_client_as_a_real_server_words_them(cluster: Cluster, kind: str, path: str, code: int,
                                                              message: str) -> None:
    getattr(cluster, kind)("cfg", cluster.hook("guard.batchgate.dev", path, failurePolicy="Ignore"))
    status = denial(cluster)
    assert (status["code"], status["message"], status["status"]) == (code, message, "Failure")


CALL_FAILURES = [
    pytest.param("/slow/3", {"timeoutSeconds": 1}, 'Post "https://stub.hooks.svc:443/slow/3?timeout=1s": '
                 "context deadline exceeded", id="a webhook slower than its timeout"),
    pytest.param("/crash", {}, "HTTP 500", id="a webhook answering 500"),
    pytest.param("/html", {}, "serializer for text/html", id="a webhook answering html"),
    pytest.param("/wrong-uid", {}, "expected response.uid", id="a webhook echoing the wrong uid"),
    pytest.param("/wrong-version", {}, "expected webhook response of admission.k8s.io/v1",
                 id="a webhook answering another review version"),
    pytest.param("/allow", {"admissionReviewVersions": ["v2"]}, "does not accept v1 or v1beta1",
                 id="a webhook accepting no review version we speak"),
]


@pytest.mark.parametrize(("path", "overrides", "message"), CALL_FAILURES)
def test_call_failures_fail_the_request_with_fail_policy(cluster: Cluster, path: str, overrides: dict,
                                                         message: str) -> None:
    cluster.validating("v", cluster.hook("flaky.batchgate.dev", path, **overrides))
    status = denial(cluster)
    assert (status["code"], status["reason"]) == (500, "InternalError")
    assert status["message"].startswith('Internal error occurred: failed calling webhook "flaky.batchgate.dev": ')
    assert message in status["message"]


@pytest.mark.parametrize(("path", "overrides", "message"), CALL_FAILURES)
def test_call_failures_are_skipped_with_ignore_policy(cluster: Cluster, path: str, overrides: dict,
                                                      message: str) -> None:
    cluster.mutating("m", cluster.hook("flaky.batchgate.dev", path, failurePolicy="Ignore", **overrides),
                     cluster.hook("after", "/label/after/yes"))
    result = cluster.admit()
    assert result is not None and result["metadata"]["labels"] == {"after": "yes"}


def test_a_dead_webhook_fails_only_requests_it_matches(cluster: Cluster) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        cluster.services[("hooks", "stub", 443)] = ("127.0.0.1", sock.getsockname()[1])
    cluster.validating("v", cluster.hook("dead.batchgate.dev", "/allow",
                                         rules=[{"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"],
                                                 "resources": ["configmaps"]}]))
    assert cluster.admit() is not None
    status = denial(cluster, operation="DELETE", old={"metadata": {"name": "cm"}})
    assert "connect: " in status["message"] and status["code"] == 500


@pytest.mark.parametrize("policy", ["Fail", "Ignore"])
@pytest.mark.parametrize("path", ["/bad-patch", "/undecodable-patch"])
def test_a_bad_patch_is_an_internal_error_whatever_the_failure_policy(cluster: Cluster, path: str,
                                                                     policy: str) -> None:
    cluster.mutating("m", cluster.hook("patcher", path, failurePolicy=policy))
    status = denial(cluster)
    assert (status["code"], status["reason"]) == (500, "InternalError")
    assert "patch" in status["message"].lower()


def test_a_ca_bundle_that_did_not_sign_the_webhook_is_a_tls_failure(cluster: Cluster, tmp_path: Path) -> None:
    other = write_serving_files(tmp_path, service_names("stub", "hooks"), dt.datetime.now(dt.timezone.utc))
    hook = cluster.hook("tls.batchgate.dev", "/allow")
    hook["clientConfig"]["caBundle"] = other.ca_bundle
    cluster.validating("v", hook)
    assert "certificate verify failed" in denial(cluster)["message"]


def test_the_certificate_must_name_the_service_it_is_reached_as(cluster: Cluster, stub: WebhookStub) -> None:
    cluster.services[("hooks", "impostor", 443)] = ("127.0.0.1", stub.port)
    hook = cluster.hook("name.batchgate.dev", "/allow")
    hook["clientConfig"]["service"]["name"] = "impostor"
    cluster.validating("v", hook)
    message = denial(cluster)["message"]
    assert "impostor.hooks.svc" in message and "certificate" in message.lower()


def test_a_url_webhook_is_called_directly(cluster: Cluster, stub: WebhookStub) -> None:
    hook = cluster.hook("url.batchgate.dev", "")
    hook["clientConfig"] = {"url": f"https://localhost:{stub.port}/label/via/url",
                            "caBundle": stub.files.ca_bundle}
    cluster.mutating("m", hook)
    result = cluster.admit()
    assert result is not None and result["metadata"]["labels"] == {"via": "url"}


def test_a_url_with_a_query_is_refused(cluster: Cluster, stub: WebhookStub) -> None:
    hook = cluster.hook("url.batchgate.dev", "")
    hook["clientConfig"] = {"url": f"https://localhost:{stub.port}/allow?x=1", "caBundle": stub.files.ca_bundle}
    cluster.validating("v", hook)
    assert "must be https with no user, query or fragment" in denial(cluster)["message"]


@pytest.mark.parametrize("side_effects", ["Some", "Unknown", None])
def test_a_dry_run_is_refused_by_a_webhook_with_side_effects(cluster: Cluster, stub: WebhookStub,
                                                             side_effects: str | None) -> None:
    cluster.validating("v", cluster.hook("effects.batchgate.dev", "/allow", sideEffects=side_effects,
                                         failurePolicy="Ignore"))
    status = denial(cluster, dry_run=True)
    assert (status["code"], status["message"]) == (400, 'admission webhook "effects.batchgate.dev" does not '
                                                        "support dry run")
    assert stub.received == []


def test_a_dry_run_reaches_a_webhook_without_side_effects_flagged_as_dry(cluster: Cluster, stub: WebhookStub) -> None:
    cluster.validating("v", cluster.hook("pure.batchgate.dev", "/allow", sideEffects="NoneOnDryRun"))
    cluster.admit(dry_run=True)
    assert stub.received[0].review["request"]["dryRun"] is True


def test_v1beta1_reviews_are_sent_to_webhooks_that_ask_for_them(cluster: Cluster, stub: WebhookStub) -> None:
    cluster.validating("v", cluster.hook("old.batchgate.dev", "/allow", admissionReviewVersions=["v1beta1", "v1"]))
    cluster.admit()
    assert stub.received[0].review["apiVersion"] == "admission.k8s.io/v1beta1"


def test_validating_webhooks_are_called_concurrently(cluster: Cluster, stub: WebhookStub) -> None:
    cluster.validating("v", *(cluster.hook(f"slow-{i}", "/slow/1") for i in range(3)))
    cluster.admit()
    assert stub.most_in_flight["/slow/1"] == 3


def test_validating_webhooks_see_the_mutated_object(cluster: Cluster, stub: WebhookStub) -> None:
    cluster.mutating("m", cluster.hook("labeler", "/label/seen/yes"))
    cluster.validating("v", cluster.hook("checker", "/allow"))
    cluster.admit()
    assert stub.received[1].review["request"]["object"]["metadata"]["labels"] == {"seen": "yes"}


def test_warnings_are_collected_for_the_client(cluster: Cluster) -> None:
    cluster.mutating("m", cluster.hook("warner", "/warn"))
    cluster.validating("v", cluster.hook("warner-too", "/warn"))
    warnings: list[str] = []
    cluster.admit(warnings=warnings)
    assert warnings == ["this is deprecated", "and so is that"] * 2


def test_webhooks_whose_selectors_do_not_match_are_not_called(cluster: Cluster, stub: WebhookStub) -> None:
    cluster.labels["team-a"] = {"admission": "off"}
    cluster.validating("v", cluster.hook("ns", "/deny", namespaceSelector={
        "matchExpressions": [{"key": "admission", "operator": "NotIn", "values": ["off"]}]}))
    cluster.validating("w", cluster.hook("obj", "/deny", objectSelector={"matchLabels": {"gpu": "true"}}))
    assert cluster.admit() is not None
    assert stub.received == []


def test_a_patch_on_delete_is_an_internal_error(cluster: Cluster) -> None:
    cluster.mutating("m", cluster.hook("patcher", "/label/a/b", rules=[{
        "operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]))
    # The stub patches the object it is sent; on DELETE that is the old object.
    with pytest.raises(AdmissionDenied):
        cluster.admit(operation="DELETE", old={"metadata": {"name": "cm", "labels": {"x": "y"}}})


@pytest.mark.parametrize("policy", ["Fail", "Ignore"])
def test_a_service_that_cannot_be_resolved_is_a_call_failure(cluster: Cluster, policy: str) -> None:
    hook = cluster.hook("nowhere.batchgate.dev", "/allow", failurePolicy=policy)
    hook["clientConfig"]["service"]["name"] = "missing"
    cluster.validating("v", hook)
    if policy == "Ignore":
        assert cluster.admit() is not None
    else:
        assert "lookup missing.hooks.svc: no such host" in denial(cluster)["message"]


def test_a_ca_bundle_that_is_not_base64_pem_is_a_call_failure(cluster: Cluster) -> None:
    hook = cluster.hook("badca.batchgate.dev", "/allow")
    hook["clientConfig"]["caBundle"] = base64.b64encode(b"not a certificate").decode()
    cluster.validating("v", hook)
    assert "invalid caBundle" in denial(cluster)["message"]


MATCH_CONDITIONS = [
    pytest.param([{"name": "alice", "expression": "request.userInfo.username == 'alice'"}], "Fail", "called",
                 id="a true condition calls the webhook"),
    pytest.param([{"name": "not-alice", "expression": "!request.userInfo.groups.exists(g, g == 'team-a')"}],
                 "Fail", "skipped", id="a false condition skips it"),
    pytest.param([{"name": "labelled", "expression": "object.metadata.labels['gpu'] == 'true'"}], "Fail",
                 "failed", id="an error with failure policy Fail rejects the request"),
    pytest.param([{"name": "labelled", "expression": "object.metadata.labels['gpu'] == 'true'"}], "Ignore",
                 "skipped", id="an error with failure policy Ignore skips the webhook"),
    pytest.param([{"name": "labelled", "expression": "object.metadata.labels['gpu'] == 'true'"},
                  {"name": "create", "expression": "request.operation == 'DELETE'"}], "Fail", "skipped",
                 id="a false condition wins over another condition's error"),
]


@pytest.mark.parametrize(("conditions", "policy", "outcome"), MATCH_CONDITIONS)
def test_match_conditions_decide_whether_a_webhook_is_called(cluster: Cluster, stub: WebhookStub, conditions: list,
                                                             policy: str, outcome: str) -> None:
    cluster.validating("v", cluster.hook("cel.batchgate.dev", "/deny", failurePolicy=policy,
                                         matchConditions=conditions))
    if outcome == "skipped":
        assert cluster.admit() is not None and stub.received == []
    elif outcome == "called":
        assert "no GPUs on Tuesdays" in denial(cluster)["message"]
    else:
        status = denial(cluster)
        assert (status["code"], stub.received) == (500, [])
        assert "failed to evaluate match conditions: expression 'labelled': no such key: labels" in status["message"]


def test_an_equivalent_webhook_patches_the_object_in_its_version_and_the_request_keeps_its_own(
        cluster: Cluster, stub: WebhookStub) -> None:
    hook = cluster.hook("old.batchgate.dev", "/label/seen/v1beta1")
    hook["rules"][0]["apiVersions"] = ["v1beta1"]
    cluster.mutating("m", hook)
    result = cluster.admit()
    sent = stub.received[-1].review["request"]
    assert (sent["kind"]["version"], sent["requestKind"]["version"], sent["object"]["apiVersion"]) == (
        "v1beta1", "v1", "v1beta1")
    assert result is not None and (result["apiVersion"], result["metadata"]["labels"]) == ("v1", {"seen": "v1beta1"})


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_refused_endpoint_is_passed_over_for_the_next_one(cluster: Cluster, stub: WebhookStub) -> None:
    cluster.services[("hooks", "stub", 443)] = [("127.0.0.1", _closed_port()), ("127.0.0.1", stub.port)]
    cluster.validating("v", cluster.hook("a", "/allow"))
    cluster.admit()
    assert stub.paths() == ["/allow"]


def test_when_every_endpoint_refuses_the_last_refusal_is_reported(cluster: Cluster) -> None:
    dead = _closed_port()
    cluster.services[("hooks", "stub", 443)] = [("127.0.0.1", _closed_port()), ("127.0.0.1", dead)]
    cluster.validating("v", cluster.hook("a", "/allow"))
    assert f"dial tcp 127.0.0.1:{dead}: connect: connection refused" in denial(cluster)["message"]


def test_a_service_without_ready_endpoints_fails_as_kube_apiserver_says(cluster: Cluster) -> None:
    """kube-apiserver dials the Service's cluster IP, where kube-proxy refuses a Service with no
    ready endpoint (the real control plane says the same: tests/e2e/test_install.py)."""
    cluster.services[("hooks", "stub", 443)] = NoEndpoints('no endpoints available for service "stub"', "10.96.0.12")
    cluster.validating("v", cluster.hook("a", "/allow"))
    assert denial(cluster)["message"] == ('Internal error occurred: failed calling webhook "a": failed to call '
                                          'webhook: Post "https://stub.hooks.svc:443/allow?timeout=10s": dial tcp '
                                          '10.96.0.12:443: connect: connection refused')
