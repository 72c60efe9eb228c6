"""Who is policed, and as what: exempt, unmanaged, top-level, wrapped, or made by a controller.

Judged by who sends the request, never by what the object says about itself."""

from __future__ import annotations

from typing import Any, Literal, Mapping

from batchgate.api import objects
from batchgate.kinds.appwrapper import owned_by_appwrapper
from batchgate.policy import Policy
from webhook.rules.review import AdmissionRequest

Scope = Literal["exempt", "unmanaged", "top-level", "wrapped", "other"]


def is_exempt(request: AdmissionRequest, policy: Policy) -> bool:
    exempt = policy.exempt
    return (
        request.namespace in exempt.namespaces
        or request.user.username in exempt.users
        or any(group in exempt.groups for group in request.user.groups)
    )


def namespace_is_managed(
    namespace: str, policy: Policy, namespace_labels: Mapping[str, Mapping[str, str]] | None
) -> bool:
    """Cluster-scoped objects (no namespace) are never managed; unknown namespace labels (None,
    or a namespace not in the map) count as matching."""
    if not namespace:
        return False
    if namespace_labels is None or namespace not in namespace_labels:
        return True
    return policy.managed_namespaces.selector.matches(namespace_labels[namespace])


def classify(
    request: AdmissionRequest,
    policy: Policy,
    namespace_labels: Mapping[str, Mapping[str, str]] | None,
    obj: Any,
) -> Scope:
    if is_exempt(request, policy):
        return "exempt"
    if not namespace_is_managed(request.namespace, policy, namespace_labels):
        return "unmanaged"
    return made_by(request, policy, obj)


def made_by(request: AdmissionRequest, policy: Policy, obj: Any) -> Scope:
    """Top-level, unless the sender is a configured controller and the object names an owner.

    An ownerReference is a claim anyone can write (Kubernetes checks neither that the owner
    exists nor that it made the object), so it only counts when the request comes from a
    controller: the product's own for AppWrapper components, the configured workload
    controllers (Job, ReplicaSet, ... operators) for what they make.
    """
    if objects.controller_owner(obj) is None:
        return "top-level"
    sender = request.user.username
    if sender in policy.controllers.app_wrapper:
        return "wrapped" if owned_by_appwrapper(obj) else "other"
    if sender in policy.controllers.workloads:
        return "other"
    return "top-level"
