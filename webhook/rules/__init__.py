"""Pure admission rules: what the gateway changes (`mutate`) and what it rejects (`validate`).

No flask, no kubernetes client, no clock: a rule is a function of the request, the policy and
what the server knows about namespaces. Neither function raises on any input: malformed
requests get a `MalformedRequest` denial (400).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from batchgate.api import objects
from batchgate.api.errors import FieldError, type_name
from batchgate.api.kueue_fields import string_map
from batchgate.api.wire import nesting_depth
from batchgate.policy import DEFAULT_POLICY_CONFIGMAP, Policy
from webhook.rules.mutation import MAX_NESTING, run_steps
from webhook.rules.review import AdmissionRequest, Mutation, Verdict
from webhook.rules.scope import classify
from webhook.rules.validation import allow, check_cluster_queue, check_policed, check_policy_edit, deny

__all__ = ["mutate", "validate", "malformed"]

NamespaceLabels = Mapping[str, Mapping[str, str]]


def mutate(request: AdmissionRequest, policy: Policy, namespace_labels: NamespaceLabels | None = None) -> Mutation:
    """The mutations of docs/rules.md on CREATE; denies only malformed requests."""
    problem = malformed(request)
    if problem:
        return Mutation(denial=problem, reason=problem.reason)
    if request.operation != "CREATE":
        return Mutation(reason="OperationNotMutated")
    if request.sub_resource:
        return Mutation(reason="SubresourceNotPoliced")
    scope = classify(request, policy, namespace_labels, request.object)
    if scope == "exempt":
        return Mutation(reason="Exempt")
    if scope == "unmanaged":
        return Mutation(reason="NamespaceNotManaged")
    outcome = run_steps(request, policy, scope)
    if outcome.problem:
        denial = deny("InvalidFramework", [outcome.problem])
        return Mutation(warnings=outcome.warnings, denial=denial, reason=denial.reason)
    if not outcome.changes or outcome.object == request.object:  # a step may re-report a no-op write
        return Mutation(warnings=outcome.warnings, reason="Unchanged")
    return Mutation(object=outcome.object, changes=outcome.changes, warnings=outcome.warnings, reason="Mutated")


def validate(
    request: AdmissionRequest,
    policy: Policy,
    namespace_labels: NamespaceLabels | None = None,
    policy_configmap: tuple[str, str] = DEFAULT_POLICY_CONFIGMAP,
) -> Verdict:
    """The rejections of docs/rules.md on the object as mutated."""
    problem = malformed(request)
    if problem:
        return problem
    if request.operation not in ("CREATE", "UPDATE"):
        return allow("OperationNotPoliced")
    if request.sub_resource:
        return allow("SubresourceNotPoliced")  # status, scale, binding: the object itself was policed
    verdict = check_policy_edit(request, policy_configmap) or check_cluster_queue(request)
    if verdict:
        return verdict
    scope = classify(request, policy, namespace_labels, request.object)
    if scope == "exempt":
        return allow("Exempt")
    if scope == "unmanaged":
        return allow("NamespaceNotManaged")
    return check_policed(request, policy, scope)


def malformed(request: AdmissionRequest) -> Verdict | None:
    """A denial (400) when the request cannot be reasoned about, else None."""
    if request.operation in ("CREATE", "UPDATE"):
        if not isinstance(request.object, dict):
            return _malformed("object", f"must be a mapping, got {type_name(request.object)}")
        if request.operation == "UPDATE" and not isinstance(request.old_object, dict):
            return _malformed("oldObject", f"must be a mapping on UPDATE, got {type_name(request.old_object)}")
        for field, value in (("object", request.object), ("oldObject", request.old_object)):
            if nesting_depth(value, MAX_NESTING) > MAX_NESTING:
                return _malformed(field, f"is nested more than {MAX_NESTING} levels deep")
        for field, value in (("object", request.object), ("oldObject", request.old_object)):
            problem = _metadata_problem(value)
            if problem:
                return _malformed(f"{field}.{problem[0]}", problem[1])
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


def _metadata_problem(obj: object) -> tuple[str, str] | None:
    """What the API server's ObjectMeta decoding would refuse: (field, problem) or None."""
    if not isinstance(obj, dict) or obj.get("metadata") is None:
        return None
    meta = obj["metadata"]
    if not isinstance(meta, dict):
        return "metadata", f"must be a mapping, got {type_name(meta)}"
    for key in ("labels", "annotations"):
        try:
            string_map(meta.get(key), f"metadata.{key}")
        except FieldError as exc:
            return exc.path, exc.detail
    return None
