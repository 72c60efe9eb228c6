"""The pure RBAC authorizer against kube-apiserver's semantics.

Cases follow kubernetes/kubernetes: pkg/apis/rbac/v1/evaluation_helpers.go and
plugin/pkg/auth/authorizer/rbac/rbac_test.go (rule matching), pkg/registry/rbac/validation/
rule_test.go (subjects, resolution errors), policy_comparator_test.go (Covers),
pkg/controller/clusterroleaggregation (aggregation), requestinfo_test.go (request attributes).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from localcluster.rbac import bootstrap
from localcluster.rbac.aggregation import aggregation_updates
from localcluster.rbac.authorizer import Binding, Policy, Role, RoleRef, Subject, authorize, forbidden_message
from localcluster.rbac.escalation import breakdown, compact_string, escalation_message, missing_rights, rule_covers
from localcluster.rbac.guard import write_denial
from localcluster.rbac.requests import request_attributes
from localcluster.rbac.rules import Attributes, PolicyRule, rule_allows


@dataclass(frozen=True)
class U:
    username: str
    groups: tuple[str, ...] = ("system:authenticated",)


def R(verbs, groups=("",), resources=(), names=(), urls=()) -> PolicyRule:  # noqa: N802 - reads like a rule
    return PolicyRule(tuple(verbs), tuple(groups) if not urls else (), tuple(resources), tuple(names), tuple(urls))


def res(verb, resource, group="", namespace="team-a", name="", sub="") -> Attributes:
    return Attributes(verb, True, group, resource, sub, namespace, name)


def url(verb, path) -> Attributes:
    return Attributes(verb, resource_request=False, path=path)


@pytest.mark.parametrize(("rule", "attrs", "allowed"), [
    pytest.param(R(["get"], resources=["pods"]), res("get", "pods"), True, id="an exact rule allows its request"),
    pytest.param(R(["get"], resources=["pods"]), res("list", "pods"), False, id="another verb is not allowed"),
    pytest.param(R(["*"], resources=["pods"]), res("deletecollection", "pods"), True, id="the verb star allows every verb"),
    pytest.param(R(["get"], ["apps"], ["pods"]), res("get", "pods"), False, id="the API group must match"),
    pytest.param(R(["get"], ["*"], ["pods"]), res("get", "pods", "x.io"), True, id="the group star matches any group"),
    pytest.param(R(["get"], resources=["*"]), res("get", "pods", sub="log"), True,
                 id="the resource star matches subresources too"),
    pytest.param(R(["get"], resources=["pods"]), res("get", "pods", sub="log"), False,
                 id="a resource does not grant its subresources"),
    pytest.param(R(["get"], resources=["pods/log"]), res("get", "pods", sub="log"), True,
                 id="resource/subresource grants that subresource"),
    pytest.param(R(["update"], ["*"], ["*/status"]), res("update", "jobs", "batch", sub="status"), True,
                 id="star-slash-status grants every status subresource"),
    pytest.param(R(["update"], ["*"], ["*/status"]), res("update", "jobs", "batch"), False,
                 id="star-slash-status does not grant the resource itself"),
    pytest.param(R(["update"], ["*"], ["*/finalizers"]), res("update", "appwrappers", "x", sub="finalizers"), True,
                 id="star-slash-finalizers grants finalizers"),
    pytest.param(R(["get"], resources=["configmaps"], names=["policy"]), res("get", "configmaps", name="policy"), True,
                 id="a named rule allows that name"),
    pytest.param(R(["get"], resources=["configmaps"], names=["policy"]), res("get", "configmaps", name="other"), False,
                 id="a named rule refuses other names"),
    pytest.param(R(["list"], resources=["configmaps"], names=["policy"]), res("list", "configmaps"), False,
                 id="a named rule refuses a list without a name"),
    pytest.param(R(["get"], urls=["/healthz"]), url("get", "/healthz"), True, id="a URL rule allows that path"),
    pytest.param(R(["get"], urls=["/apis/*"]), url("get", "/apis/batch/v1"), True, id="a URL ending in star is a prefix"),
    pytest.param(R(["get"], urls=["/apis/*"]), url("get", "/apis"), False, id="the prefix needs its slash"),
    pytest.param(R(["get"], urls=["*"]), url("get", "/anything"), True, id="the URL star matches every path"),
    pytest.param(R(["get"], urls=["/healthz"]), url("post", "/healthz"), False, id="a URL rule is verb-bound"),
    pytest.param(R(["get"], urls=["*"]), res("get", "pods"), False, id="URL rules grant no resources"),
    pytest.param(R(["*"], ["*"], ["*"]), url("get", "/healthz"), False, id="resource rules grant no URLs"),
    pytest.param(R(["creat"], resources=["pods"]), res("create", "pods"), False, id="an unknown verb grants nothing"),
])
def test_one_rule_against_one_request(rule: PolicyRule, attrs: Attributes, allowed: bool) -> None:
    assert rule_allows(attrs, rule) is allowed


def _policy(*bindings: Binding, roles: dict | None = None, cluster_roles: dict | None = None) -> Policy:
    role_bindings: dict[str, tuple[Binding, ...]] = {}
    for b in bindings:
        if b.namespace:
            role_bindings[b.namespace] = role_bindings.get(b.namespace, ()) + (b,)
    return Policy(roles or {}, cluster_roles or {}, tuple(b for b in bindings if not b.namespace), role_bindings)


TEAM = Role("team", rules=(R(["create", "get"], ["workload.codeflare.dev"], ["appwrappers"]),))
ALICE_IN_A = Binding("alice-team", "team-a", RoleRef("ClusterRole", "team"), (Subject("User", "alice"),))


@pytest.mark.parametrize(("user", "attrs", "policy", "allowed", "reason"), [
    pytest.param(U("alice"), res("create", "appwrappers", "workload.codeflare.dev"),
                 _policy(ALICE_IN_A, cluster_roles={"team": TEAM}), True,
                 'RBAC: allowed by RoleBinding "alice-team/team-a" of ClusterRole "team" to User "alice"',
                 id="a RoleBinding to a ClusterRole grants in its namespace"),
    pytest.param(U("alice"), res("create", "appwrappers", "workload.codeflare.dev", namespace="team-b"),
                 _policy(ALICE_IN_A, cluster_roles={"team": TEAM}), False, "",
                 id="a RoleBinding grants nothing in another namespace"),
    pytest.param(U("alice"), res("create", "appwrappers", "workload.codeflare.dev", namespace=""),
                 _policy(ALICE_IN_A, cluster_roles={"team": TEAM}), False, "",
                 id="a RoleBinding grants nothing at the cluster scope"),
    pytest.param(U("bob"), res("create", "appwrappers", "workload.codeflare.dev"),
                 _policy(ALICE_IN_A, cluster_roles={"team": TEAM}), False, "",
                 id="a binding grants nothing to a user it does not name"),
    pytest.param(U("carol", ("ml", "system:authenticated")), res("get", "appwrappers", "workload.codeflare.dev"),
                 _policy(Binding("ml", "", RoleRef("ClusterRole", "team"), (Subject("Group", "ml"),)),
                         cluster_roles={"team": TEAM}), True,
                 'RBAC: allowed by ClusterRoleBinding "ml" of ClusterRole "team" to Group "ml"',
                 id="a ClusterRoleBinding to a group grants everywhere"),
    pytest.param(U("system:serviceaccount:team-a:runner"), res("get", "appwrappers", "workload.codeflare.dev"),
                 _policy(Binding("sa", "team-a", RoleRef("ClusterRole", "team"), (Subject("ServiceAccount", "runner"),)),
                         cluster_roles={"team": TEAM}), True,
                 'RBAC: allowed by RoleBinding "sa/team-a" of ClusterRole "team" to ServiceAccount "runner/team-a"',
                 id="a service account subject without namespace takes the binding's"),
    pytest.param(U("system:serviceaccount:team-a:runner"), res("get", "appwrappers", "workload.codeflare.dev"),
                 _policy(Binding("sa", "", RoleRef("ClusterRole", "team"), (Subject("ServiceAccount", "runner"),)),
                         cluster_roles={"team": TEAM}), False, "",
                 id="a service account subject without namespace in a ClusterRoleBinding matches nobody"),
    pytest.param(U("alice"), res("get", "pods"),
                 _policy(Binding("x", "team-a", RoleRef("Role", "gone"), (Subject("User", "alice"),))), False,
                 'RBAC: role.rbac.authorization.k8s.io "gone" not found',
                 id="a binding to a missing role grants nothing and says why"),
    pytest.param(U("alice"), res("get", "pods"),
                 _policy(Binding("x", "", RoleRef("ClusterRole", "gone"), (Subject("User", "alice"),)),
                         Binding("y", "team-a", RoleRef("Role", "gone"), (Subject("User", "alice"),))), False,
                 'RBAC: [clusterrole.rbac.authorization.k8s.io "gone" not found, '
                 'role.rbac.authorization.k8s.io "gone" not found]',
                 id="several resolution errors are listed together"),
    pytest.param(U("alice"), res("get", "pods"),
                 _policy(Binding("x", "team-a", RoleRef("Role", "r"), (Subject("User", "alice"),)),
                         roles={("team-b", "r"): Role("r", "team-b", (R(["*"], ["*"], ["*"]),))}), False,
                 'RBAC: role.rbac.authorization.k8s.io "r" not found',
                 id="a RoleBinding only reaches Roles in its own namespace"),
])
def test_authorize_finds_the_binding_that_allows(user: U, attrs: Attributes, policy: Policy, allowed: bool,
                                                 reason: str) -> None:
    assert authorize(user, attrs, policy) == type(authorize(user, attrs, policy))(allowed, reason)


@pytest.mark.parametrize(("attrs", "message"), [
    pytest.param(res("create", "secrets"),
                 'User "alice" cannot create resource "secrets" in API group "" in the namespace "team-a"',
                 id="a namespaced request names its namespace"),
    pytest.param(res("list", "clusterqueues", "kueue.x-k8s.io", namespace=""),
                 'User "alice" cannot list resource "clusterqueues" in API group "kueue.x-k8s.io" at the cluster scope',
                 id="a cluster-scoped request says so"),
    pytest.param(res("update", "workloads", "kueue.x-k8s.io", sub="status"),
                 'User "alice" cannot update resource "workloads/status" in API group "kueue.x-k8s.io" '
                 'in the namespace "team-a"', id="a subresource is named with its resource"),
    pytest.param(url("get", "/metrics"), 'User "alice" cannot get path "/metrics"', id="a path is quoted"),
])
def test_forbidden_messages_are_worded_as_kube_apiserver(attrs: Attributes, message: str) -> None:
    assert forbidden_message("alice", attrs) == message


@pytest.mark.parametrize(("method", "path", "query", "expected"), [
    pytest.param("GET", "/api/v1/namespaces/a/pods", {}, res("list", "pods", namespace="a"), id="a collection get is a list"),
    pytest.param("GET", "/api/v1/namespaces/a/pods", {"watch": "true"}, res("watch", "pods", namespace="a"),
                 id="watch=true is a watch"),
    pytest.param("GET", "/api/v1/namespaces/a/pods", {"fieldSelector": "metadata.name=p"},
                 res("list", "pods", namespace="a", name="p"), id="a name field selector names the object"),
    pytest.param("GET", "/api/v1/namespaces/a/pods/p/log", {}, res("get", "pods", namespace="a", name="p", sub="log"),
                 id="a subresource is its own attribute"),
    pytest.param("DELETE", "/apis/batch/v1/namespaces/a/jobs", {}, res("deletecollection", "jobs", "batch", "a"),
                 id="a collection delete is deletecollection"),
    pytest.param("PATCH", "/apis/kueue.x-k8s.io/v1beta1/clusterqueues/q", {},
                 res("patch", "clusterqueues", "kueue.x-k8s.io", "", "q"), id="cluster-scoped objects have no namespace"),
    pytest.param("GET", "/api/v1/namespaces/a", {}, res("get", "namespaces", namespace="a", name="a"),
                 id="a namespace is read within itself"),
    pytest.param("PUT", "/api/v1/namespaces/a/finalize", {}, res("update", "namespaces", namespace="a", name="a",
                                                                   sub="finalize"), id="namespace finalize"),
    pytest.param("GET", "/apis/batch/v1", {}, url("get", "/apis/batch/v1"), id="discovery is a non-resource path"),
    pytest.param("POST", "/api/v1/namespaces/a/pods/p/binding", {},
                 res("create", "pods", namespace="a", name="p", sub="binding"), id="a pod binding is a create"),
])
def test_request_attributes_come_from_the_path(method: str, path: str, query: dict, expected: Attributes) -> None:
    assert request_attributes(method, path, query) == expected


@pytest.mark.parametrize(("owner", "wanted", "covered"), [
    pytest.param(R(["*"], ["*"], ["*"]), R(["get"], ["apps"], ["deployments"]), True, id="stars cover everything"),
    pytest.param(R(["get", "list"], [""], ["pods"]), R(["get"], [""], ["pods"]), True, id="a subset of verbs"),
    pytest.param(R(["get"], [""], ["pods"]), R(["get", "list"], [""], ["pods"]), False, id="a missing verb"),
    pytest.param(R(["get"], [""], ["*/status"]), R(["get"], [""], ["pods/status"]), True,
                 id="star-slash-status covers a status subresource"),
    pytest.param(R(["get"], [""], ["pods"]), R(["get"], [""], ["pods/log"]), False,
                 id="a resource does not cover its subresource"),
    pytest.param(R(["get"], [""], ["configmaps"], ["a"]), R(["get"], [""], ["configmaps"]), False,
                 id="named rights do not cover all names"),
    pytest.param(R(["get"], [""], ["configmaps"]), R(["get"], [""], ["configmaps"], ["a"]), True,
                 id="unnamed rights cover any name"),
    pytest.param(R(["get"], urls=["/apis/*"]), R(["get"], urls=["/apis/batch"]), True, id="a URL prefix covers"),
])
def test_rule_covers(owner: PolicyRule, wanted: PolicyRule, covered: bool) -> None:
    assert all(rule_covers(owner, part) for part in breakdown(wanted)) is covered


rule_strategy = st.builds(
    PolicyRule, st.tuples(st.sampled_from(["get", "list", "create", "*"])),
    st.tuples(st.sampled_from(["", "apps", "*"])),
    st.tuples(st.sampled_from(["pods", "pods/log", "*/status", "*", "jobs"])),
    st.one_of(st.just(()), st.tuples(st.sampled_from(["a", "b"]))))


@given(st.lists(rule_strategy, max_size=4), st.lists(rule_strategy, max_size=3))
def test_whoever_holds_a_role_is_never_missing_part_of_it(owned: list[PolicyRule], extra: list[PolicyRule]) -> None:
    assert missing_rights(owned + extra, owned) == []


def test_an_escalation_names_every_missing_permission_in_kube_apiservers_words() -> None:
    missing = missing_rights([R(["get"], [""], ["secrets"])], [R(["get", "create"], ["", "apps"], ["secrets"])])
    assert escalation_message("alice", ("system:authenticated",), missing, []) == (
        'user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:[""], Resources:["secrets"], Verbs:["create"]}\n'
        '{APIGroups:["apps"], Resources:["secrets"], Verbs:["get" "create"]}')
    assert compact_string(R(["get"], urls=["/x"])) == '{NonResourceURLs:["/x"], Verbs:["get"]}'


EDIT_IN_A = Binding("edit", "team-a", RoleRef("ClusterRole", "edit"), (Subject("User", "alice"),))
EDIT = Role("edit", rules=(R(["*"], [""], ["configmaps", "secrets"]),))
SECRETS_READER = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                  "metadata": {"name": "r", "namespace": "team-a"},
                  "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}]}
NODE_READER = {**SECRETS_READER, "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["nodes"]}]}


def _binding(kind: str, name: str, namespace: str = "team-a") -> dict:
    return {"kind": "RoleBinding", "metadata": {"name": "b", "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
            "subjects": [{"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"}]}


@pytest.mark.parametrize(("user", "obj", "policy", "denied"), [
    pytest.param(U("alice"), SECRETS_READER, _policy(EDIT_IN_A, cluster_roles={"edit": EDIT}), False,
                 id="a role within what the writer holds may be written"),
    pytest.param(U("alice"), NODE_READER, _policy(EDIT_IN_A, cluster_roles={"edit": EDIT}), True,
                 id="a role granting more than the writer holds is refused"),
    pytest.param(U("root", ("system:masters",)), NODE_READER, _policy(), False, id="system:masters may grant anything"),
    pytest.param(U("alice"), NODE_READER, _policy(
        EDIT_IN_A, Binding("esc", "team-a", RoleRef("ClusterRole", "esc"), (Subject("User", "alice"),)),
        cluster_roles={"edit": EDIT, "esc": Role("esc", rules=(R(["escalate"], ["rbac.authorization.k8s.io"],
                                                                 ["roles"]),))}), False,
                 id="the escalate verb lifts the check"),
    pytest.param(U("alice"), _binding("ClusterRole", "edit"), _policy(EDIT_IN_A, cluster_roles={"edit": EDIT}), False,
                 id="a binding to a role the writer holds may be written"),
    pytest.param(U("alice"), _binding("ClusterRole", "cluster-admin"),
                 _policy(EDIT_IN_A, cluster_roles={"edit": EDIT, "cluster-admin": Role("cluster-admin", rules=(
                     R(["*"], ["*"], ["*"]),))}), True, id="a binding to a bigger role is refused"),
    pytest.param(U("alice"), _binding("ClusterRole", "cluster-admin"),
                 _policy(EDIT_IN_A, Binding("bind", "team-a", RoleRef("ClusterRole", "binder"), (Subject("User", "alice"),)),
                         cluster_roles={"edit": EDIT, "binder": Role("binder", rules=(
                             R(["bind"], ["rbac.authorization.k8s.io"], ["clusterroles"], ["cluster-admin"]),))}),
                 False, id="the bind verb on that role lifts the check"),
    pytest.param(U("alice"), _binding("Role", "nowhere"), _policy(EDIT_IN_A, cluster_roles={"edit": EDIT}), True,
                 id="a binding to a missing role is refused to whoever may not bind it"),
])
def test_escalation_prevention(user: U, obj: dict, policy: Policy, denied: bool) -> None:
    assert (write_denial(user, obj, None, policy) is not None) is denied


def test_aggregation_follows_labels_through_chains_in_name_order() -> None:
    roles = {r["metadata"]["name"]: Role.from_object(r) for r in bootstrap.cluster_roles()}
    extra = Role("batchgate-viewer", labels={"rbac.authorization.k8s.io/aggregate-to-view": "true"},
                 rules=(R(["get"], ["workload.codeflare.dev"], ["appwrappers"]),))
    roles[extra.name] = extra
    updated = aggregation_updates(roles)
    for name in ("view", "edit", "admin"):
        assert extra.rules[0] in updated[name], name
    assert updated["admin"][:len(updated["edit"])] == updated["edit"]  # "edit" sorts before "system:..."
    assert set(roles["system:aggregate-to-admin"].rules) <= set(updated["admin"])
    assert aggregation_updates({**roles, **{n: Role(n, rules=r, labels=roles[n].labels,
                                                    aggregation=roles[n].aggregation) for n, r in updated.items()}}) == {}


def test_bootstrap_bindings_reach_existing_roles() -> None:
    names = {r["metadata"]["name"] for r in bootstrap.cluster_roles()}
    assert all(b["roleRef"]["name"] in names for b in bootstrap.cluster_role_bindings())
