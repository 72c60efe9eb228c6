"""What the gateway rejects (docs/rules.md, "Rejections"), checked on the object as mutated.

Rules run in a fixed order and the first that fails decides; within a rule every problem is
reported (`; `-joined), each with its field path, so one round trip shows the user all of it.
"""

from __future__ import annotations

from batchgate import keys
from batchgate.api import objects
from batchgate.api.appwrapper import parse_appwrapper
from batchgate.api.errors import FieldError
from batchgate.policy import Policy
from batchgate.kinds import APPWRAPPER, QUEUED_BY_QUALIFIED
from webhook.rules import annotation_rules, appwrapper_rules
from webhook.rules.cluster_queue import cluster_queue_errors
from webhook.rules.identity import identity_changes, identity_labels
from webhook.rules.policy_configmap import check_policy_configmap, is_policy_configmap
from webhook.rules.queue_rules import queue_escape
from webhook.rules.ray_rules import RAY_KINDS, ray_shape_errors
from webhook.rules.review import AdmissionRequest, Verdict
from webhook.rules.scope import Scope


def allow(reason: str = "Allowed") -> Verdict:
    return Verdict(allowed=True, code=200, reason=reason)


def deny(reason: str, errors: list[FieldError] | str, code: int = 403) -> Verdict:
    detail = errors if isinstance(errors, str) else "; ".join(str(e) for e in errors)
    return Verdict(allowed=False, code=code, reason=reason, message=f"{reason}: {detail}")


def check_policy_edit(request: AdmissionRequest, policy_configmap: tuple[str, str]) -> Verdict | None:
    """Runs before exemption: the policy namespace is exempt, but its policy is not."""
    if request.operation not in ("CREATE", "UPDATE"):
        return None
    if not is_policy_configmap(request.kind.qualified, request.namespace, request.object, policy_configmap):
        return None
    problem = check_policy_configmap(request.object)
    return deny("InvalidPolicy", problem) if problem else None


def check_cluster_queue(request: AdmissionRequest) -> Verdict | None:
    """Runs before exemption: Kueue checks every ClusterQueue, an admin's too."""
    errors = cluster_queue_errors(request.kind.qualified, request.object)
    return deny("InvalidClusterQueue", errors) if errors else None


def check_policed(request: AdmissionRequest, policy: Policy, scope: Scope) -> Verdict:
    """The rules for an object in a managed namespace from a user who is not exempt.

    Objects a configured controller made ("other") are checked only for what no one may do:
    change the identity labels of a workload. On CREATE they carry what their controller copied
    from their owner (KubeRay copies a RayJob's labels, the submitter's identity among them, to
    the RayCluster it makes), which is not the controller's own identity.
    """
    kind = request.kind.qualified
    top_level = scope == "top-level"
    if scope == "other":
        updating_a_workload = kind in QUEUED_BY_QUALIFIED and request.operation == "UPDATE"
        return (_check_identity(request, policy) if updating_a_workload else None) or allow()
    if request.operation == "CREATE":
        allowed = policy.allowed_kinds.top_level if top_level else policy.allowed_kinds.wrapped
        if kind not in allowed:
            which = "allowedKinds.topLevel" if top_level else "allowedKinds.wrapped"
            return deny("KindNotAllowed", [FieldError("kind", f"{kind} is not in {which}")])
    if kind in QUEUED_BY_QUALIFIED and (top_level or request.operation == "UPDATE"):
        verdict = _check_identity(request, policy) or (
            (_check_queue(request, policy) or _check_queue_escape(request, policy)) if top_level else None)
        if verdict:
            return verdict
    if request.operation == "CREATE" and kind in RAY_KINDS:
        ray_errors = ray_shape_errors(kind, request.object)
        if ray_errors:
            return deny("InvalidRayCluster", ray_errors)
    if kind == APPWRAPPER.qualified:
        return _check_appwrapper(request, policy)
    return allow()


def _check_identity(request: AdmissionRequest, policy: Policy) -> Verdict | None:
    if not policy.identity.enabled:
        return None
    labels = objects.labels(request.object)
    if request.operation == "CREATE":  # only top-level workloads: wrapped ones are stamped by no one
        wanted = identity_labels(request.user)
        wrong = [k for k, v in wanted.items() if labels.get(k) != v]
        detail = "must be {value!r}, the submitter's identity"
        errors = [FieldError(f"metadata.labels[{k}]", detail.format(value=wanted[k])) for k in wrong]
    else:
        changed = identity_changes(objects.labels(request.old_object), labels)
        errors = [FieldError(f"metadata.labels[{k}]", "identity labels cannot be changed") for k in changed]
    return deny("IdentityForged", errors) if errors else None


def _check_queue(request: AdmissionRequest, policy: Policy) -> Verdict | None:
    if request.operation != "CREATE" or request.kind.qualified not in policy.queues.require_queue_for:
        return None
    if objects.labels(request.object).get(keys.QUEUE_NAME_LABEL):
        return None
    return deny(
        "QueueRequired",
        [FieldError(f"metadata.labels[{keys.QUEUE_NAME_LABEL}]", f"{request.kind.kind} needs a LocalQueue label")],
    )


def _check_queue_escape(request: AdmissionRequest, policy: Policy) -> Verdict | None:
    escape = queue_escape(request, policy)
    return deny(escape[0], [escape[1]]) if escape else None


def _check_appwrapper(request: AdmissionRequest, policy: Policy) -> Verdict:
    if request.operation == "CREATE":
        errors = appwrapper_rules.validate_create(request.object, request.namespace, policy)
        if errors:
            return deny("InvalidAppWrapper", errors)
    else:
        try:
            parse_appwrapper(request.object)
        except FieldError as exc:
            return deny("InvalidAppWrapper", [exc])
        errors = appwrapper_rules.validate_update(request.old_object, request.object)
        if errors:
            return deny("ImmutableField", errors)
    problems = annotation_rules.check_annotations(objects.annotations_of(request.object))
    return deny("InvalidAnnotation", problems) if problems else allow()


