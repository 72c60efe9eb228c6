"""Pure admission-webhook decisions: which webhooks a request reaches, what review they get, and
what their answers mean, worded as kube-apiserver words them (docs/localcluster-wire.md).
No I/O here; localcluster.apiserver.admission does the calling.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

import jsonpatch

from localcluster.apiserver.cel import CelError, evaluate

NAMESPACES = ("", "v1", "namespaces")
NEVER_ADMITTED = {("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
                  ("admissionregistration.k8s.io", "validatingwebhookconfigurations")}
REVIEW_VERSIONS = ("v1", "v1beta1")
DEFAULT_TIMEOUT, MAX_TIMEOUT = 10, 30


@dataclass(frozen=True)
class AdmissionAttributes:
    """What kube-apiserver knows about a write when it asks the webhooks."""

    operation: str  # CREATE | UPDATE | DELETE | CONNECT
    group: str
    version: str
    kind: str
    resource: str
    subresource: str
    namespace: str
    name: str
    user_info: dict[str, Any]
    dry_run: bool = False
    options: dict[str, Any] | None = None


class AdmissionDenied(Exception):
    """The request is refused; `status` is the metav1.Status the client gets."""

    def __init__(self, status: dict[str, Any]) -> None:
        super().__init__(status.get("message", ""))
        self.status = status


class CallError(Exception):
    """A failure of the call itself (ErrCallingWebhook): subject to failurePolicy."""


@dataclass(frozen=True)
class Answer:
    """A webhook's verified reply: allowed, or the Status it denied with; a JSON Patch if any."""

    allowed: bool
    status: dict[str, Any] | None = None
    patch: list[dict[str, Any]] | None = None
    warnings: list[str] = field(default_factory=list)


def status_error(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
              "message": message, "reason": reason, "code": code}
    if details:
        status["details"] = details
    return status


def internal_error(message: str) -> dict[str, Any]:
    return status_error(500, "InternalError", f"Internal error occurred: {message}",
                        causes=[{"message": message}])


def denial_status(webhook: str, status: dict[str, Any] | None) -> dict[str, Any]:
    """ToStatusErr: code below 400 becomes 400, status Failure, message prefixed with who denied."""
    result = dict(status or {})
    denied_by = f'admission webhook "{webhook}" denied the request'
    if not isinstance(result.get("code"), int) or isinstance(result["code"], bool) or result["code"] < 400:
        result["code"] = 400
    elif result["code"] > 999:  # not an HTTP status: Go's WriteHeader panics, the apiserver answers 500
        return internal_error(f'admission webhook "{webhook}" denied the request with status code {result["code"]}')
    result["status"] = "Failure"
    if result.get("message"):
        result["message"] = f"{denied_by}: {result['message']}"
    elif result.get("reason"):
        result["message"] = f"{denied_by}: {result['reason']}"
    else:
        result["message"] = f"{denied_by} without explanation"
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, **result}


def dry_run_unsupported(webhook: str) -> dict[str, Any]:
    return status_error(400, "BadRequest", f'admission webhook "{webhook}" does not support dry run')


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector; empty or absent selects everything."""
    selector = selector or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for requirement in selector.get("matchExpressions") or []:
        key, op, values = requirement.get("key"), requirement.get("operator"), requirement.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def _resource_matches(patterns: list[str], resource: str, subresource: str) -> bool:
    for pattern in patterns:
        if pattern == "*/*":
            return True
        name, _, sub = pattern.partition("/")
        if (name in ("*", resource)) and (sub == subresource or (sub == "*" and subresource)):
            return True
    return False


def rule_matches(rule: dict[str, Any], attrs: AdmissionAttributes, exact: bool) -> bool:
    """One RuleWithOperations; with matchPolicy Equivalent the version is not required to match."""
    def listed(values: list[str] | None, value: str) -> bool:
        if not values:
            return False
        return "*" in values or value in values

    if not listed(rule.get("operations"), attrs.operation) or not listed(rule.get("apiGroups"), attrs.group):
        return False
    if exact and not listed(rule.get("apiVersions"), attrs.version):
        return False
    if not _resource_matches(rule.get("resources") or [], attrs.resource, attrs.subresource):
        return False
    is_namespace = (attrs.group, attrs.version, attrs.resource) == NAMESPACES
    scope = rule.get("scope") or "*"
    if scope == "Namespaced":
        return not is_namespace and attrs.namespace != ""
    if scope == "Cluster":
        return is_namespace or attrs.namespace == ""
    return True


def webhook_matches(hook: dict[str, Any], attrs: AdmissionAttributes, obj: dict[str, Any] | None,
                    old: dict[str, Any] | None, namespace_labels: dict[str, str] | None) -> bool:
    """Rules, then namespaceSelector, then objectSelector, as the apiserver's matcher does.

    `namespace_labels` are the labels of the request's namespace (None for cluster-scoped
    objects other than Namespaces, which the namespaceSelector never filters).
    """
    if (attrs.group, attrs.resource) in NEVER_ADMITTED:
        return False
    exact = hook.get("matchPolicy") == "Exact"
    if not any(rule_matches(rule, attrs, exact) for rule in hook.get("rules") or []):
        return False
    if (attrs.group, attrs.version, attrs.resource) == NAMESPACES and not attrs.subresource:
        own = (obj or old or {}).get("metadata", {}).get("labels") or {}
        if not selector_matches(hook.get("namespaceSelector"), own):
            return False
    elif namespace_labels is not None and not selector_matches(hook.get("namespaceSelector"), namespace_labels):
        return False
    object_selector = hook.get("objectSelector")
    if object_selector and (object_selector.get("matchLabels") or object_selector.get("matchExpressions")):
        candidates = [o for o in (obj, old) if o is not None]
        return any(selector_matches(object_selector, (o.get("metadata") or {}).get("labels") or {})
                   for o in candidates)
    return True


def timeout_seconds(hook: dict[str, Any]) -> int:
    value = hook.get("timeoutSeconds")
    if not isinstance(value, int):
        return DEFAULT_TIMEOUT
    return max(1, min(MAX_TIMEOUT, value))


def review_version(hook: dict[str, Any]) -> str:
    for version in hook.get("admissionReviewVersions") or []:
        if version in REVIEW_VERSIONS:
            return version
    raise CallError(f"webhook does not accept {' or '.join(REVIEW_VERSIONS)} AdmissionReview")


def sent_version(hook: dict[str, Any], attrs: AdmissionAttributes) -> str:
    """The version a matching webhook is sent. A rule naming the request's version gets it as is;
    with matchPolicy Equivalent a rule naming another version of the resource gets the object in
    that version (kind/resource name it, requestKind/requestResource keep the request's)."""
    rules = hook.get("rules") or []
    if hook.get("matchPolicy") == "Exact" or any(rule_matches(rule, attrs, exact=True) for rule in rules):
        return attrs.version
    for rule in rules:
        if rule_matches(rule, attrs, exact=False):
            return next((v for v in rule.get("apiVersions") or [] if v != "*"), attrs.version)
    return attrs.version


def in_version(obj: dict[str, Any] | None, group: str, version: str) -> dict[str, Any] | None:
    """The object as another version of its resource: the local cluster's versions differ only in
    apiVersion (CRD conversion None), so that is all that changes."""
    if obj is None or "apiVersion" not in obj:
        return obj
    return {**obj, "apiVersion": f"{group}/{version}" if group else version}


def review_request(version: str, uid: str, attrs: AdmissionAttributes, obj: dict[str, Any] | None,
                   old: dict[str, Any] | None, sent: str | None = None) -> dict[str, Any]:
    """The AdmissionReview for one call; `sent` is the resource version the webhook gets (Equivalent)."""
    sent = sent or attrs.version
    request_kind = {"group": attrs.group, "version": attrs.version, "kind": attrs.kind}
    request_resource = {"group": attrs.group, "version": attrs.version, "resource": attrs.resource}
    request: dict[str, Any] = {"uid": uid, "kind": {**request_kind, "version": sent},
                               "resource": {**request_resource, "version": sent}}
    if attrs.subresource:
        request["subResource"] = attrs.subresource
    request.update({"requestKind": request_kind, "requestResource": request_resource})
    if attrs.subresource:
        request["requestSubResource"] = attrs.subresource
    request["name"] = attrs.name
    if attrs.namespace:
        request["namespace"] = attrs.namespace
    request.update({"operation": attrs.operation, "userInfo": attrs.user_info,
                    "object": in_version(obj, attrs.group, sent), "oldObject": in_version(old, attrs.group, sent),
                    "dryRun": attrs.dry_run, "options": attrs.options})
    return {"apiVersion": f"admission.k8s.io/{version}", "kind": "AdmissionReview", "request": request}


def read_answer(body: bytes, version: str, uid: str, mutating: bool) -> Answer:
    """Verify an AdmissionReview reply as VerifyAdmissionResponse does; CallError when it is unusable."""
    try:
        review = json.loads(body)
    except ValueError as err:
        raise CallError(f"received invalid webhook response: {err}") from None
    if not isinstance(review, dict):
        raise CallError("received invalid webhook response: not a JSON object")
    expected = f"admission.k8s.io/{version}"
    if review.get("apiVersion") != expected or review.get("kind") != "AdmissionReview":
        raise CallError(f"expected webhook response of {expected}, Kind=AdmissionReview, "
                        f"got {review.get('apiVersion')}, Kind={review.get('kind')}")
    response = review.get("response")
    if not isinstance(response, dict):
        raise CallError("webhook response was absent")
    _check_types(response)
    if response.get("uid") != uid:
        raise CallError(f"expected response.uid={uid!r}, got {response.get('uid')!r}")
    warnings = list(response.get("warnings") or [])
    patch, patch_type = response.get("patch"), response.get("patchType")
    if not mutating and (patch or patch_type):
        raise CallError("received invalid webhook response: validating webhooks may not return patches")
    if bool(patch) != bool(patch_type):
        raise CallError("received invalid webhook response: patch and patchType must be set together")
    if patch_type and patch_type != "JSONPatch":
        raise CallError(f"received invalid webhook response: unsupported patchType {patch_type!r}")
    if response.get("allowed") is not True:
        status = response.get("status") if isinstance(response.get("status"), dict) else None
        return Answer(False, status=status, warnings=warnings)
    return Answer(True, patch=decode_patch(patch) if patch else None, warnings=warnings)


RESPONSE_TYPES: dict[str, tuple[type, str]] = {
    "uid": (str, "a string"), "allowed": (bool, "a boolean"), "patch": (str, "a base64 string"),
    "patchType": (str, "a string"), "status": (dict, "an object"), "warnings": (list, "a list of strings"),
    "auditAnnotations": (dict, "an object"),
}


def _check_types(response: dict[str, Any]) -> None:
    """Fields of the wrong JSON type fail to decode in the apiserver: an invalid response."""
    for field, (expected, noun) in RESPONSE_TYPES.items():
        value = response.get(field)
        if value is not None and not isinstance(value, expected):
            raise CallError(f"received invalid webhook response: response.{field} must be {noun}")
    if any(not isinstance(w, str) for w in response.get("warnings") or []):
        raise CallError("received invalid webhook response: response.warnings must be a list of strings")


class BadPatch(Exception):
    """A JSON Patch that cannot be decoded or applied: an internal error whatever the failurePolicy."""


def decode_patch(encoded: Any) -> list[dict[str, Any]]:
    try:
        operations = json.loads(base64.b64decode(encoded, validate=True))
    except (binascii.Error, ValueError, TypeError) as err:
        raise BadPatch(f"JSONPatch: cannot decode the webhook's patch: {err}") from None
    if not isinstance(operations, list) or not all(isinstance(op, dict) for op in operations):
        raise BadPatch("JSONPatch: the webhook's patch is not a JSON array of operations")
    return operations


def apply_patch(obj: dict[str, Any], operations: list[dict[str, Any]]) -> dict[str, Any]:
    """A mutating webhook's JSON Patch applied to a copy of `obj`; BadPatch if it cannot apply."""
    try:
        patched = jsonpatch.JsonPatch(operations).apply(obj)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError, ValueError,
            AttributeError, IndexError) as err:
        raise BadPatch(f"JSONPatch: {err or type(err).__name__}") from None
    if not isinstance(patched, dict):
        raise BadPatch("JSONPatch: the patch replaced the object with something that is not an object")
    return patched


def conditions_hold(conditions: list[Any], request: dict[str, Any]) -> bool:
    """matchConditions: any false skips the webhook, all true call it; an error with none false
    raises CallError (so failurePolicy decides). `request` is the review's request."""
    variables = {"object": request.get("object"), "oldObject": request.get("oldObject"), "request": request}
    error: str | None = None
    for condition in conditions:
        name = condition.get("name", "") if isinstance(condition, dict) else ""
        try:
            expression = condition.get("expression") if isinstance(condition, dict) else None
            if not isinstance(expression, str):
                raise CelError("no expression")
            result = evaluate(expression, variables)
            if not isinstance(result, bool):
                raise CelError(f"expected a bool, got {type(result).__name__}")
        except CelError as err:
            error = error or f"expression {name!r}: {err}"
            continue
        if result is False:
            return False
    if error is not None:
        raise CallError(f"failed to evaluate match conditions: {error}")
    return True
