"""Pure admission rules: what the gateway changes (`mutate`) and what it rejects (`validate`).

No flask, no kubernetes client, no clock: a rule is a function of the request, the policy and
what the server knows about namespaces. Neither function raises on any input: malformed
requests get a `MalformedRequest` denial (400).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from batchgate.api import objects
from batchgate.api.errors import type_name
from batchgate.policy import DEFAULT_POLICY_CONFIGMAP, Policy
from webhook.rules.frameworks.admission import framework_verdict
from webhook.rules.mutation import run_steps
from webhook.rules.review import AdmissionRequest, Mutation, Verdict
from webhook.rules.scope import classify
from webhook.rules.validation import allow, check_policed, check_policy_edit, deny

__all__ = ["mutate", "validate", "malformed"]

MAX_NESTING = 200
"""Deeper objects are junk: real manifests nest a few dozen levels at most."""

NamespaceLabels = Mapping[str, Mapping[str, str]]


def mutate(request: AdmissionRequest, policy: Policy, namespace_labels: NamespaceLabels | None = None) -> Mutation:
    """DESIGN 6.1 on CREATE; denies only malformed requests."""
    problem = malformed(request)
    if problem:
        return Mutation(denial=problem, reason=problem.reason)
    if request.operation != "CREATE":
        return Mutation(reason="OperationNotMutated")
    scope = classify(request, policy, namespace_labels, request.object)
    if scope == "exempt":
        return Mutation(reason="Exempt")
    if scope == "unmanaged":
        return Mutation(reason="NamespaceNotManaged")
    obj, changes = run_steps(request, policy, scope)
    if not changes:
        return Mutation(reason="Unchanged")
    return Mutation(object=obj, changes=tuple(changes), reason="Mutated")


def validate(
    request: AdmissionRequest,
    policy: Policy,
    namespace_labels: NamespaceLabels | None = None,
    policy_configmap: tuple[str, str] = DEFAULT_POLICY_CONFIGMAP,
) -> Verdict:
    """DESIGN 6.2 on the object as mutated."""
    problem = malformed(request)
    if problem:
        return problem
    if request.operation not in ("CREATE", "UPDATE"):
        return allow("OperationNotPoliced")
    verdict = check_policy_edit(request, policy_configmap)
    if verdict:
        return verdict
    scope = classify(request, policy, namespace_labels, request.object)
    if scope == "exempt":
        return allow("Exempt")
    if scope == "unmanaged":
        return allow("NamespaceNotManaged")
    if scope == "other":
        return framework_verdict(request, policy) or allow()
    return check_policed(request, policy, scope)


def malformed(request: AdmissionRequest) -> Verdict | None:
    """A denial (400) when the request cannot be reasoned about, else None."""
    if request.operation in ("CREATE", "UPDATE"):
        if not isinstance(request.object, dict):
            return _malformed("object", f"must be a mapping, got {type_name(request.object)}")
        if request.operation == "UPDATE" and not isinstance(request.old_object, dict):
            return _malformed("oldObject", f"must be a mapping on UPDATE, got {type_name(request.old_object)}")
        for field, value in (("object", request.object), ("oldObject", request.old_object)):
            if value is not None and nesting_depth(value) > MAX_NESTING:
                return _malformed(field, f"is nested more than {MAX_NESTING} levels deep")
        api_version, kind = objects.api_version_kind(request.object)
        if (api_version, kind) != (request.kind.api_version, request.kind.kind):
            shown = f"{api_version} {kind}".strip() or "nothing"
            return _malformed(
                "object", f"apiVersion/kind {shown!r} do not match the request kind "
                f"{request.kind.api_version} {request.kind.kind}"
            )
    return None


def _malformed(field: str, detail: str) -> Verdict:
    return replace(deny("MalformedRequest", f"{field}: {detail}"), code=400)


def nesting_depth(value: Any) -> int:
    """How deep lists and mappings nest, computed without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_NESTING:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest
