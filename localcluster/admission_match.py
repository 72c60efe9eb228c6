"""Pure admission-webhook decisions: which webhooks a request reaches, what review they get, and
what their answers mean, worded as kube-apiserver words them (research/k8s-contract.md section A).
No I/O here; localcluster.admission does the calling.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

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
    if not isinstance(result.get("code"), int) or result["code"] < 400:
        result["code"] = 400
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
        return bool(values) and ("*" in values or value in values)

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


def review_request(version: str, uid: str, attrs: AdmissionAttributes, obj: dict[str, Any] | None,
                   old: dict[str, Any] | None) -> dict[str, Any]:
    kind = {"group": attrs.group, "version": attrs.version, "kind": attrs.kind}
    resource = {"group": attrs.group, "version": attrs.version, "resource": attrs.resource}
    request: dict[str, Any] = {"uid": uid, "kind": kind, "resource": resource}
    if attrs.subresource:
        request["subResource"] = attrs.subresource
    request.update({"requestKind": kind, "requestResource": resource})
    if attrs.subresource:
        request["requestSubResource"] = attrs.subresource
    request["name"] = attrs.name
    if attrs.namespace:
        request["namespace"] = attrs.namespace
    request.update({"operation": attrs.operation, "userInfo": attrs.user_info, "object": obj,
                    "oldObject": old, "dryRun": attrs.dry_run, "options": attrs.options})
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
    if response.get("uid") != uid:
        raise CallError(f"expected response.uid={uid!r}, got {response.get('uid')!r}")
    warnings = [w for w in response.get("warnings") or [] if isinstance(w, str)]
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
