"""The RBAC authorizer in the request path: judge each request, guard RBAC writes, answer
access reviews, and keep aggregated ClusterRoles up to date.

Decisions come from the pure `localcluster.rbac` package; this module reads the store, keeps a
policy snapshot (rebuilt after any RBAC write) and turns decisions into 403s and review bodies.
`--authorization AlwaysAllow` skips judging requests; reviews then answer allowed, as
kube-apiserver's AlwaysAllow authorizer does.
"""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from dataclasses import dataclass
from typing import Any

from localcluster import lifecycle
from localcluster.errors import bad_request, forbidden, invalid
from localcluster.rbac import bootstrap
from localcluster.rbac.aggregation import aggregation_updates
from localcluster.rbac.authorizer import MASTERS, Binding, Decision, Policy, Role, authorize, forbidden_message, grants
from localcluster.rbac import owner_references
from localcluster.rbac.guard import write_denial
from localcluster.rbac.reviews import access_status, rules_status, spec_attributes, spec_errors
from localcluster.rbac.rules import Attributes
from localcluster.resources import Registry
from localcluster.store import Event, GroupResource, Store

RBAC = "RBAC"
ALWAYS_ALLOW = "AlwaysAllow"
MODES = (RBAC, ALWAYS_ALLOW)
ROLES: GroupResource = ("rbac.authorization.k8s.io", "roles")
CLUSTER_ROLES: GroupResource = ("rbac.authorization.k8s.io", "clusterroles")
ROLE_BINDINGS: GroupResource = ("rbac.authorization.k8s.io", "rolebindings")
CLUSTER_ROLE_BINDINGS: GroupResource = ("rbac.authorization.k8s.io", "clusterrolebindings")
RBAC_RESOURCES = (ROLES, CLUSTER_ROLES, ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS)
REVIEWS = {("authorization.k8s.io", r) for r in ("subjectaccessreviews", "localsubjectaccessreviews",
                                                 "selfsubjectaccessreviews", "selfsubjectrulesreviews")}


@dataclass(frozen=True)
class Reviewed:
    """A SubjectAccessReview's subject."""

    username: str
    groups: tuple[str, ...]


@dataclass(frozen=True)
class RecordedRequest:
    """One resource request as a least-privilege check reads it: who asked to do what, where,
    and whether the authorizer allowed it (the name it judged is not kept). Compared with the
    roles, it shows what a role grants that no one uses. The real control plane's audit log is
    read into the same records (realcluster/audit.py)."""

    user: str
    verb: str
    api_group: str
    resource: str
    subresource: str
    namespace: str
    allowed: bool


class Authorizer:
    def __init__(self, store: Store, mode: str = RBAC, record: bool = False) -> None:
        if mode not in MODES:
            raise ValueError(f"authorization mode {mode!r}: expected one of {', '.join(MODES)}")
        self.store = store
        self.mode = mode
        self._policy: Policy | None = None
        # How often each distinct request was made, when asked to record (bounded by the distinct
        # users, verbs and resources, not by the number of requests).
        self.recorded: Counter[RecordedRequest] | None = Counter() if record else None
        store.add_listener(self._on_event)

    # the policy snapshot

    def seed(self, registry: Registry, now: _dt.datetime) -> None:
        """The bootstrap roles and bindings, written once at start-up, then aggregated."""
        for gr, objects in ((CLUSTER_ROLES, bootstrap.cluster_roles()),
                            (CLUSTER_ROLE_BINDINGS, bootstrap.cluster_role_bindings())):
            rt = registry.for_storage(*gr)
            assert rt is not None
            for obj in objects:
                if self.store.get(gr, "", obj["metadata"]["name"]) is None:
                    self.store.put(gr, lifecycle.prepare_create(rt, obj, now))

    def policy(self) -> Policy:
        if self._policy is None:
            role_bindings: dict[str, list[Binding]] = {}
            for entry in self.store.list(ROLE_BINDINGS):
                binding = Binding.from_object(entry.obj)
                role_bindings.setdefault(binding.namespace, []).append(binding)
            self._policy = Policy(
                roles={(r.namespace, r.name): r for r in (Role.from_object(e.obj) for e in self.store.list(ROLES))},
                cluster_roles={e.obj["metadata"]["name"]: Role.from_object(e.obj)
                               for e in self.store.list(CLUSTER_ROLES)},
                cluster_role_bindings=tuple(Binding.from_object(e.obj) for e in self.store.list(CLUSTER_ROLE_BINDINGS)),
                role_bindings={ns: tuple(bs) for ns, bs in role_bindings.items()})
        return self._policy

    def _on_event(self, gr: GroupResource, event: Event) -> None:
        if gr not in RBAC_RESOURCES:
            return
        self._policy = None
        if gr == CLUSTER_ROLES:
            self._aggregate()

    def _aggregate(self) -> None:
        """The clusterrole-aggregation controller, run synchronously after each ClusterRole write."""
        for name, rules in aggregation_updates(self.policy().cluster_roles).items():
            entry = self.store.get(CLUSTER_ROLES, "", name)
            if entry is None:
                continue
            updated = entry.copy()
            updated["rules"] = [r.to_dict() for r in rules]
            self.store.put(CLUSTER_ROLES, updated)

    # decisions

    def authorize(self, user: Any, attrs: Attributes) -> Decision:
        if self.mode == ALWAYS_ALLOW or MASTERS in user.groups:
            return Decision(True, "")
        return authorize(user, attrs, self.policy())

    def _decide(self, user: Any, attrs: Attributes) -> Decision:
        """`authorize`, recorded when asked to."""
        decision = self.authorize(user, attrs)
        if self.recorded is not None and attrs.resource_request:
            self.recorded[RecordedRequest(user.username, attrs.verb, attrs.api_group, attrs.resource,
                                          attrs.subresource, attrs.namespace, decision.allowed)] += 1
        return decision

    def check(self, user: Any, attrs: Attributes) -> None:
        """Raise 403, worded as kube-apiserver's, unless the request is allowed."""
        decision = self._decide(user, attrs)
        if decision.allowed:
            return
        message = forbidden_message(user.username, attrs)
        if decision.reason:
            message = f"{message}: {decision.reason}"
        if not attrs.resource_request:
            raise forbidden(f"forbidden: {message}")
        qualified = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
        prefix = f'{qualified} "{attrs.name}"' if attrs.name else qualified
        raise forbidden(f"{prefix} is forbidden: {message}", attrs.api_group, attrs.resource, attrs.name)

    def check_write(self, user: Any, gr: GroupResource, obj: dict[str, Any] | None,
                    old: dict[str, Any] | None) -> None:
        """Escalation prevention for Roles, ClusterRoles and bindings (create and update)."""
        if self.mode == ALWAYS_ALLOW or gr not in RBAC_RESOURCES or obj is None:
            return
        denial = write_denial(user, obj, old, self.policy())
        if denial is not None:
            qualified = f"{gr[1]}.{gr[0]}"
            name = str(obj["metadata"].get("name", ""))
            raise forbidden(f'{qualified} "{name}" is forbidden: {denial}', gr[0], gr[1], name)

    def check_owner_references(self, user: Any, target: Attributes, obj: dict[str, Any] | None,
                               old: dict[str, Any] | None, resolve: owner_references.Resolve) -> None:
        """OwnerReferencesPermissionEnforcement: setting ownerReferences needs `delete` on the
        object, a new blockOwnerDeletion needs `update` on the owner's finalizers (create, update)."""
        if self.mode == ALWAYS_ALLOW or obj is None or MASTERS in user.groups:
            return
        for attrs, refusal in owner_references.required(target, obj, old, resolve):
            if attrs is not None and self._decide(user, attrs).allowed:
                continue
            detail = f": {forbidden_message(user.username, attrs)}" if attrs is not None else ""
            qualified = f"{target.resource}.{target.api_group}" if target.api_group else target.resource
            raise forbidden(f'{qualified} "{target.name}" is forbidden: {refusal}{detail}', target.api_group,
                            target.resource, target.name)

    # access reviews

    def review(self, gr: GroupResource, user: Any, body: Any, namespace: str) -> dict[str, Any]:
        """The answered review (a SubjectAccessReview, its Local and Self forms, or a SelfSubjectRulesReview)."""
        kind = {"subjectaccessreviews": "SubjectAccessReview", "localsubjectaccessreviews": "LocalSubjectAccessReview",
                "selfsubjectaccessreviews": "SelfSubjectAccessReview",
                "selfsubjectrulesreviews": "SelfSubjectRulesReview"}[gr[1]]
        if not isinstance(body, dict) or body.get("kind") not in (None, kind):
            raise bad_request(f"the object provided is unrecognized (must be of type {kind})")
        spec = body.get("spec")
        meta = {k: v for k, v in (body.get("metadata") or {}).items() if k in ("name", "namespace", "generateName")}
        if namespace:
            meta["namespace"] = namespace
        answer = {"kind": kind, "apiVersion": "authorization.k8s.io/v1", "metadata": meta, "spec": spec}
        if kind == "SelfSubjectRulesReview":
            ns = (spec or {}).get("namespace", "") if isinstance(spec, dict) else ""
            if not ns:
                raise bad_request("no namespace on request")
            if self.mode == ALWAYS_ALLOW:
                answer["status"] = {"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                                    "incomplete": False}
            else:
                answer["status"] = rules_status(*grants(user, ns, self.policy()))
            return answer
        errors = spec_errors(kind, spec, namespace)
        if errors or not isinstance(spec, dict):  # no errors means a dict: the second test is for the types
            raise invalid("authorization.k8s.io", kind, "", errors)
        subject = user
        if kind in ("SubjectAccessReview", "LocalSubjectAccessReview"):
            groups = found if isinstance(found := spec.get("groups"), list) else []
            subject = Reviewed(str(spec.get("user") or ""), tuple(str(g) for g in groups))
        answer["status"] = access_status(self.authorize(subject, spec_attributes(spec)))
        return answer
