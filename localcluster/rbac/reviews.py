"""Access reviews: what a SubjectAccessReview asks, whether it is well formed, and the answers.

Follows kubernetes/kubernetes pkg/apis/authorization/validation/validation.go (the spec rules and
their messages) and pkg/registry/authorization/*/rest.go (how status is filled).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from localcluster.errors import FieldError
from localcluster.rbac.authorizer import Decision, Grant
from localcluster.rbac.rules import Attributes


def spec_errors(kind: str, spec: Any, namespace: str = "") -> list[FieldError]:
    """Exactly one of resource or non-resource attributes; a subject for SubjectAccessReviews."""
    if not isinstance(spec, dict):
        return [FieldError("Required", "spec", "")]
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    errors = []
    if resource is not None and non_resource is not None:
        errors.append(FieldError("Invalid", "spec.nonResourceAttributes", "cannot be specified in combination "
                                 "with resourceAttributes", non_resource))
    if resource is None and non_resource is None:
        errors.append(FieldError("Invalid", "spec.resourceAttributes", "exactly one of nonResourceAttributes or "
                                 "resourceAttributes must be specified", None))
    if resource is not None and not isinstance(resource, dict):
        errors.append(FieldError("Invalid", "spec.resourceAttributes", "must be an object", resource))
    if non_resource is not None and not isinstance(non_resource, dict):
        errors.append(FieldError("Invalid", "spec.nonResourceAttributes", "must be an object", non_resource))
    if kind in ("SubjectAccessReview", "LocalSubjectAccessReview"):
        if not spec.get("user") and not spec.get("groups"):
            errors.append(FieldError("Invalid", "spec.user", "at least one of user or group must be specified",
                                     spec.get("user", "")))
    if kind == "LocalSubjectAccessReview" and isinstance(resource, dict) and resource.get("namespace") != namespace:
        errors.append(FieldError("Invalid", "spec.resourceAttributes.namespace", "must match metadata.namespace",
                                 resource.get("namespace", "")))
    return errors


def spec_attributes(spec: Mapping[str, Any]) -> Attributes:
    resource = spec.get("resourceAttributes")
    if isinstance(resource, dict):
        return Attributes(verb=str(resource.get("verb", "")), api_group=str(resource.get("group", "")),
                          resource=str(resource.get("resource", "")), subresource=str(resource.get("subresource", "")),
                          namespace=str(resource.get("namespace", "")), name=str(resource.get("name", "")))
    non_resource = spec.get("nonResourceAttributes") or {}
    return Attributes(verb=str(non_resource.get("verb", "")), resource_request=False,
                      path=str(non_resource.get("path", "")))


def access_status(decision: Decision) -> dict[str, Any]:
    status: dict[str, Any] = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return status


def rules_status(found: list[Grant], errors: list[str]) -> dict[str, Any]:
    """SelfSubjectRulesReview status: every rule held, incomplete when a binding could not be read."""
    resource_rules, non_resource_rules = [], []
    for grant in found:
        rule = grant.rule
        if rule.resources:
            entry = {"verbs": list(rule.verbs), "apiGroups": list(rule.api_groups), "resources": list(rule.resources)}
            if rule.resource_names:
                entry["resourceNames"] = list(rule.resource_names)
            resource_rules.append(entry)
        if rule.non_resource_urls:
            non_resource_rules.append({"verbs": list(rule.verbs), "nonResourceURLs": list(rule.non_resource_urls)})
    status: dict[str, Any] = {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules,
                              "incomplete": bool(errors)}
    if errors:
        status["evaluationError"] = "; ".join(errors)
    return status
