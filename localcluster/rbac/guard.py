"""Whether a user may write a Role, ClusterRole or binding: the escalation check of
kubernetes/kubernetes pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased.

A role may be written by whoever holds every permission it grants, or may `escalate` it; a
binding by whoever holds every permission of the role it names, or may `bind` that role;
system:masters always. Writes that change none of that (labels kept, only owner references or
finalizers touched) are not checked again, so garbage collection can finish its work.
"""

from __future__ import annotations

from typing import Any

from localcluster.rbac.authorizer import (GROUP, MASTERS, Binding, Identity, Policy, ResolutionError, Role,
                                          authorize, grants)
from localcluster.rbac.escalation import escalation_message, missing_rights
from localcluster.rbac.rules import Attributes, PolicyRule

FULL_AUTHORITY = (PolicyRule(("*",), ("*",), ("*",)), PolicyRule(("*",), non_resource_urls=("*",)))
_GRANTING_FIELDS = ("rules", "aggregationRule", "roleRef", "subjects")


def _unchanged(obj: dict[str, Any], old: dict[str, Any] | None) -> bool:
    if old is None:
        return False
    meta, old_meta = obj.get("metadata") or {}, old.get("metadata") or {}
    return (all(obj.get(f) == old.get(f) for f in _GRANTING_FIELDS)
            and meta.get("labels") == old_meta.get("labels"))


def write_denial(user: Identity, obj: dict[str, Any], old: dict[str, Any] | None, policy: Policy) -> str | None:
    """None when the write may go ahead; otherwise the reason it is forbidden."""
    if MASTERS in user.groups or _unchanged(obj, old):
        return None
    kind = obj.get("kind")
    meta = obj.get("metadata") or {}
    namespace = str(meta.get("namespace", "") or "")
    if kind in ("Role", "ClusterRole"):
        resource = "roles" if kind == "Role" else "clusterroles"
        escalate = Attributes("escalate", api_group=GROUP, resource=resource, namespace=namespace,
                              name=str(meta.get("name", "")))
        if authorize(user, escalate, policy).allowed:
            return None
        role = Role.from_object(obj)
        return _covered(user, namespace, role.rules, policy) or (
            _aggregation_denial(user, policy) if kind == "ClusterRole" and role.aggregation is not None else None)
    binding = Binding.from_object(obj)
    ref = binding.role_ref
    bind = Attributes("bind", api_group=GROUP, resource="roles" if ref.kind == "Role" else "clusterroles",
                      namespace=namespace, name=ref.name)
    if authorize(user, bind, policy).allowed:
        return None
    try:
        rules = policy.role_rules(ref, namespace)
    except ResolutionError as exc:
        return str(exc)
    return _covered(user, namespace, rules, policy)


def _covered(user: Identity, namespace: str, wanted: tuple[PolicyRule, ...], policy: Policy) -> str | None:
    found, errors = grants(user, namespace, policy)
    missing = missing_rights([g.rule for g in found], wanted)
    return escalation_message(user.username, user.groups, missing, errors) if missing else None


def _aggregation_denial(user: Identity, policy: Policy) -> str | None:
    found, _ = grants(user, "", policy)
    if missing_rights([g.rule for g in found], FULL_AUTHORITY):
        return "must have cluster-admin privileges to use the aggregationRule"
    return None
