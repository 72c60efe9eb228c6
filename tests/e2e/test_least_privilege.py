"""Least privilege, measured (issue 13 item 5): install the product as `test_install.py` does, on a
cluster that records every authorization decision, drive a representative workload mix as alice
and then every scene of the demo (`demo.main.scenes`, the same code `make demo` runs), then compare per product service account what it asked for with what its roles grant.

The grants are expanded with the local cluster's own RBAC matching (`localcluster.rbac`): a
request no bound rule allows is a denial; a (verb, group, resource) a rule grants and nobody used
is an excess right, unless `RARE_PATHS` says why it is kept.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from batchgate import keys
from batchgate.clock import SystemClock
from demo.samples_scene import SAMPLES
from demo.kubectl import Kubectl
from demo.main import scenes
from demo.narration import Narrator
from demo.stack import DEMO_MANIFESTS, SYSTEM_NAMESPACE, install_product, local_image
from localcluster.authorization import RecordedRequest
from localcluster.controllers import DEFAULT_CONTROLLERS
from localcluster.rbac.authorizer import Policy, authorize, grants
from localcluster.rbac.rules import Attributes, rule_allows
from localcluster.runner import LocalCluster
from localcluster.sim.behavior import BEHAVIOR_ANNOTATION
from localcluster.sim.nodes import nodes_from_flags
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
        "tests/controller/test_slack_queue_cluster.py runs it as this account)",
    },
    "batchgate-webhook": {
        ("update", "", "secrets"): "the serving certificate renewed before expiry, or its Secret repaired",
    },
}
"""Rights kept although the scenario did not use them, each with the path that needs it."""


@dataclass(frozen=True)
class ServiceAccount:
    """The identity the API server gives a product pod's token."""

    name: str
    groups: tuple[str, ...] = ("system:serviceaccounts", f"system:serviceaccounts:{SYSTEM_NAMESPACE}",
                               "system:authenticated")

    @property
    def username(self) -> str:
        return f"system:serviceaccount:{SYSTEM_NAMESPACE}:{self.name}"

    def alone(self) -> ServiceAccount:
        """Without its groups: what the product's own bindings give it, not every user's basics."""
        return dataclasses.replace(self, groups=())


@dataclass(frozen=True)
class Comparison:
    denied: list[RecordedRequest]
    unused: list[Right]


def right(request: RecordedRequest) -> Right:
    resource = f"{request.resource}/{request.subresource}" if request.subresource else request.resource
    return request.verb, request.api_group, resource


def granted_rights(account: ServiceAccount, namespaces: set[str], policy: Policy) -> set[Right]:
    """Every literal (verb, group, resource) the account's bindings grant in these namespaces."""
    found: set[Right] = set()
    for namespace in namespaces:
        for grant in grants(account, namespace, policy)[0]:
            rule = grant.rule
            found |= {(v, g, r) for v in rule.verbs for g in rule.api_groups for r in rule.resources}
    return found


def allowed_by_some_name(account: ServiceAccount, request: RecordedRequest, policy: Policy) -> bool:
    """Whether a bound rule allows the request for some object name: the recorder keeps no name,
    so a rule limited by resourceNames counts (the API server itself judged the name)."""
    attrs = Attributes(verb=request.verb, api_group=request.api_group, resource=request.resource,
                       subresource=request.subresource, namespace=request.namespace)
    return any(rule_allows(attrs, dataclasses.replace(g.rule, resource_names=()))
               for g in grants(account, request.namespace, policy)[0])


def compare(account: ServiceAccount, recorded: Counter[RecordedRequest], policy: Policy) -> Comparison:
    mine = [r for r in recorded if r.user == account.username]
    denied = sorted((r for r in mine if not allowed_by_some_name(account, r, policy)), key=str)
    namespaces = {"", SYSTEM_NAMESPACE, TEAM} | {r.namespace for r in mine}
    used = {right(r) for r in mine}
    unused = sorted(granted_rights(account.alone(), namespaces, policy) - used - set(RARE_PATHS[account.name]))
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
    return {"apiVersion": keys.APPWRAPPER_API_VERSION, "kind": "AppWrapper",
            "metadata": {"name": name, "namespace": TEAM, "labels": labels or {}},
            "spec": {"components": [{"template": c} for c in components]}}


def pytorchjob(name: str, seconds: int) -> dict[str, Any]:
    def replicas(count: int) -> dict[str, Any]:
        return {"replicas": count, "restartPolicy": "Never",
                "template": {"metadata": running_for(seconds), "spec": {"containers": [container("pytorch")]}}}
    return {"apiVersion": keys.KUBEFLOW_API_VERSION, "kind": "PyTorchJob", "metadata": {"name": name},
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


def phase(kubectl: Kubectl, name: str) -> str:
    done = kubectl.run("get", "appwrapper", "-n", TEAM, name, "-o", "json", check=False)
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


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Counter[RecordedRequest], Policy]]:
    workdir = tmp_path_factory.mktemp("least-privilege")
    with LocalCluster(workdir / "cluster", users_file=DEMO_MANIFESTS / "users.yaml", controllers=DEFAULT_CONTROLLERS,
                      nodes=nodes_from_flags(4, "32", "256Gi", 8), run_images=[local_image()],
                      record_requests=True) as cluster:
        kubectl = Kubectl(cluster.kubeconfig)
        install_product(kubectl)
        kubectl.run("apply", "-f", str(DEMO_MANIFESTS / "teams.yaml"))
        kubectl.run("apply", "-f", str(DEMO_MANIFESTS / "queues.yaml"))
        drive_workload_mix(kubectl)
        clock = SystemClock()
        scenes(kubectl, Narrator(clock), clock, SAMPLES)
        recorded = cluster.authorizer.recorded
        assert recorded is not None
        yield Counter(recorded), cluster.authorizer.policy()


@pytest.mark.parametrize("name", ACCOUNTS)
def test_a_product_service_account_is_never_denied_and_holds_no_right_it_does_not_use(
        measured: tuple[Counter[RecordedRequest], Policy], name: str) -> None:
    recorded, policy = measured
    account = ServiceAccount(name)
    assert any(r.user == account.username for r in recorded), f"{name} made no request: is it running?"
    found = compare(account, recorded, policy)
    assert not found.denied, f"{name} was denied: " + "; ".join(map(str, found.denied))
    assert not found.unused, f"{name} holds rights never used (and not in RARE_PATHS): {found.unused}"


@pytest.mark.parametrize("name", ACCOUNTS)
def test_no_product_service_account_may_read_secrets_cluster_wide(
        measured: tuple[Counter[RecordedRequest], Policy], name: str) -> None:
    """What `kubectl auth can-i get secrets -A --as <account>` asks, judged by the cluster's own RBAC."""
    _, policy = measured
    for verb in ("get", "list", "watch"):
        decision = authorize(ServiceAccount(name), Attributes(verb=verb, resource="secrets"), policy)
        assert not decision.allowed, f"{name} may {verb} every Secret of the cluster: {decision.reason}"


def test_the_controller_reads_secrets_only_in_team_namespaces_through_their_onboarding_binding(
        measured: tuple[Counter[RecordedRequest], Policy]) -> None:
    _, policy = measured
    controller = ServiceAccount("batchgate-controller")
    in_team = authorize(controller, Attributes(verb="get", resource="secrets", namespace=TEAM), policy)
    assert in_team.allowed and "batchgate-controller-team" in in_team.reason, in_team.reason
    for namespace in (SYSTEM_NAMESPACE, "default", "kube-system"):
        elsewhere = authorize(controller, Attributes(verb="get", resource="secrets", namespace=namespace), policy)
        assert not elsewhere.allowed, f"the controller may read Secrets in {namespace}: {elsewhere.reason}"
