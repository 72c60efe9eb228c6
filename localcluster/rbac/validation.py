"""What kube-apiserver validates on Roles and bindings (pkg/apis/rbac/validation/validation.go).

Verbs and resource names are not checked: a rule naming an unknown verb is stored and simply
never matches a request.
"""

from __future__ import annotations

from typing import Any

from localcluster.errors import FieldError

GROUP = "rbac.authorization.k8s.io"


def rule_errors(rules: Any, namespaced: bool, has_aggregation: bool = False) -> list[FieldError]:
    if rules is None:
        return []
    if not isinstance(rules, list):
        return [FieldError("Invalid", "rules", "must be a list", rules)]
    errors: list[FieldError] = []
    for i, rule in enumerate(rules):
        path = f"rules[{i}]"
        if not isinstance(rule, dict):
            errors.append(FieldError("Invalid", path, "must be an object", rule))
            continue
        if not rule.get("verbs"):
            errors.append(FieldError("Required", f"{path}.verbs", "verbs must contain at least one value"))
        urls = rule.get("nonResourceURLs")
        if urls:
            if namespaced:
                errors.append(FieldError("Invalid", f"{path}.nonResourceURLs", "namespaced rules cannot apply to "
                                         "non-resource URLs", urls))
            if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
                errors.append(FieldError("Invalid", f"{path}.nonResourceURLs", "rules cannot apply to both regular "
                                         "resources and non-resource URLs", urls))
            continue
        if not rule.get("apiGroups"):
            errors.append(FieldError("Required", f"{path}.apiGroups", "resource rules must supply at least one api "
                                     "group"))
        if not rule.get("resources"):
            errors.append(FieldError("Required", f"{path}.resources", "resource rules must supply at least one "
                                     "resource"))
    return errors


def role_errors(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    return rule_errors(obj.get("rules"), namespaced=obj.get("kind") == "Role")


def binding_errors(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    errors: list[FieldError] = []
    ref = obj.get("roleRef")
    cluster = obj.get("kind") == "ClusterRoleBinding"
    if not isinstance(ref, dict):
        errors.append(FieldError("Required", "roleRef", ""))
    else:
        if ref.get("apiGroup") != GROUP:
            errors.append(FieldError("NotSupported", "roleRef.apiGroup", value=ref.get("apiGroup", ""),
                                     supported=(GROUP,)))
        kinds = ("ClusterRole",) if cluster else ("Role", "ClusterRole")
        if ref.get("kind") not in kinds:
            errors.append(FieldError("NotSupported", "roleRef.kind", value=ref.get("kind", ""), supported=kinds))
        if not ref.get("name"):
            errors.append(FieldError("Required", "roleRef.name", ""))
        if old is not None and ref != old.get("roleRef"):
            errors.append(FieldError("Invalid", "roleRef", "cannot change roleRef", ref))
    subjects = obj.get("subjects")
    for i, subject in enumerate(subjects if isinstance(subjects, list) else []):
        path = f"subjects[{i}]"
        if not isinstance(subject, dict):
            errors.append(FieldError("Invalid", path, "must be an object", subject))
            continue
        if not subject.get("name"):
            errors.append(FieldError("Required", f"{path}.name", ""))
        kind = subject.get("kind")
        if kind == "ServiceAccount":
            if subject.get("apiGroup"):
                errors.append(FieldError("NotSupported", f"{path}.apiGroup", value=subject["apiGroup"],
                                         supported=("",)))
            if cluster and not subject.get("namespace"):
                errors.append(FieldError("Required", f"{path}.namespace", ""))
        elif kind in ("User", "Group"):
            if subject.get("apiGroup") != GROUP:
                errors.append(FieldError("NotSupported", f"{path}.apiGroup", value=subject.get("apiGroup", ""),
                                         supported=(GROUP,)))
        else:
            errors.append(FieldError("NotSupported", f"{path}.kind", value=kind or "",
                                     supported=("ServiceAccount", "User", "Group")))
    return errors
