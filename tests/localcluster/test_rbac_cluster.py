"""RBAC on the local cluster, driven by the real kubectl and the real `kubernetes` client as
alice, bob and admin, with the shipped user roles (manifests/rbac/users.yaml).

alice works in team-a and bob in team-b, each holding `batchgate-team` (MLBatch's team role)
in their own namespace only; admin is in system:masters.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from localcluster.authorization import RecordedRequest
from localcluster.runner import LocalCluster
from tests.localcluster_fixtures import KUBECTL, api_client, role_binding

ROOT = Path(__file__).resolve().parents[2]
Kubectl = Callable[..., subprocess.CompletedProcess[str]]

SETUP = """
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
---
apiVersion: v1
kind: Namespace
metadata: {name: batchgate-system}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: batchgate-policy, namespace: batchgate-system}
data: {policy.yaml: "{}"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: notes, namespace: team-a}
data: {a: b}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path_factory.mktemp("rbac")) as made:
        yield made


@pytest.fixture(scope="module")
def kubectl(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    cache = tmp_path_factory.mktemp("kubectl-cache")

    def run(*args: str, user: str = "admin", input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([KUBECTL, "--kubeconfig", str(cluster.kubeconfig), "--cache-dir", str(cache),
                                 "--context", user, *args], input=input, capture_output=True, text=True, timeout=30)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} as {user}: {result.stderr}")
        return result

    run("apply", "-k", str(ROOT / "manifests" / "crds"))
    run("apply", "-f", str(ROOT / "manifests" / "rbac" / "users.yaml"))
    run("apply", "-f", "-", input=SETUP)
    run("apply", "-f", "-", input=role_binding("team-a", "batchgate-team", ("alice",)))
    run("apply", "-f", "-", input=role_binding("team-b", "batchgate-team", ("bob",)))
    return run


def can_i(kubectl: Kubectl, user: str, *question: str) -> str:
    return kubectl("auth", "can-i", *question, user=user, check=False).stdout.strip()


@pytest.mark.parametrize(("user", "question", "answer"), [
    pytest.param("alice", ("create", "appwrappers.workload.codeflare.dev", "-n", "team-a"), "yes",
                 id="alice may create AppWrappers in her team's namespace"),
    pytest.param("alice", ("create", "pytorchjobs.kubeflow.org", "-n", "team-a"), "yes",
                 id="alice may create PyTorchJobs there"),
    pytest.param("alice", ("create", "rayclusters.ray.io", "-n", "team-a"), "yes", id="and RayClusters"),
    pytest.param("alice", ("create", "secrets", "-n", "team-a"), "yes", id="and the non-compute kinds"),
    pytest.param("alice", ("create", "pods", "-n", "team-a"), "no", id="but no bare pods"),
    pytest.param("alice", ("create", "jobs.batch", "-n", "team-a"), "yes",
                 id="she may create Jobs (the gateway admits only queue-labelled ones)"),
    pytest.param("alice", ("create", "deployments.apps", "-n", "team-a"), "no", id="but no Deployments"),
    pytest.param("alice", ("get", "pods", "--subresource=log", "-n", "team-a"), "yes", id="she may read pod logs"),
    pytest.param("alice", ("list", "workloads.kueue.x-k8s.io", "-n", "team-a"), "yes", id="and Workloads"),
    pytest.param("alice", ("update", "workloads.kueue.x-k8s.io", "--subresource=status", "-n", "team-a"), "no",
                 id="but may not write a Workload's status"),
    pytest.param("alice", ("list", "localqueues.kueue.x-k8s.io", "-n", "team-a"), "yes", id="she may list LocalQueues"),
    pytest.param("alice", ("create", "appwrappers.workload.codeflare.dev", "-n", "team-b"), "no",
                 id="alice may not create AppWrappers in bob's namespace"),
    pytest.param("alice", ("patch", "clusterqueues.kueue.x-k8s.io"), "no", id="alice may not change ClusterQueues"),
    pytest.param("alice", ("update", "configmaps/batchgate-policy", "-n", "batchgate-system"), "no",
                 id="alice may not change the policy"),
    pytest.param("alice", ("patch", "validatingwebhookconfigurations.admissionregistration.k8s.io"), "no",
                 id="alice may not change webhook configurations"),
    pytest.param("bob", ("get", "configmaps", "-n", "team-a"), "no", id="bob may not read alice's namespace"),
    pytest.param("bob", ("delete", "appwrappers.workload.codeflare.dev", "-n", "team-a"), "no",
                 id="bob may not delete there"),
    pytest.param("bob", ("create", "appwrappers.workload.codeflare.dev", "-n", "team-b"), "yes",
                 id="bob may work in his own"),
    pytest.param("admin", ("delete", "clusterqueues.kueue.x-k8s.io"), "yes", id="admin may do anything"),
])
def test_kubectl_auth_can_i_as_each_user(kubectl: Kubectl, user: str, question: tuple[str, ...], answer: str) -> None:
    assert can_i(kubectl, user, *question) == answer


def test_can_i_as_another_user_matches_asking_as_them(kubectl: Kubectl) -> None:
    question = ("create", "appwrappers.workload.codeflare.dev", "-n", "team-a")
    assert can_i(kubectl, "admin", *question, "--as", "alice") == "yes"
    assert can_i(kubectl, "admin", *question, "--as", "bob") == "no"


def test_can_i_list_shows_the_team_role(kubectl: Kubectl) -> None:
    listing = kubectl("auth", "can-i", "--list", "-n", "team-a", user="alice").stdout
    assert "appwrappers.workload.codeflare.dev" in listing and "[/api/*]" in listing
    assert "appwrappers.workload.codeflare.dev" not in kubectl("auth", "can-i", "--list", "-n", "team-a",
                                                               user="bob").stdout


@pytest.mark.parametrize("args", [
    pytest.param(("get", "configmap", "notes"), id="read"),
    pytest.param(("label", "configmap", "notes", "x=y"), id="change"),
    pytest.param(("delete", "configmap", "notes"), id="delete"),
    pytest.param(("get", "appwrappers"), id="list AppWrappers"),
    pytest.param(("delete", "appwrapper", "notes"), id="delete an AppWrapper"),
    pytest.param(("patch", "appwrapper", "notes", "--type=merge", "-p", '{"spec":{"suspend":true}}'),
                 id="suspend an AppWrapper"),
])
def test_bob_can_do_nothing_in_alices_namespace(kubectl: Kubectl, args: tuple[str, ...]) -> None:
    result = kubectl("-n", "team-a", *args, user="bob", check=False)
    assert result.returncode == 1 and "forbidden" in result.stderr
    assert 'User "bob" cannot' in result.stderr and 'in the namespace "team-a"' in result.stderr
    assert kubectl("-n", "team-a", "get", "configmap", "notes").returncode == 0


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(("-n", "batchgate-system", "patch", "configmap", "batchgate-policy", "--type=merge",
                  "-p", '{"data":{"policy.yaml":"x"}}'),
                 'configmaps "batchgate-policy" is forbidden: User "alice" cannot get resource "configmaps" '
                 'in API group "" in the namespace "batchgate-system"', id="the policy ConfigMap (kubectl reads first)"),
    pytest.param(("delete", "validatingwebhookconfiguration", "batchgate-webhook"),
                 'validatingwebhookconfigurations.admissionregistration.k8s.io "batchgate-webhook" is forbidden: '
                 'User "alice" cannot delete resource "validatingwebhookconfigurations" in API group '
                 '"admissionregistration.k8s.io" at the cluster scope', id="the webhook configurations"),
    pytest.param(("create", "-f", "-"),
                 'clusterqueues.kueue.x-k8s.io is forbidden: User "alice" cannot create resource "clusterqueues" '
                 'in API group "kueue.x-k8s.io" at the cluster scope', id="ClusterQueues"),
    pytest.param(("-n", "team-a", "patch", "workload", "mine", "--subresource=status", "--type=merge",
                  "-p", '{"status":{}}'),
                 'workloads.kueue.x-k8s.io "mine" is forbidden: User "alice" cannot get resource '
                 '"workloads/status" in API group "kueue.x-k8s.io" in the namespace "team-a"',
                 id="her own Workload's status"),
])
def test_alice_cannot_change_what_governs_her(kubectl: Kubectl, args: tuple[str, ...], message: str) -> None:
    queue = ("apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: mine}\n"
             "spec: {namespaceSelector: {}, resourceGroups: []}\n")
    result = kubectl(*args, user="alice", check=False, input=queue if "-" in args else None)
    assert result.returncode == 1
    assert message in result.stderr


def test_shipped_user_roles_aggregate_into_edit_and_view(kubectl: Kubectl) -> None:
    rules = json.loads(kubectl("get", "clusterrole", "edit", "-o", "json").stdout)["rules"]
    assert any("appwrappers" in r.get("resources", []) and "create" in r["verbs"] for r in rules)
    viewing = json.loads(kubectl("get", "clusterrole", "view", "-o", "json").stdout)["rules"]
    assert any("appwrappers" in r.get("resources", []) and r["verbs"] == ["get", "list", "watch"] for r in viewing)
    assert not any("appwrappers" in r.get("resources", []) and "create" in r["verbs"] for r in viewing)


def test_an_unknown_verb_is_stored_and_grants_nothing(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input="apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\n"
            "metadata: {name: typo, namespace: team-b}\n"
            "rules: [{apiGroups: [''], resources: [secrets, widgets], verbs: [creat]}]\n")
    kubectl("apply", "-f", "-", input=role_binding("team-b", "typo", ("bob",), kind="Role"))
    stored = json.loads(kubectl("-n", "team-b", "get", "role", "typo", "-o", "json").stdout)
    assert stored["rules"][0]["verbs"] == ["creat"]
    assert can_i(kubectl, "bob", "list", "secrets", "-n", "team-b") == "yes"  # from the team role
    assert can_i(kubectl, "bob", "creat", "widgets", "-n", "team-b") == "yes"
    assert can_i(kubectl, "bob", "create", "widgets", "-n", "team-b") == "no"


def test_a_binding_to_a_missing_role_grants_nothing_and_the_answer_says_why(kubectl: Kubectl) -> None:
    # A namespace of its own: the dangling binding would otherwise colour other tests' answers.
    kubectl("create", "namespace", "team-dangling")
    kubectl("apply", "-f", "-", input=role_binding("team-dangling", "not-there", ("bob",), kind="Role"))
    result = kubectl("-n", "team-dangling", "get", "nodes", user="bob", check=False)
    assert result.returncode == 1 and 'cannot list resource "nodes"' in result.stderr
    refused = kubectl("-n", "team-dangling", "create", "deployment", "d", "--image=x", user="bob", check=False)
    assert ('cannot create resource "deployments" in API group "apps" in the namespace "team-dangling": '
            'RBAC: role.rbac.authorization.k8s.io "not-there" not found') in refused.stderr


def test_a_subject_access_review_with_no_user_or_group_is_invalid(cluster: LocalCluster) -> None:
    with api_client(cluster) as api:
        authz = client.AuthorizationV1Api(api)
        with pytest.raises(ApiException) as caught:
            authz.create_subject_access_review(client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(
                resource_attributes=client.V1ResourceAttributes(verb="get", resource="pods", namespace="team-a"))))
        assert caught.value.status == 422
        assert json.loads(caught.value.body)["message"] == (
            'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of '
            "user or group must be specified")


@pytest.mark.parametrize(("user", "groups", "attributes", "allowed", "reason"), [
    pytest.param("alice", [], {"verb": "create", "group": "workload.codeflare.dev", "resource": "appwrappers",
                               "namespace": "team-a"}, True,
                 'RBAC: allowed by RoleBinding "batchgate-team-alice/team-a" of ClusterRole "batchgate-team" '
                 'to User "alice"', id="alice's team binding allows her AppWrappers"),
    pytest.param("alice", [], {"verb": "create", "resource": "pods", "namespace": "team-a"}, False, None,
                 id="no binding allows her pods"),
    pytest.param("system:serviceaccount:team-a:runner", ["system:serviceaccounts"],
                 {"verb": "get", "resource": "configmaps", "namespace": "team-a"}, True,
                 'RBAC: allowed by RoleBinding "runner/team-a" of ClusterRole "view" to ServiceAccount '
                 '"runner/team-a"', id="a service account is matched by its username"),
    pytest.param("", ["system:masters"], {"verb": "delete", "resource": "nodes"}, True, None,
                 id="system:masters is always allowed"),
])
def test_subject_access_reviews_through_the_kubernetes_client(cluster: LocalCluster, kubectl: Kubectl, user: str,
                                                              groups: list[str], attributes: dict, allowed: bool,
                                                              reason: str | None) -> None:
    kubectl("apply", "-f", "-", input="apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\n"
            "metadata: {name: runner, namespace: team-a}\n"
            "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}\n"
            "subjects: [{kind: ServiceAccount, name: runner}]\n")
    with api_client(cluster) as api:
        review = client.AuthorizationV1Api(api).create_subject_access_review(client.V1SubjectAccessReview(
            spec=client.V1SubjectAccessReviewSpec(user=user or None, groups=groups or None,
                                                  resource_attributes=client.V1ResourceAttributes(**attributes))))
    assert (review.status.allowed, review.status.reason) == (allowed, reason)


def test_escalation_is_refused_in_kube_apiservers_words(kubectl: Kubectl) -> None:
    # bob is admin of a namespace of his own here, so his other namespaces keep the team role only.
    kubectl("create", "namespace", "team-escalation")
    kubectl("apply", "-f", "-", input=role_binding("team-escalation", "admin", ("bob",)))
    refused = kubectl("-n", "team-escalation", "create", "role", "nodes", "--verb=get", "--resource=nodes", user="bob",
                      check=False)
    assert refused.returncode == 1
    assert ('roles.rbac.authorization.k8s.io "nodes" is forbidden: user "bob" (groups=["system:authenticated"]) '
            "is attempting to grant RBAC permissions not currently held:\n"
            '{APIGroups:[""], Resources:["nodes"], Verbs:["get"]}') in refused.stderr
    kubectl("-n", "team-escalation", "create", "role", "reader", "--verb=get", "--resource=secrets", user="bob")
    bound = kubectl("-n", "team-escalation", "create", "rolebinding", "root", "--clusterrole=cluster-admin", "--user=bob",
                    user="bob", check=False)
    assert bound.returncode == 1 and "is attempting to grant RBAC permissions not currently held" in bound.stderr
    kubectl("-n", "team-escalation", "create", "rolebinding", "fine", "--role=reader", "--user=alice", user="bob")


def test_the_local_cluster_can_be_started_without_authorization(tmp_path: Path) -> None:
    with LocalCluster(tmp_path, authorization="AlwaysAllow") as open_cluster, api_client(open_cluster, "bob") as api:
        assert client.CoreV1Api(api).list_namespaced_secret("default").items == []


def test_alice_cannot_write_the_policy_even_without_reading_it_first(cluster: LocalCluster) -> None:
    with api_client(cluster, "alice") as api:
        with pytest.raises(ApiException) as caught:
            client.CoreV1Api(api).patch_namespaced_config_map("batchgate-policy", "batchgate-system",
                                                              {"data": {"policy.yaml": "x"}})
    assert caught.value.status == 403
    assert 'cannot patch resource "configmaps"' in json.loads(caught.value.body)["message"]


def test_forbidden_is_a_403_never_a_500(cluster: LocalCluster) -> None:
    with api_client(cluster, "bob") as api:
        with pytest.raises(ApiException) as caught:
            client.CoreV1Api(api).delete_namespace("team-a")
    assert caught.value.status == 403
    assert json.loads(caught.value.body)["details"] == {"name": "team-a", "kind": "namespaces"}


def test_a_cluster_asked_to_records_who_requested_what_allowed_or_not(tmp_path: Path) -> None:
    with LocalCluster(tmp_path, record_requests=True) as recording:
        with api_client(recording, "alice") as api:
            with pytest.raises(ApiException):
                client.CoreV1Api(api).read_namespaced_pod_log("p", "team-a")
        with api_client(recording) as api:
            client.CoreV1Api(api).list_namespaced_config_map("default")
            client.CoreV1Api(api).list_namespaced_config_map("default")
        recorded = recording.authorizer.recorded
        assert recorded is not None
        assert recorded[RecordedRequest("alice", "get", "", "pods", "log", "team-a", False)] == 1
        assert recorded[RecordedRequest("admin", "list", "", "configmaps", "", "default", True)] == 2


def test_a_cluster_not_asked_to_records_nothing(cluster: LocalCluster) -> None:
    assert cluster.authorizer.recorded is None


def owned_configmap(name: str, owner_uid: str, block: bool) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": name, "namespace": "team-a", "ownerReferences": [{
            "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper", "name": "owner", "uid": owner_uid,
            "blockOwnerDeletion": block}]}})


def test_blocking_an_owners_deletion_needs_its_finalizers(kubectl: Kubectl) -> None:
    """OwnerReferencesPermissionEnforcement (kubernetes plugin/pkg/admission/gc): alice may point
    a ConfigMap at her AppWrapper, but not block its deletion without `update` on its finalizers."""
    kubectl("apply", "-f", "-", user="alice", input=json.dumps({
        "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
        "metadata": {"name": "owner", "namespace": "team-a"}, "spec": {"components": []}}))
    uid = kubectl("-n", "team-a", "get", "appwrapper", "owner", "-o", "jsonpath={.metadata.uid}").stdout
    assert kubectl("create", "-f", "-", user="alice", input=owned_configmap("owned", uid, False)).returncode == 0
    refused = kubectl("create", "-f", "-", user="alice", input=owned_configmap("blocking", uid, True), check=False)
    assert refused.returncode == 1
    assert ('configmaps "blocking" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a '
            'resource you can\'t set finalizers on: User "alice" cannot update resource "appwrappers/finalizers" in '
            'API group "workload.codeflare.dev" in the namespace "team-a"') in refused.stderr
    assert kubectl("create", "-f", "-", input=owned_configmap("blocking", uid, True)).returncode == 0  # admin may


@pytest.mark.parametrize("resource", ["appwrappers.workload.codeflare.dev", "jobs.batch", "pytorchjobs.kubeflow.org",
                                      "rayjobs.ray.io", "rayclusters.ray.io"])
def test_the_controller_may_block_the_deletion_of_every_owner_it_sets(kubectl: Kubectl, resource: str) -> None:
    """The controller's Workloads, PodGroups, components and framework Services carry
    blockOwnerDeletion towards these owners (manifests/rbac/controller.yaml)."""
    kubectl("apply", "-f", str(ROOT / "manifests" / "rbac" / "controller.yaml"))
    controller = "system:serviceaccount:batchgate-system:batchgate-controller"
    assert can_i(kubectl, "admin", "update", resource, "--subresource=finalizers", "-n", "team-a",
                 "--as", controller) == "yes"
