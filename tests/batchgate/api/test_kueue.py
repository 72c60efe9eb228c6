"""Kueue models parsed once: defaults as Kueue's, pod requests as Kubernetes computes them, and a
field path in every error."""

from __future__ import annotations

from decimal import Decimal

import pytest

from batchgate.api.kueue import ClusterQueue, FieldError, LocalQueue, Workload, validate_cluster_queue
from batchgate.api.pod_requests import pod_requests


def test_a_cluster_queue_gets_kueue_defaults() -> None:
    cq = ClusterQueue.from_dict({"metadata": {"name": "cq"}, "spec": {"resourceGroups": [
        {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [
            {"name": "cpu", "nominalQuota": "500m"}]}]}]}})
    assert cq.queueing_strategy == "BestEffortFIFO"
    assert cq.namespace_selector is None  # null selects no namespace
    assert (cq.preemption.within_cluster_queue, cq.preemption.reclaim_within_cohort) == ("Never", "Never")
    assert (cq.flavor_fungibility.when_can_borrow, cq.flavor_fungibility.when_can_preempt) == ("Borrow", "TryNextFlavor")
    assert cq.stop_policy == "None"
    assert cq.resource_groups[0].flavors[0].resources[0].nominal == Decimal("0.5")


def test_a_workload_keeps_its_admission_and_condition_times() -> None:
    wl = Workload.from_dict({
        "metadata": {"namespace": "team", "name": "wl", "creationTimestamp": "2025-01-01T00:00:00Z"},
        "spec": {"queueName": "lq", "priority": 5, "podSets": [
            {"count": 2, "template": {"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}}}]},
        "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "2"}, "count": 2}]},
            "conditions": [{"type": "QuotaReserved", "status": "True", "lastTransitionTime": "2025-01-01T00:01:00Z"}]}})
    assert wl.key == "team/wl" and wl.pod_sets[0].name == "main" and wl.pod_sets[0].total() == {"cpu": 2}
    assert wl.holds_quota and wl.admission is not None and wl.admission.cluster_queue == "cq"
    assert wl.condition("QuotaReserved").last_transition_time.minute == 1  # type: ignore[union-attr]


def test_a_local_queue_needs_its_cluster_queue() -> None:
    with pytest.raises(FieldError, match=r"^spec.clusterQueue: is required$"):
        LocalQueue.from_dict({"metadata": {"name": "lq", "namespace": "ns"}, "spec": {}})


def _container(requests: dict | None = None, limits: dict | None = None, **extra: object) -> dict:
    resources = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": "c", "resources": resources, **extra}


@pytest.mark.parametrize(("spec", "expected"), [
    pytest.param({"containers": [_container({"cpu": "1"}), _container({"cpu": "500m", "memory": "1Gi"})]},
                 {"cpu": Decimal("1.5"), "memory": Decimal(2**30)}, id="containers add up"),
    pytest.param({"containers": [_container(limits={"cpu": "2"})]}, {"cpu": Decimal(2)},
                 id="a limit stands in for a missing request"),
    pytest.param({"initContainers": [_container({"cpu": "4"})], "containers": [_container({"cpu": "1"})]},
                 {"cpu": Decimal(4)}, id="an init container larger than the containers sets the peak"),
    pytest.param({"initContainers": [_container({"cpu": "1"}, restartPolicy="Always"), _container({"cpu": "2"})],
                  "containers": [_container({"cpu": "1"})]},
                 {"cpu": Decimal(3)}, id="a sidecar runs beside later init containers and the containers"),
    pytest.param({"containers": [_container({"cpu": "1"})], "overhead": {"cpu": "250m"}}, {"cpu": Decimal("1.25")},
                 id="pod overhead is added"),
])
def test_pod_requests_follow_kubernetes(spec: dict, expected: dict) -> None:
    assert pod_requests(spec, "spec") == expected


@pytest.mark.parametrize(("raw", "path"), [
    pytest.param({"metadata": {"name": "w"}, "spec": {"podSets": []}}, "spec.podSets",
                 id="a workload without pod sets"),
    pytest.param({"metadata": {"name": "w"}, "spec": {"podSets": [{"count": "2"}]}}, "spec.podSets[0].count",
                 id="a pod count that is not an integer"),
    pytest.param({"metadata": {"name": "w"}, "spec": {"podSets": [{"template": {"spec": {"containers": [
        _container({"cpu": "-1"})]}}}]}}, "spec.podSets[0].template.spec.containers[0].resources.requests.cpu",
                 id="a negative request"),
    pytest.param({"metadata": {"name": "w"}, "spec": {"podSets": [{}, {}]}}, "spec.podSets",
                 id="two pod sets with the same name"),
    pytest.param({"metadata": {"name": "w", "creationTimestamp": "yesterday"}, "spec": {"podSets": [{}]}},
                 "metadata.creationTimestamp", id="a creation time that is not RFC 3339"),
    pytest.param({"metadata": {"name": "w"}, "spec": {"podSets": [{}]},
                  "status": {"conditions": [{"type": "Admitted", "status": "Yes"}]}},
                 "status.conditions[0].status", id="a condition status other than True, False, Unknown"),
])
def test_bad_workloads_name_the_field(raw: dict, path: str) -> None:
    with pytest.raises(FieldError) as err:
        Workload.from_dict(raw)
    assert err.value.path == path


@pytest.mark.parametrize(("spec", "path"), [
    pytest.param({"queueingStrategy": "LIFO"}, "spec.queueingStrategy", id="an unknown queueing strategy"),
    pytest.param({"preemption": {"withinClusterQueue": "Always"}}, "spec.preemption.withinClusterQueue",
                 id="an unknown preemption policy"),
    pytest.param({"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
        {"name": "f", "resources": [{"name": "cpu"}]}]}]},
        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", id="a missing nominal quota"),
])
def test_bad_cluster_queues_name_the_field(spec: dict, path: str) -> None:
    with pytest.raises(FieldError) as err:
        ClusterQueue.from_dict({"metadata": {"name": "cq"}, "spec": spec})
    assert err.value.path == path


def test_validation_checks_flavor_resources_and_duplicates() -> None:
    cq = ClusterQueue.from_dict({"metadata": {"name": "cq"}, "spec": {"resourceGroups": [
        {"coveredResources": ["cpu", "memory"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 1}]}]},
        {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 1}]}]}]}})
    assert [e.path for e in validate_cluster_queue(cq)] == [
        "spec.resourceGroups[0].flavors[0].resources", "spec.resourceGroups[1].coveredResources[0]",
        "spec.resourceGroups[1].flavors[0].name"]
