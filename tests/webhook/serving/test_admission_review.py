"""The AdmissionReview wire format: what we accept, what we refuse and why, what we send back."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchgate.policy import DEFAULT_POLICY
from tests.builders import sample
from tests.webhook.helpers import ALICE, review_for
from webhook import rules
from webhook.serving.admission_review import (
    MAX_BODY_BYTES,
    MalformedReview,
    Reply,
    decode_json,
    json_patch,
    parse_review,
)


def a_review(**request_overrides: Any) -> dict[str, Any]:
    review = review_for(sample("alice/appwrapper-pytorchjob.yaml"))
    review["request"].update(request_overrides)
    return review


def test_a_review_from_the_api_server_parses_into_the_request_the_rules_take() -> None:
    request = parse_review(a_review(uid="u-1", dryRun=True))
    assert request.uid == "u-1"
    assert request.kind.qualified == "AppWrapper.workload.codeflare.dev"
    assert request.user == ALICE
    assert request.operation == "CREATE" and request.dry_run is True
    assert request.object["metadata"]["name"] == "resnet-ddp"


def test_user_info_fields_may_all_be_absent_as_the_api_marks_them_omitempty() -> None:
    request = parse_review(a_review(userInfo={}))
    assert request.user.username == "" and request.user.groups == ()


@pytest.mark.parametrize(
    ("document", "message", "has_uid"),
    [
        pytest.param([1, 2], "must be a JSON object, not list", False, id="a list is not a review"),
        pytest.param({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {}},
                     "expected apiVersion admission.k8s.io/v1", False, id="the v1beta1 review is refused"),
        pytest.param({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"},
                     "no request object", False, id="a review without a request is refused"),
        pytest.param({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": 7}},
                     "request.uid must be a non-empty string", False, id="a numeric uid cannot be echoed"),
        pytest.param(a_review(operation="PATCH"), "request.operation must be one of", True,
                     id="PATCH is not an admission operation"),
        pytest.param(a_review(kind="AppWrapper"), "request.kind must be an object", True,
                     id="kind as a bare string is refused with the uid echoed"),
        pytest.param(a_review(kind={"group": "", "version": "v1"}), "request.kind.kind must be a non-empty string",
                     True, id="a kind without a kind name is refused"),
        pytest.param(a_review(userInfo={"username": "alice", "groups": "admins"}),
                     "groups must be a list of strings", True, id="groups as a string are refused"),
        pytest.param(a_review(userInfo=["alice"]), "userInfo must be an object", True, id="userInfo as a list"),
        pytest.param(a_review(dryRun="yes"), "dryRun must be a boolean", True, id="dryRun as a string"),
        pytest.param(a_review(namespace=["team-a"]), "namespace must be a string", True, id="namespace as a list"),
    ],
)
def test_malformed_reviews_are_refused_with_a_message_naming_the_field(document: Any, message: str,
                                                                         has_uid: bool) -> None:
    with pytest.raises(MalformedReview) as caught:
        parse_review(document)
    assert message in caught.value.message
    assert (caught.value.uid is not None) is has_uid


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(b"{not json", "not JSON", id="broken JSON"),
        pytest.param(b"\xff\xfe\x00garbage", "not JSON", id="bytes that are not UTF-8"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, "nests too deeply", id="JSON nested 100k deep"),
        pytest.param(b'{"a":' * 5000 + b"1" + b"}" * 5000, "nests too deeply", id="objects nested 5000 deep"),
        pytest.param(b" " * (MAX_BODY_BYTES + 1), "over the limit", id="a body over 3 MiB"),
    ],
)
def test_bodies_that_cannot_be_decoded_are_refused_without_raising_anything_else(body: bytes, message: str) -> None:
    with pytest.raises(MalformedReview, match=message):
        decode_json(body)


def test_an_object_nested_past_the_rules_limit_is_denied_by_them_not_crashed_on() -> None:
    deep: Any = {"leaf": 1}
    for _ in range(rules.MAX_NESTING + 5):
        deep = {"x": deep}
    review = a_review()
    review["request"]["object"]["spec"]["deep"] = deep
    request = parse_review(decode_json(json.dumps(review).encode()))
    denial = rules.mutate(request, DEFAULT_POLICY).denial
    assert denial is not None and denial.code == 400 and "nested more than" in denial.message


def test_a_patch_into_a_missing_labels_map_adds_the_map_and_escapes_slashes() -> None:
    original = {"metadata": {"name": "x"}}
    mutated = {"metadata": {"name": "x", "labels": {"kueue.x-k8s.io/queue-name": "q"}}}
    ops = json_patch(original, mutated)
    assert ops == [{"op": "add", "path": "/metadata/labels", "value": {"kueue.x-k8s.io/queue-name": "q"}}]
    with_labels = {"metadata": {"name": "x", "labels": {}}}
    assert json_patch(with_labels, mutated) == [
        {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1queue-name", "value": "q"}]


def test_no_patch_and_no_patch_type_when_nothing_changed() -> None:
    body = Reply("u", allowed=True, patch=json_patch({"a": 1}, {"a": 1})).to_review()
    assert body == {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                    "response": {"uid": "u", "allowed": True}}


def test_a_reply_carries_a_base64_json_patch_and_warnings() -> None:
    ops = [{"op": "add", "path": "/spec/suspend", "value": True}]
    response = Reply("u", allowed=True, patch=ops, warnings=("w1",)).to_review()["response"]
    assert response["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(response["patch"])) == ops
    assert response["warnings"] == ["w1"]


def test_a_denial_carries_its_code_reason_and_message_and_no_patch() -> None:
    response = Reply("u", allowed=False, code=403, reason="KindNotAllowed", message="kind: x").to_review()["response"]
    assert response == {"uid": "u", "allowed": False,
                        "status": {"code": 403, "message": "kind: x", "reason": "KindNotAllowed"}}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(original=st.dictionaries(st.text(max_size=6), json_values, max_size=5),
       mutated=st.dictionaries(st.text(max_size=6), json_values, max_size=5))
def test_the_patch_always_turns_the_original_into_the_mutated_object(original: dict, mutated: dict) -> None:
    before = copy.deepcopy(original)
    ops = json_patch(original, mutated)
    assert original == before
    assert jsonpatch.apply_patch(original, ops) == mutated
    assert (ops == []) == (original == mutated)


def test_the_patch_sent_is_the_one_whose_size_was_checked() -> None:
    patch = [{"op": "add", "path": "/metadata/labels", "value": {"kueue.x-k8s.io/queue-name": "q-é"}}]
    reply = Reply("uid-1", allowed=True, patch=patch)
    sent = base64.b64decode(reply.to_review()["response"]["patch"])
    assert sent == reply.encoded_patch
    assert json.loads(sent) == patch and sent == json.dumps(patch, separators=(",", ":")).encode()
