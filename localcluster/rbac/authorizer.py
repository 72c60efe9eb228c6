"""Which rules apply to a user, and the authorizer's decision with its reason.

Follows kubernetes/kubernetes pkg/registry/rbac/validation/rule.go (DefaultRuleResolver:
VisitRulesFor, GetRoleReferenceRules, appliesToUser) and plugin/pkg/auth/authorizer/rbac/rbac.go
(Authorize, the "allowed by" reason, "RBAC: ..." resolution errors). RBAC never denies: a
request no rule allows gets no opinion, which the API server answers with 403.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from localcluster.rbac.rules import Attributes, PolicyRule, rule_allows

GROUP = "rbac.authorization.k8s.io"
MASTERS = "system:masters"


class Identity(Protocol):
    @property
    def username(self) -> str: ...

    @property
    def groups(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class RoleRef:
    kind: str
    name: str
    api_group: str = GROUP


@dataclass(frozen=True)
class Subject:
    kind: str
    name: str
    namespace: str = ""

    def applies_to(self, user: Identity, binding_namespace: str) -> bool:
        """User by name, Group by membership, ServiceAccount by its `system:serviceaccount:NS:NAME` username."""
        if self.kind == "User":
            return user.username == self.name
        if self.kind == "Group":
            return self.name in user.groups
        if self.kind == "ServiceAccount":
            namespace = self.namespace or binding_namespace
            return bool(namespace) and user.username == f"system:serviceaccount:{namespace}:{self.name}"
        return False

    def describe(self, binding_namespace: str) -> str:
        if self.kind == "ServiceAccount":
            return f'{self.kind} "{self.name}/{self.namespace or binding_namespace}"'
        return f'{self.kind} "{self.name}"'


@dataclass(frozen=True)
class Role:
    """A Role (namespace set) or ClusterRole (namespace empty)."""

    name: str
    namespace: str = ""
    rules: tuple[PolicyRule, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)
    # ClusterRole only: each selector's matchLabels (matchExpressions are kept as given).
    aggregation: tuple[Mapping[str, Any], ...] | None = None

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> Role:
        meta = obj.get("metadata") or {}
        rules = obj.get("rules")
        aggregation = None
        rule = obj.get("aggregationRule")
        if isinstance(rule, dict):
            selectors = rule.get("clusterRoleSelectors")
            aggregation = tuple(s for s in selectors if isinstance(s, dict)) if isinstance(selectors, list) else ()
        labels = found if isinstance(found := meta.get("labels"), dict) else {}
        return cls(str(meta.get("name", "")), str(meta.get("namespace", "") or ""),
                   tuple(PolicyRule.from_dict(r) for r in rules) if isinstance(rules, list) else (),
                   labels, aggregation)


@dataclass(frozen=True)
class Binding:
    """A RoleBinding (namespace set) or ClusterRoleBinding (namespace empty)."""

    name: str
    namespace: str
    role_ref: RoleRef
    subjects: tuple[Subject, ...]

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> Binding:
        meta = obj.get("metadata") or {}
        ref = found if isinstance(found := obj.get("roleRef"), dict) else {}
        subjects = listed if isinstance(listed := obj.get("subjects"), list) else []
        return cls(str(meta.get("name", "")), str(meta.get("namespace", "") or ""),
                   RoleRef(str(ref.get("kind", "")), str(ref.get("name", "")), str(ref.get("apiGroup", ""))),
                   tuple(Subject(str(s.get("kind", "")), str(s.get("name", "")), str(s.get("namespace", "") or ""))
                         for s in subjects if isinstance(s, dict)))

    def describe(self, subject: Subject) -> str:
        if self.namespace:
            return (f'RoleBinding "{self.name}/{self.namespace}" of {self.role_ref.kind} "{self.role_ref.name}" '
                    f"to {subject.describe(self.namespace)}")
        return (f'ClusterRoleBinding "{self.name}" of {self.role_ref.kind} "{self.role_ref.name}" '
                f"to {subject.describe('')}")


@dataclass(frozen=True)
class Policy:
    """A snapshot of every Role, ClusterRole and binding."""

    roles: Mapping[tuple[str, str], Role] = field(default_factory=dict)  # (namespace, name)
    cluster_roles: Mapping[str, Role] = field(default_factory=dict)
    cluster_role_bindings: tuple[Binding, ...] = ()
    role_bindings: Mapping[str, tuple[Binding, ...]] = field(default_factory=dict)  # namespace -> bindings

    def role_rules(self, ref: RoleRef, binding_namespace: str) -> tuple[PolicyRule, ...]:
        """The rules a roleRef points at; a missing role raises `ResolutionError`."""
        if ref.kind == "Role":
            role = self.roles.get((binding_namespace, ref.name))
            if role is None:
                raise ResolutionError(f'role.rbac.authorization.k8s.io "{ref.name}" not found')
            return role.rules
        if ref.kind == "ClusterRole":
            cluster_role = self.cluster_roles.get(ref.name)
            if cluster_role is None:
                raise ResolutionError(f'clusterrole.rbac.authorization.k8s.io "{ref.name}" not found')
            return cluster_role.rules
        raise ResolutionError(f'unsupported role reference kind: "{ref.kind}"')


class ResolutionError(Exception):
    """A binding whose role cannot be read: it grants nothing, and the reason says so."""


@dataclass(frozen=True)
class Grant:
    """One rule and the binding (described) that gives it to the user."""

    rule: PolicyRule
    source: str


def _bindings_for(user: Identity, namespace: str, policy: Policy) -> Iterator[tuple[Binding, Subject]]:
    for binding in policy.cluster_role_bindings:
        subject = next((s for s in binding.subjects if s.applies_to(user, "")), None)
        if subject is not None:
            yield binding, subject
    if namespace:
        for binding in policy.role_bindings.get(namespace, ()):
            subject = next((s for s in binding.subjects if s.applies_to(user, namespace)), None)
            if subject is not None:
                yield binding, subject


def grants(user: Identity, namespace: str, policy: Policy) -> tuple[list[Grant], list[str]]:
    """Every rule the user holds in `namespace` (cluster-wide ones too), and resolution errors."""
    found: list[Grant] = []
    errors: list[str] = []
    for binding, subject in _bindings_for(user, namespace, policy):
        try:
            rules = policy.role_rules(binding.role_ref, binding.namespace)
        except ResolutionError as exc:
            errors.append(str(exc))
            continue
        source = binding.describe(subject)
        found.extend(Grant(rule, source) for rule in rules)
    return found, errors


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str


def authorize(user: Identity, attrs: Attributes, policy: Policy) -> Decision:
    """Allowed (with the binding that allows it) or no opinion (with any resolution errors)."""
    errors: list[str] = []
    for binding, subject in _bindings_for(user, attrs.namespace, policy):
        try:
            rules = policy.role_rules(binding.role_ref, binding.namespace)
        except ResolutionError as exc:
            errors.append(str(exc))
            continue
        if any(rule_allows(attrs, rule) for rule in rules):
            return Decision(True, f"RBAC: allowed by {binding.describe(subject)}")
    return Decision(False, f"RBAC: {aggregate(errors)}" if errors else "")


def aggregate(errors: list[str]) -> str:
    """utilerrors.NewAggregate's wording: one error as is, several in brackets."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def forbidden_message(username: str, attrs: Attributes) -> str:
    """responsewriters.forbiddenMessage: the part after `... is forbidden: `."""
    if not attrs.resource_request:
        return f'User "{username}" cannot {attrs.verb} path "{attrs.path}"'
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    return f'User "{username}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.api_group}" {where}'
