"""The shipped validating webhook polices workload kinds and never the control plane's own writes;
the mutating one gets every queued kind too.

A rule matching every namespaced resource made the gateway deny the Endpoints, EndpointSlices,
Events and ServiceAccounts Kubernetes writes into each managed namespace (they have no owner, so
they read as top-level kinds outside `allowedKinds.topLevel`). The rules are matched here with the
local cluster's kube-apiserver-faithful matcher.
"""

from __future__ import annotations

import pytest

from batchgate import kinds
from localcluster.apiserver.admission_match import AdmissionAttributes, webhook_matches
from tests.manifests.kustomize import webhook_documents


VALIDATE = ("ValidatingWebhookConfiguration", "workloads.validate.batchgate.dev")
MUTATE = ("MutatingWebhookConfiguration", "workloads.mutate.batchgate.dev")


def workloads_hook(which: tuple[str, str] = VALIDATE) -> dict:
    kind, name = which
    (hook,) = [h for d in webhook_documents() if d["kind"] == kind for h in d["webhooks"] if h["name"] == name]
    return hook


def sent(group: str, version: str, resource: str, operation: str = "CREATE", namespace: str = "team-a",
         team: bool = True, which: tuple[str, str] = VALIDATE) -> bool:
    attrs = AdmissionAttributes(operation, group, version, "", resource, "", namespace, "x", {})
    labels = {"kubernetes.io/metadata.name": namespace, **({"mlbatch-team-namespace": "true"} if team else {})}
    return webhook_matches(workloads_hook(which), attrs, {}, None, labels)


@pytest.mark.parametrize(("group", "version", "resource"), [
    pytest.param("", "v1", "events", id="core Events"),
    pytest.param("events.k8s.io", "v1", "events", id="events.k8s.io Events"),
    pytest.param("", "v1", "endpoints", id="Endpoints"),
    pytest.param("discovery.k8s.io", "v1", "endpointslices", id="EndpointSlices"),
    pytest.param("", "v1", "serviceaccounts", id="the namespace's default ServiceAccount"),
    pytest.param("coordination.k8s.io", "v1", "leases", id="Leases"),
    pytest.param("apps", "v1", "controllerrevisions", id="a StatefulSet's ControllerRevisions"),
    pytest.param("", "v1", "configmaps", id="the kube-root-ca.crt ConfigMap"),
    pytest.param("kueue.x-k8s.io", "v1beta1", "workloads", id="the controller's Workloads"),
    pytest.param("scheduling.x-k8s.io", "v1alpha1", "podgroups", id="the controller's PodGroups"),
])
def test_what_the_control_plane_writes_never_reaches_the_kind_policy(group: str, version: str, resource: str) -> None:
    assert not sent(group, version, resource)


@pytest.mark.parametrize(("group", "version", "resource"), [
    pytest.param("workload.codeflare.dev", "v1beta2", "appwrappers", id="AppWrappers"),
    pytest.param("batch", "v1", "jobs", id="Jobs"),
    pytest.param("batch", "v1", "cronjobs", id="CronJobs, denied by default"),
    pytest.param("apps", "v1", "deployments", id="Deployments, denied at top level by default"),
    pytest.param("apps", "v1", "statefulsets", id="StatefulSets"),
    pytest.param("kubeflow.org", "v1", "pytorchjobs", id="PyTorchJobs"),
    pytest.param("kubeflow.org", "v2beta1", "mpijobs", id="MPIJobs, denied by default"),
    pytest.param("ray.io", "v1", "rayclusters", id="RayClusters"),
    pytest.param("jobset.x-k8s.io", "v1alpha2", "jobsets", id="JobSets, denied by default"),
    pytest.param("leaderworkerset.x-k8s.io", "v1", "leaderworkersets", id="LeaderWorkerSets, denied by default"),
])
def test_every_workload_kind_is_policed_on_create_and_update(group: str, version: str, resource: str) -> None:
    assert sent(group, version, resource, "CREATE") and sent(group, version, resource, "UPDATE")


def test_system_namespaces_are_never_policed() -> None:
    assert not sent("batch", "v1", "jobs", namespace="kube-system")


def test_a_namespace_that_has_not_opted_in_is_never_policed() -> None:
    assert not sent("apps", "v1", "deployments", namespace="monitoring", team=False)


@pytest.mark.parametrize("which", [VALIDATE, MUTATE], ids=["policed", "mutated"])
@pytest.mark.parametrize("kind", kinds.QUEUED.values(), ids=lambda k: k.qualified)
def test_every_queued_kind_is_policed_and_mutated_on_create_and_update(kind: kinds.Kind, which: tuple[str, str]) -> None:
    """A kind added to the registry (docs/kinds.md) needs its rule in both of the gateway's
    webhooks: without the mutating one it would be created unsuspended, with no queue label."""
    assert all(sent(kind.group, kind.version, kind.plural, op, which=which) for op in ("CREATE", "UPDATE")), \
        f"{which[1]} gets no {kind.plural}.{kind.group}: add a rule in manifests/webhook/gateway.yaml"


def pods_sent(operation: str) -> bool:
    (config,) = [d for d in webhook_documents() if d["kind"] == "ValidatingWebhookConfiguration"]
    (hook,) = [h for h in config["webhooks"] if h["name"] == "pods.validate.batchgate.dev"]
    attrs = AdmissionAttributes(operation, "", "v1", "", "pods", "", "team-a", "x", {})
    labels = {"kubernetes.io/metadata.name": "team-a", "mlbatch-team-namespace": "true"}
    return webhook_matches(hook, attrs, {}, None, labels)


def test_pods_go_to_their_own_webhook_on_create_only() -> None:
    """The rules refuse a Pod only on CREATE (for its kind); its matchConditions are tested in
    test_pod_webhook_scope.py."""
    assert pods_sent("CREATE") and not pods_sent("UPDATE") and not sent("", "v1", "pods")
