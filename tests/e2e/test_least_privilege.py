"""Least privilege, measured (issue 13 item 5): install the product as `test_install.py` does, on a
cluster that records every request (the real control plane when it is built, through
kube-apiserver's audit log; else the stand-in's recorder: tests/clusters.py), drive a
representative workload mix as alice and then every scene of the demo (`demo.main.scenes`, the
same code `make demo` runs), stop the product so that every watch it held ends, then compare per
product service account what it asked for with what its roles grant.

Both sides are the cluster's own RBAC answers: a request the authorizer refused (as recorded with
it) is a denial; a (verb, group, resource) that the account's rules review (a
SelfSubjectRulesReview as the account) lists beyond that of an account bound to nothing, and that
nobody used, is an excess right, unless `RARE_PATHS` says why it is kept (on the real control
plane `OWNER_REFERENCE_CHECKS` too: what only an admission plugin asks for, which no audit log shows).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from batchgate import keys
from batchgate.kinds import APPWRAPPER, PYTORCHJOB
from batchgate.clock import SystemClock
from demo import ray_scene
from demo.samples_scene import SAMPLES
from demo.kubectl import Kubectl
from demo.main import scenes
from demo.narration import Narrator
from demo.stack import DEMO_MANIFESTS, SYSTEM_NAMESPACE, install_product, local_image
from localcluster.authorization import RecordedRequest
from localcluster.runner import LocalCluster
from localcluster.sim.behavior import BEHAVIOR_ANNOTATION
from localcluster.sim.nodes import nodes_from_flags
from realcluster.cluster import RealCluster
from tests import clusters
from tests.e2e.test_install import eventually

pytestmark = pytest.mark.timeout(420)

ACCOUNTS = ("batchgate-controller", "batchgate-webhook")
TEAM = "team-a"

Right = tuple[str, str, str]
"""(verb, API group, resource[/subresource]): what a rule grants and a request uses."""

CONFLICT = "the re-read after a conflicting status write (controller/adapters/writer.py update_status)"
NOT_WRAPPED = "a component kind users may wrap that the scenario does not"
RAY = "a RayJob wrapped in an AppWrapper, or a queued top-level RayCluster, which neither the mix nor the demo runs"

RARE_PATHS: dict[str, dict[Right, str]] = {
    "batchgate-controller": {
        ("get", "workload.codeflare.dev", "appwrappers"): CONFLICT,
        ("get", "kueue.x-k8s.io", "workloads"): CONFLICT,
        ("get", "kueue.x-k8s.io", "clusterqueues"): CONFLICT,
        ("get", "kueue.x-k8s.io", "localqueues"): CONFLICT,
        ("get", "", "pods"): CONFLICT,
        ("get", "kubeflow.org", "pytorchjobs"): "a cache miss for a component confirmed by GET before it counts as missing",
        ("patch", "kueue.x-k8s.io", "workloads"): "a job moved to another queue, or a gang's Workload shrunk",
        ("patch", "scheduling.x-k8s.io", "podgroups"): "a gang's minMember lowered as its pods finish",
        ("patch", "batch", "jobs/status"): "a preempted Job that had started, resumed (its startTime cleared first)",
        ("delete", "", "pods"): "an AppWrapper's deletion forced after its grace period",
        ("patch", "", "events"): "an Event repeated on the same object, counted on the one recorded (controller/adapters/events.py)",
        ("create", "", "pods"): NOT_WRAPPED,
        ("get", "", "persistentvolumeclaims"): NOT_WRAPPED,
        ("create", "", "persistentvolumeclaims"): NOT_WRAPPED,
        ("delete", "", "persistentvolumeclaims"): NOT_WRAPPED,
        ("get", "apps", "deployments"): NOT_WRAPPED,
        ("create", "apps", "deployments"): NOT_WRAPPED,
        ("delete", "apps", "deployments"): NOT_WRAPPED,
        ("get", "apps", "statefulsets"): NOT_WRAPPED,
        ("create", "apps", "statefulsets"): NOT_WRAPPED,
        ("delete", "apps", "statefulsets"): NOT_WRAPPED,
        ("get", "ray.io", "rayjobs"): RAY,
        ("get", "ray.io", "rayclusters"): RAY,
        ("create", "ray.io", "rayjobs"): RAY,
        ("delete", "ray.io", "rayjobs"): RAY,
        ("update", "ray.io", "rayclusters"): RAY,
        ("update", "ray.io", "rayclusters/finalizers"): RAY,
        ("update", "kueue.x-k8s.io", "clusterqueues"): "the slack ClusterQueue's lendingLimits following node health "
        "(faultTolerance.nodeHealth.slackClusterQueue, which the demo's policy does not set; "
        "tests/controller/adapters/test_slack_queue.py runs it as this account)",
    },
    "batchgate-webhook": {
        ("update", "", "secrets"): "the serving certificate renewed before expiry, or its Secret repaired",
    },
}
"""Rights kept although the scenario did not use them, each with the path that needs it."""


OWNER_REFERENCE_CHECKS: dict[str, dict[Right, str]] = {
    "batchgate-controller": {
        ("update", "workload.codeflare.dev", "appwrappers/finalizers"): "blockOwnerDeletion on an AppWrapper's components",
        ("update", "batch", "jobs/finalizers"): "blockOwnerDeletion on a queued Job's Workload and PodGroup",
        ("update", "kubeflow.org", "pytorchjobs/finalizers"): "blockOwnerDeletion on a queued PyTorchJob's Workload",
        ("update", "ray.io", "rayjobs/finalizers"): "blockOwnerDeletion on a queued RayJob's Workload",
        ("delete", "kueue.x-k8s.io", "workloads"): "ownerReferences on the Workloads it makes (it deletes one "
        "itself only when its job changed, a rare path)",
        ("delete", "scheduling.x-k8s.io", "podgroups"): "ownerReferences on the PodGroups it makes (it never deletes "
        "one: the garbage collector does, after the job)",
    },
    "batchgate-webhook": {},
}
"""Rights that only the OwnerReferencesPermissionEnforcement admission plugin asks for: `delete`
on an object whose ownerReferences a write sets, `update` of the owner's finalizers for a
blockOwnerDeletion. Clusters that run it, as OpenShift does, refuse the write without them
(manifests/rbac/controller.yaml). The stand-in runs that plugin and records its checks with the
requests. A default kube-apiserver does not run it, and its audit log records requests, not an
admission plugin's checks. So on the real control plane these rights are kept unused."""


@dataclass(frozen=True)
class ServiceAccount:
    """The identity the API server gives a product pod's token."""

    name: str
    groups: tuple[str, ...] = ("system:serviceaccounts", f"system:serviceaccounts:{SYSTEM_NAMESPACE}",
                               "system:authenticated")

    @property
    def username(self) -> str:
        return f"system:serviceaccount:{SYSTEM_NAMESPACE}:{self.name}"


UNBOUND = ServiceAccount("least-privilege-unbound")
"""An account of the same groups that no binding names: what every service account holds."""


@dataclass(frozen=True)
class Comparison:
    denied: list[RecordedRequest]
    unused: list[Right]


def right(request: RecordedRequest) -> Right:
    resource = f"{request.resource}/{request.subresource}" if request.subresource else request.resource
    return request.verb, request.api_group, resource


def review(kubectl: Kubectl, kind: str, body: dict[str, Any], *impersonation: str) -> dict[str, Any]:
    """An access or rules review answered by the cluster's own authorizer, as admin."""
    path = f"/apis/authorization.k8s.io/v1/{kind.lower()}s"
    sent = {"apiVersion": "authorization.k8s.io/v1", "kind": kind, **body}
    return dict(json.loads(kubectl.run("create", "--raw", path, "-f", "-", *impersonation,
                                       stdin=json.dumps(sent)).stdout)["status"])


def rules_of(kubectl: Kubectl, account: ServiceAccount, namespace: str) -> set[Right]:
    """Every literal (verb, group, resource) the account holds in `namespace`, cluster-wide rules
    included (a SelfSubjectRulesReview as the account, with its groups)."""
    status = review(kubectl, "SelfSubjectRulesReview", {"spec": {"namespace": namespace}}, "--as", account.username,
                    *(f"--as-group={g}" for g in account.groups))
    assert not status.get("incomplete"), f"the rules of {account.username} are incomplete: {status}"
    return {(v, g, r) for rule in status.get("resourceRules", []) for v in rule["verbs"]
            for g in rule.get("apiGroups", []) for r in rule.get("resources", [])}


def granted_rights(kubectl: Kubectl, account: ServiceAccount, namespaces: set[str]) -> set[Right]:
    """What the account's own bindings grant in these namespaces: its rules, less every user's
    basics (discovery, self reviews), which an unbound account of the same groups holds too."""
    return {r for ns in namespaces for r in rules_of(kubectl, account, ns) - rules_of(kubectl, UNBOUND, ns)}


def may(kubectl: Kubectl, account: ServiceAccount, verb: str, resource: str, namespace: str = "") -> tuple[bool, str]:
    """A SubjectAccessReview: what `kubectl auth can-i VERB RESOURCE [-n NS | -A] --as <account>`
    asks, with the authorizer's reason."""
    status = review(kubectl, "SubjectAccessReview", {"spec": {
        "user": account.username, "groups": list(account.groups),
        "resourceAttributes": {"verb": verb, "resource": resource, "namespace": namespace}}})
    return bool(status.get("allowed")), str(status.get("reason", ""))


def compare(account: ServiceAccount, recorded: Counter[RecordedRequest], granted: set[Right],
            kept: Mapping[Right, str]) -> Comparison:
    """Denied: what the authorizer refused the account. Unused: what it was granted, did not use,
    and is not kept for a path `kept` names."""
    mine = [r for r in recorded if r.user == account.username]
    denied = sorted((r for r in mine if not r.allowed), key=str)
    unused = sorted(granted - {right(r) for r in mine} - set(kept))
    return Comparison(denied, unused)


# the workload mix


def running_for(seconds: int) -> dict[str, Any]:
    return {"annotations": {BEHAVIOR_ANNOTATION: json.dumps({"runFor": f"{seconds}s"})}}


def container(name: str = "main", gpus: int = 0) -> dict[str, Any]:
    requests: dict[str, Any] = {"cpu": "1", "memory": "1Gi"}
    if gpus:
        requests["nvidia.com/gpu"] = gpus
    return {"name": name, "image": "trainer:1", "resources": {"requests": requests, "limits": dict(requests)}}


def job(name: str, seconds: int, pods: int = 1, gpus: int = 0) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"parallelism": pods, "completions": pods, "template": {
                "metadata": running_for(seconds),
                "spec": {"restartPolicy": "Never", "containers": [container(gpus=gpus)]}}}}


def appwrapper(name: str, *components: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper",
            "metadata": {"name": name, "namespace": TEAM, "labels": labels or {}},
            "spec": {"components": [{"template": c} for c in components]}}


def pytorchjob(name: str, seconds: int) -> dict[str, Any]:
    def replicas(count: int) -> dict[str, Any]:
        return {"replicas": count, "restartPolicy": "Never",
                "template": {"metadata": running_for(seconds), "spec": {"containers": [container("pytorch")]}}}
    return {"apiVersion": PYTORCHJOB.api_version, "kind": "PyTorchJob", "metadata": {"name": name},
            "spec": {"pytorchReplicaSpecs": {"Master": replicas(1), "Worker": replicas(1)}}}


def service(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {"app": name}, "ports": [{"port": 80}]}}


def config_map(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


def secret(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": {"token": "t"}}


def submit(kubectl: Kubectl, obj: dict[str, Any]) -> None:
    if "namespace" not in obj["metadata"]:
        obj["metadata"]["namespace"] = TEAM
    kubectl.run("create", "-f", "-", user="alice", stdin=json.dumps(obj))


def phase(kubectl: Kubectl, name: str, namespace: str = TEAM) -> str:
    done = kubectl.run("get", "appwrapper", "-n", namespace, name, "-o", "json", check=False)
    return json.loads(done.stdout).get("status", {}).get("phase", "") if done.returncode == 0 else "<gone>"


def workload_conditions(kubectl: Kubectl, owner: str) -> set[str]:
    return {c["type"] for w in kubectl.get_json("workloads", "-n", TEAM)["items"]
            if any(ref["name"] == owner for ref in w["metadata"].get("ownerReferences", []))
            for c in w.get("status", {}).get("conditions", []) if c["status"] == "True"}


def drive_workload_mix(kubectl: Kubectl) -> None:
    """Every path the scenario takes, waited for, so the product has made its requests."""
    submit(kubectl, appwrapper("mixed", job("mixed-job", 5), service("mixed-svc"), config_map("mixed-config"),
                               secret("mixed-secret")))
    submit(kubectl, appwrapper("torch", pytorchjob("torch", 5), labels={keys.FRAMEWORK_LABEL: "pytorch"}))
    top_level = job("queued", 5)
    top_level["metadata"]["labels"] = {keys.QUEUE_NAME_LABEL: "default-queue"}
    submit(kubectl, top_level)
    top_level_torch = pytorchjob("queued-torch", 5)
    top_level_torch["metadata"]["labels"] = {keys.QUEUE_NAME_LABEL: "default-queue"}
    submit(kubectl, top_level_torch)
    submit(kubectl, appwrapper("doomed", job("doomed-job", 600)))
    for name in ("mixed", "torch"):
        eventually(lambda: phase(kubectl, name) == keys.PHASE_SUCCEEDED, f"AppWrapper {name} succeeds")
    # Finished AppWrappers deleted: the controller deletes what they wrapped (a Service, a
    # ConfigMap, a Secret, Jobs, a PyTorchJob) before it lets them go.
    for name in ("mixed", "torch"):
        kubectl.run("delete", "appwrapper", "-n", TEAM, name, "--wait=false", user="alice")
        eventually(lambda: phase(kubectl, name) == "<gone>", f"the finished AppWrapper {name} deleted")
    eventually(lambda: kubectl.get_json("job", "-n", TEAM, "queued").get("status", {}).get("succeeded") == 1,
               "the queue-labelled Job completes")
    eventually(lambda: keys.COND_FINISHED in workload_conditions(kubectl, "queued-torch"),
               "the queue-labelled PyTorchJob finishes")
    eventually(lambda: phase(kubectl, "doomed") == keys.PHASE_RUNNING, "AppWrapper doomed runs")
    kubectl.run("delete", "appwrapper", "-n", TEAM, "doomed", "--wait=false", user="alice")
    eventually(lambda: phase(kubectl, "doomed") == "<gone>", "the running AppWrapper deleted, components and all")
    # Preemption: a low-priority gang takes every GPU of the cohort, a high-priority one needs a node's worth.
    submit(kubectl, appwrapper("low", job("low-job", 600, pods=4, gpus=8),
                               labels={keys.PRIORITY_CLASS_LABEL: "low-priority"}))
    eventually(lambda: phase(kubectl, "low") == keys.PHASE_RUNNING, "the low-priority AppWrapper runs")
    submit(kubectl, appwrapper("high", job("high-job", 5, gpus=8), labels={keys.PRIORITY_CLASS_LABEL: "high-priority"}))
    eventually(lambda: keys.COND_EVICTED in workload_conditions(kubectl, "low"), "the low-priority one preempted")
    eventually(lambda: phase(kubectl, "high") == keys.PHASE_SUCCEEDED, "the high-priority AppWrapper succeeds")


def stop_product(kubectl: Kubectl) -> None:
    """Scale the product to nothing and wait until its pods are gone: every watch it held has then
    ended, which is when kube-apiserver's audit log records a watch."""
    kubectl.run("scale", "deployment", "--all", "-n", SYSTEM_NAMESPACE, "--replicas=0")
    eventually(lambda: not kubectl.get_json("pods", "-n", SYSTEM_NAMESPACE)["items"], "every product pod gone")


def requests_made(cluster: LocalCluster | RealCluster) -> Counter[RecordedRequest]:
    """Every request recorded so far: the real control plane's audit log once no request of the
    product's is open any more, or the stand-in's recorder."""
    if isinstance(cluster, RealCluster):
        users = {ServiceAccount(name).username for name in ACCOUNTS}
        eventually(lambda: not any(r.user in users for r in cluster.read_audit().open),
                   "every request of the product's accounts in the audit log as complete")
        return cluster.read_audit().completed
    assert cluster.authorizer.recorded is not None
    return Counter(cluster.authorizer.recorded)


@dataclass(frozen=True)
class Measured:
    recorded: Counter[RecordedRequest]
    kubectl: Kubectl
    kept: dict[str, dict[Right, str]]
    """Per account, the rights kept without being used in this run (RARE_PATHS, and on the real
    control plane OWNER_REFERENCE_CHECKS too)."""


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Measured]:
    workdir = tmp_path_factory.mktemp("least-privilege")
    with clusters.cluster(workdir / "cluster", users_file=DEMO_MANIFESTS / "users.yaml",
                          nodes=nodes_from_flags(4, "32", "256Gi", 8), run_images=[local_image()],
                          record_requests=True) as (cluster, kubectl):
        install_product(kubectl)
        kubectl.run("apply", "-f", str(DEMO_MANIFESTS / "teams.yaml"))
        kubectl.run("apply", "-f", str(DEMO_MANIFESTS / "queues.yaml"))
        drive_workload_mix(kubectl)
        clock = SystemClock()
        scenes(kubectl, Narrator(clock), clock, SAMPLES)
        # bob's wrapped RayCluster, from the Ray scene, deleted: its RayCluster goes with it.
        kubectl.run("delete", "appwrapper", "-n", "team-b", ray_scene.CLUSTER, "--wait=false", user="bob")
        eventually(lambda: phase(kubectl, ray_scene.CLUSTER, "team-b") == "<gone>", "bob's wrapped RayCluster deleted")
        stop_product(kubectl)
        real = isinstance(cluster, RealCluster)
        kept = {name: {**RARE_PATHS[name], **(OWNER_REFERENCE_CHECKS[name] if real else {})} for name in ACCOUNTS}
        # Read before the reviews below, which ask as the accounts and are recorded as theirs.
        yield Measured(requests_made(cluster), kubectl, kept)


@pytest.mark.parametrize("name", ACCOUNTS)
def test_a_product_service_account_is_never_denied_and_holds_no_right_it_does_not_use(
        measured: Measured, name: str) -> None:
    account = ServiceAccount(name)
    mine = [r for r in measured.recorded if r.user == account.username]
    assert mine, f"{name} made no request: is it running?"
    namespaces = {SYSTEM_NAMESPACE, TEAM} | {r.namespace for r in mine if r.namespace}
    found = compare(account, measured.recorded, granted_rights(measured.kubectl, account, namespaces),
                    measured.kept[name])
    assert not found.denied, f"{name} was denied: " + "; ".join(map(str, found.denied))
    assert not found.unused, f"{name} holds rights never used (and not kept): {found.unused}"


@pytest.mark.parametrize("name", ACCOUNTS)
def test_no_product_service_account_may_read_secrets_cluster_wide(measured: Measured, name: str) -> None:
    """What `kubectl auth can-i get secrets -A --as <account>` asks, judged by the cluster's own RBAC."""
    for verb in ("get", "list", "watch"):
        allowed, reason = may(measured.kubectl, ServiceAccount(name), verb, "secrets")
        assert not allowed, f"{name} may {verb} every Secret of the cluster: {reason}"


def test_the_controller_reads_secrets_only_in_team_namespaces_through_their_onboarding_binding(
        measured: Measured) -> None:
    controller = ServiceAccount("batchgate-controller")
    allowed, reason = may(measured.kubectl, controller, "get", "secrets", TEAM)
    assert allowed and "batchgate-controller-team" in reason, reason
    for namespace in (SYSTEM_NAMESPACE, "default", "kube-system"):
        allowed, reason = may(measured.kubectl, controller, "get", "secrets", namespace)
        assert not allowed, f"the controller may read Secrets in {namespace}: {reason}"
