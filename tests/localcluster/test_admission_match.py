"""Which webhooks a request reaches, and how refusals are worded: the pure half of admission."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localcluster.apiserver.admission_match import (
    AdmissionAttributes,
    BadPatch,
    CallError,
    apply_patch,
    decode_patch,
    denial_status,
    read_answer,
    review_request,
    review_version,
    rule_matches,
    selector_matches,
    sent_version,
    timeout_seconds,
    webhook_matches,
)

ADMIN = {"username": "admin", "uid": "u-1", "groups": ["system:masters", "system:authenticated"]}


def attrs(operation: str = "CREATE", group: str = "", version: str = "v1", resource: str = "pods",
          subresource: str = "", namespace: str = "team-a", kind: str = "Pod") -> AdmissionAttributes:
    return AdmissionAttributes(operation, group, version, kind, resource, subresource, namespace, "p", ADMIN)


def rule(**overrides: object) -> dict:
    return {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], **overrides}


RULES = [
    pytest.param(rule(), attrs(), True, id="an exact rule matches its resource"),
    pytest.param(rule(operations=["*"]), attrs(operation="DELETE"), True, id="operation star matches delete"),
    pytest.param(rule(), attrs(operation="UPDATE"), False, id="another operation does not match"),
    pytest.param(rule(apiGroups=["apps"]), attrs(), False, id="another group does not match"),
    pytest.param(rule(apiGroups=["*"], apiVersions=["*"], resources=["*"]), attrs(group="batch", resource="jobs"),
                 True, id="stars match any resource"),
    pytest.param(rule(resources=["*"]), attrs(subresource="status"), False,
                 id="a star resource does not match a subresource"),
    pytest.param(rule(resources=["pods/status"]), attrs(subresource="status"), True,
                 id="pods slash status matches the status subresource"),
    pytest.param(rule(resources=["pods/status"]), attrs(), False, id="pods slash status does not match pods"),
    pytest.param(rule(resources=["*/status"]), attrs(subresource="status"), True,
                 id="star slash status matches any status subresource"),
    pytest.param(rule(resources=["pods/*"]), attrs(subresource="binding"), True,
                 id="pods slash star matches every pod subresource"),
    pytest.param(rule(resources=["pods/*"]), attrs(), False, id="pods slash star does not match pods itself"),
    pytest.param(rule(resources=["*/*"]), attrs(), True, id="star slash star matches the resource too"),
    pytest.param(rule(scope="Namespaced"), attrs(), True, id="namespaced scope matches a namespaced pod"),
    pytest.param(rule(scope="Cluster"), attrs(), False, id="cluster scope skips a namespaced pod"),
    pytest.param(rule(resources=["namespaces"], scope="Cluster"), attrs(resource="namespaces", namespace="x"), True,
                 id="a namespace object is cluster scoped even though it names itself"),
    pytest.param(rule(resources=["namespaces"], scope="Namespaced"), attrs(resource="namespaces", namespace="x"),
                 False, id="namespaced scope never matches a namespace object"),
    pytest.param(rule(apiVersions=["v1beta1"]), attrs(), False, id="exact policy needs the version"),
    pytest.param(rule(operations=[]), attrs(), False, id="no operations listed matches nothing"),
]


@pytest.mark.parametrize(("the_rule", "request_attrs", "expected"), RULES)
def test_rule_matching(the_rule: dict, request_attrs: AdmissionAttributes, expected: bool) -> None:
    assert rule_matches(the_rule, request_attrs, exact=True) is expected


def test_equivalent_match_policy_matches_another_version_of_the_same_resource() -> None:
    hook = {"name": "h", "rules": [rule(apiVersions=["v1beta1"])]}
    assert webhook_matches(hook, attrs(), {"metadata": {}}, None, {}) is True
    assert webhook_matches({**hook, "matchPolicy": "Exact"}, attrs(), {"metadata": {}}, None, {}) is False


@pytest.mark.parametrize(
    ("rules", "policy", "expected"),
    [
        pytest.param([rule(apiVersions=["v1"])], None, "v1", id="a rule naming the request version gets it"),
        pytest.param([rule(apiVersions=["v1beta1"]), rule(apiVersions=["v1"])], None, "v1",
                     id="an exact match anywhere wins over an equivalent one"),
        pytest.param([rule(apiVersions=["v1beta1"])], None, "v1beta1",
                     id="an equivalent rule gets the version it names"),
        pytest.param([rule(apiVersions=["*"])], None, "v1", id="a star version gets the request version"),
        pytest.param([rule(apiVersions=["v1beta1"])], "Exact", "v1", id="exact policy never converts"),
    ],
)
def test_the_version_a_webhook_is_sent(rules: list, policy: str | None, expected: str) -> None:
    hook = {"name": "h", "rules": rules, **({"matchPolicy": policy} if policy else {})}
    assert sent_version(hook, attrs()) == expected


def test_an_equivalent_review_names_the_sent_version_and_keeps_the_request_version() -> None:
    request_attrs = AdmissionAttributes("CREATE", "example.com", "v1", "Widget", "widgets", "", "ns", "w", ADMIN)
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    request = review_request("v1", "u", request_attrs, widget, None, "v1beta1")["request"]
    assert (request["kind"]["version"], request["requestKind"]["version"]) == ("v1beta1", "v1")
    assert (request["resource"]["version"], request["requestResource"]["version"]) == ("v1beta1", "v1")
    assert request["object"]["apiVersion"] == "example.com/v1beta1"
    assert widget["apiVersion"] == "example.com/v1"


SELECTORS = [
    pytest.param(None, {}, True, id="no selector selects everything"),
    pytest.param({}, {"a": "b"}, True, id="an empty selector selects everything"),
    pytest.param({"matchLabels": {"a": "b"}}, {"a": "b", "c": "d"}, True, id="match labels are a subset"),
    pytest.param({"matchLabels": {"a": "b"}}, {"a": "c"}, False, id="a different value does not match"),
    pytest.param({"matchExpressions": [{"key": "a", "operator": "In", "values": ["x", "y"]}]}, {"a": "y"}, True,
                 id="in matches a listed value"),
    pytest.param({"matchExpressions": [{"key": "a", "operator": "In", "values": ["x"]}]}, {}, False,
                 id="in needs the key"),
    pytest.param({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["x"]}]}, {}, True,
                 id="not in matches a missing key"),
    pytest.param({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True,
                 id="exists matches an empty value"),
    pytest.param({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": ""}, False,
                 id="does not exist refuses a present key"),
]


@pytest.mark.parametrize(("selector", "labels", "expected"), SELECTORS)
def test_label_selectors(selector: dict | None, labels: dict, expected: bool) -> None:
    assert selector_matches(selector, labels) is expected


OPT_OUT = {"matchExpressions": [{"key": "admission", "operator": "NotIn", "values": ["off"]}]}


@pytest.mark.parametrize(
    ("request_attrs", "obj", "old", "namespace_labels", "hook_extra", "expected"),
    [
        pytest.param(attrs(), {"metadata": {}}, None, {"admission": "off"}, {"namespaceSelector": OPT_OUT}, False,
                     id="a namespace that opted out is skipped"),
        pytest.param(attrs(), {"metadata": {}}, None, {}, {"namespaceSelector": OPT_OUT}, True,
                     id="a namespace without the label is admitted"),
        pytest.param(attrs(resource="namespaces", namespace="x", kind="Namespace"),
                     {"metadata": {"labels": {"admission": "off"}}}, None, None,
                     {"namespaceSelector": OPT_OUT, "rules": [rule(resources=["namespaces"])]}, False,
                     id="a namespace object is judged by its own labels"),
        pytest.param(attrs(group="scheduling.k8s.io", resource="priorityclasses", namespace=""), {"metadata": {}},
                     None, None, {"namespaceSelector": {"matchLabels": {"x": "y"}},
                                  "rules": [rule(apiGroups=["*"], resources=["*"])]}, True,
                     id="the namespace selector never skips other cluster scoped objects"),
        pytest.param(attrs(operation="UPDATE"), {"metadata": {"labels": {}}}, {"metadata": {"labels": {"gpu": "1"}}},
                     {}, {"objectSelector": {"matchLabels": {"gpu": "1"}}, "rules": [rule(operations=["UPDATE"])]},
                     True, id="the object selector matches when the old object matches"),
        pytest.param(attrs(operation="DELETE"), None, {"metadata": {}}, {},
                     {"objectSelector": {"matchLabels": {"gpu": "1"}}, "rules": [rule(operations=["DELETE"])]}, False,
                     id="a missing object never matches an object selector"),
        pytest.param(attrs(group="admissionregistration.k8s.io", resource="validatingwebhookconfigurations",
                           namespace=""), {"metadata": {}}, None, None, {"rules": [rule(apiGroups=["*"],
                                                                                         resources=["*"])]},
                     False, id="webhook configurations are never sent to webhooks"),
    ],
)
def test_webhook_matching(request_attrs: AdmissionAttributes, obj: dict | None, old: dict | None,
                          namespace_labels: dict | None, hook_extra: dict, expected: bool) -> None:
    hook = {"name": "h", "rules": [rule(operations=["*"])], **hook_extra}
    assert webhook_matches(hook, request_attrs, obj, old, namespace_labels) is expected


@pytest.mark.parametrize(
    ("status", "code", "message"),
    [
        pytest.param({"code": 403, "message": "no"}, 403, 'admission webhook "w.x" denied the request: no',
                     id="a message is prefixed with who denied"),
        pytest.param({"code": 200, "message": "no"}, 400, 'admission webhook "w.x" denied the request: no',
                     id="a code below 400 becomes 400"),
        pytest.param({"reason": "Tuesday"}, 400, 'admission webhook "w.x" denied the request: Tuesday',
                     id="the reason stands in for a missing message"),
        pytest.param(None, 400, 'admission webhook "w.x" denied the request without explanation',
                     id="no status at all says without explanation"),
        pytest.param({"code": 12345, "message": "no"}, 500, 'Internal error occurred: admission webhook "w.x" denied '
                     "the request with status code 12345", id="a code that is no HTTP status is an internal error"),
    ],
)
def test_denials_are_worded_as_kube_apiserver_words_them(status: dict | None, code: int, message: str) -> None:
    result = denial_status("w.x", status)
    assert (result["code"], result["message"], result["status"], result["kind"]) == (code, message, "Failure",
                                                                                      "Status")


@pytest.mark.parametrize(
    ("value", "expected"),
    [pytest.param(None, 10, id="default ten seconds"), pytest.param(45, 30, id="capped at thirty"),
     pytest.param(0, 1, id="at least one second"), pytest.param(3, 3, id="as configured")],
)
def test_timeouts(value: int | None, expected: int) -> None:
    assert timeout_seconds({"timeoutSeconds": value}) == expected


def test_review_version_prefers_the_first_known_and_refuses_unknown_ones() -> None:
    assert review_version({"admissionReviewVersions": ["v2", "v1beta1", "v1"]}) == "v1beta1"
    with pytest.raises(CallError, match="does not accept v1 or v1beta1"):
        review_version({"admissionReviewVersions": ["v2"]})


def test_review_request_carries_every_field_the_apiserver_sends() -> None:
    request_attrs = AdmissionAttributes("UPDATE", "", "v1", "Pod", "pods", "status", "ns", "p", ADMIN, True,
                                        {"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions"})
    review = review_request("v1", "uid-1", request_attrs, {"a": 1}, {"a": 0})
    assert review == {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "uid-1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"}, "subResource": "status",
        "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
        "requestResource": {"group": "", "version": "v1", "resource": "pods"}, "requestSubResource": "status",
        "name": "p", "namespace": "ns", "operation": "UPDATE", "userInfo": ADMIN, "object": {"a": 1},
        "oldObject": {"a": 0}, "dryRun": True, "options": {"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions"}}}


def reply(response: object, api_version: str = "admission.k8s.io/v1") -> bytes:
    return json.dumps({"apiVersion": api_version, "kind": "AdmissionReview", "response": response}).encode()


PATCH = base64.b64encode(b'[{"op":"add","path":"/x","value":1}]').decode()


@pytest.mark.parametrize(
    ("body", "mutating", "error"),
    [
        pytest.param(b"<html>", True, "invalid webhook response", id="a body that is not JSON"),
        pytest.param(reply({"uid": "u", "allowed": True}, "admission.k8s.io/v1beta1"), True,
                     "expected webhook response of admission.k8s.io/v1", id="another review version"),
        pytest.param(reply(None), True, "webhook response was absent", id="no response"),
        pytest.param(reply({"uid": "other", "allowed": True}), True, "expected response.uid", id="a wrong uid"),
        pytest.param(reply({"uid": "u", "allowed": True, "patch": PATCH}), True, "set together",
                     id="a patch without a patch type"),
        pytest.param(reply({"uid": "u", "allowed": True, "patch": PATCH, "patchType": "JSONPatch"}), False,
                     "validating webhooks may not return patches", id="a validating webhook that patches"),
        pytest.param(reply({"uid": "u", "allowed": "true"}), True, "response.allowed must be a boolean",
                     id="allowed as a string"),
        pytest.param(reply({"uid": "u", "allowed": False, "status": "nope"}), True, "response.status must be an object",
                     id="a status that is not an object"),
        pytest.param(reply({"uid": "u", "allowed": True, "warnings": ["ok", 3]}), True, "list of strings",
                     id="a warning that is not a string"),
    ],
)
def test_unusable_replies_are_call_errors(body: bytes, mutating: bool, error: str) -> None:
    with pytest.raises(CallError, match=error):
        read_answer(body, "v1", "u", mutating)


def test_an_allowed_reply_yields_its_patch_and_warnings() -> None:
    answer = read_answer(reply({"uid": "u", "allowed": True, "patch": PATCH, "patchType": "JSONPatch",
                                "warnings": ["careful"]}), "v1", "u", True)
    assert (answer.allowed, answer.patch, answer.warnings) == (True, [{"op": "add", "path": "/x", "value": 1}],
                                                               ["careful"])


def test_a_reply_without_allowed_is_a_denial() -> None:
    assert read_answer(reply({"uid": "u"}), "v1", "u", True).allowed is False


@given(st.text(max_size=40))
def test_patches_that_do_not_decode_are_bad_patches_never_other_errors(text: str) -> None:
    try:
        operations = decode_patch(text)
    except BadPatch:
        return
    assert isinstance(operations, list)


OPS = st.fixed_dictionaries({"op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "nope", 3]),
                             "path": st.sampled_from(["", "/", "/metadata", "/metadata/labels/a", "/spec/0",
                                                      "/x~1y", "nope", 5])},
                            optional={"value": st.none() | st.integers() | st.dictionaries(st.text(max_size=2),
                                                                                           st.integers()),
                                      "from": st.sampled_from(["/metadata", "/spec", "/missing", 7])})


@settings(max_examples=300)
@given(st.lists(OPS, max_size=4))
def test_any_webhook_patch_applies_or_is_a_bad_patch(operations: list) -> None:
    obj = {"metadata": {"name": "p", "labels": {"a": "1"}}, "spec": [1, 2]}
    try:
        patched = apply_patch(obj, operations)
    except BadPatch:
        return
    assert isinstance(patched, dict)
    assert obj == {"metadata": {"name": "p", "labels": {"a": "1"}}, "spec": [1, 2]}
