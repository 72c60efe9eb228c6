"""The KubeRay stand-in's RayCluster decisions, as ray-project/kuberay's operator makes them
(ray-operator/controllers/ray/raycluster_controller.go reconcilePods and calculateStatus,
utils/util.go GetWorkerGroupDesiredReplicas, utils/validation.go ValidateRayClusterSpec).

We test these aspects: one head and each group's clamped replica count of workers, with KubeRay's
names and labels and the head Service; an ended pod is replaced; extra workers go; suspend removes
every pod; status state and counts; a spec KubeRay refuses makes nothing and says why.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from batchgate.kinds import RAYCLUSTER
from localcluster.sim.rayclusters import head_service, reconcile_raycluster, worker_groups

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def container(name: str = "ray") -> dict[str, Any]:
    return {"name": name, "image": "rayproject/ray:2.9.0"}


def a_cluster(replicas: int | None = 2, *, low: int | None = None, high: int | None = None, suspend: bool = False,
              group_suspend: bool = False, hosts: int | None = None) -> dict[str, Any]:
    group: dict[str, Any] = {"groupName": "gpu", "template": {"metadata": {"labels": {"team": "a"}},
                                                              "spec": {"containers": [container()]}}}
    for key, value in (("replicas", replicas), ("minReplicas", low), ("maxReplicas", high), ("numOfHosts", hosts)):
        if value is not None:
            group[key] = value
    if group_suspend:
        group["suspend"] = True
    spec: dict[str, Any] = {"headGroupSpec": {"template": {"spec": {"containers": [container()]}}},
                            "workerGroupSpecs": [group]}
    if suspend:
        spec["suspend"] = True
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "rc", "namespace": "ns", "uid": "u1", "generation": 1}, "spec": spec}


def a_pod(name: str, node_type: str, group: str, phase: str = "Running", ready: bool = True,
          created: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    return {"metadata": {"name": name, "creationTimestamp": created,
                         "labels": {"ray.io/node-type": node_type, "ray.io/group": group, "ray.io/cluster": "rc"},
                         "ownerReferences": [{"kind": "RayCluster", "name": "rc", "uid": "u1", "controller": True}]},
            "status": {"phase": phase, "podIP": "10.0.0.1",
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


HEAD = a_pod("rc-head-abcde", "head", "headgroup")


def workers(count: int, **kw: Any) -> list[dict[str, Any]]:
    return [a_pod(f"rc-gpu-worker-{i:05d}", "worker", "gpu", created=f"2026-01-01T00:00:0{i}Z", **kw) for i in range(count)]


@pytest.mark.parametrize("cluster, expected", [
    pytest.param(a_cluster(2), 2, id="replicas within range"),
    pytest.param(a_cluster(5, high=3), 3, id="replicas above maxReplicas are clamped down"),
    pytest.param(a_cluster(0, low=1), 1, id="replicas below minReplicas are clamped up"),
    pytest.param(a_cluster(None, low=2), 2, id="no replicas means minReplicas"),
    pytest.param(a_cluster(2, hosts=2), 4, id="numOfHosts multiplies"),
    pytest.param(a_cluster(2, group_suspend=True), 0, id="a suspended worker group wants none"),
])
def test_desired_workers(cluster: dict[str, Any], expected: int) -> None:
    assert worker_groups(cluster["spec"])[0].desired == expected


@pytest.mark.parametrize("cluster", [
    pytest.param(a_cluster(3), id="single-host workers"),
    pytest.param(a_cluster(2, hosts=4), id="multi-host workers"),
])
def test_the_pods_made_are_the_pods_the_kind_registry_counts(cluster: dict[str, Any]) -> None:
    """The quota and gang of a RayCluster (batchgate/kinds/raycluster.py) are for the pods KubeRay makes.
    (Unset replicas never reach either: the CRD defaults them to 0.)"""
    counted = sum(pod_set.replicas for pod_set in RAYCLUSTER.pod_sets(cluster))
    assert len(reconcile_raycluster(cluster, [], [], NOW).create_pods) == counted


def test_a_new_cluster_gets_its_head_its_workers_and_the_head_service() -> None:
    step = reconcile_raycluster(a_cluster(2), [], [], NOW)
    names = [p["metadata"]["generateName"] for p in step.create_pods]
    assert names == ["rc-head-", "rc-gpu-worker-", "rc-gpu-worker-"]
    worker = step.create_pods[1]["metadata"]["labels"]
    assert worker == {"team": "a", "ray.io/cluster": "rc", "ray.io/node-type": "worker", "ray.io/group": "gpu",
                      "ray.io/is-ray-node": "yes", "ray.io/identifier": "rc-worker",
                      "app.kubernetes.io/name": "kuberay", "app.kubernetes.io/created-by": "kuberay-operator"}
    assert step.create_pods[0]["metadata"]["labels"]["ray.io/group"] == "headgroup"
    [service] = step.create_services
    assert service["metadata"]["name"] == "rc-head-svc"
    assert [(p["name"], p["port"]) for p in service["spec"]["ports"]] == [
        ("client", 10001), ("gcs-server", 6379), ("dashboard", 8265), ("metrics", 8080)]
    assert service["spec"]["selector"] == {"ray.io/cluster": "rc", "ray.io/node-type": "head"}
    assert step.status["desiredWorkerReplicas"] == 2 and "state" not in step.status


def test_a_running_and_ready_cluster_is_ready_with_its_head_and_endpoints() -> None:
    service = {**head_service(a_cluster()), "spec": {**head_service(a_cluster())["spec"], "clusterIP": "10.96.0.7"}}
    step = reconcile_raycluster(a_cluster(2), [HEAD, *workers(2)], [service], NOW)
    assert (step.create_pods, step.delete_pods, step.create_services) == ([], [], [])
    assert step.status["state"] == "ready"
    assert step.status["head"] == {"podName": "rc-head-abcde", "podIP": "10.0.0.1", "serviceName": "rc-head-svc",
                                   "serviceIP": "10.96.0.7"}
    assert step.status["endpoints"] == {"client": "10001", "gcs-server": "6379", "dashboard": "8265", "metrics": "8080"}
    assert (step.status["availableWorkerReplicas"], step.status["readyWorkerReplicas"]) == (2, 2)
    assert step.status["stateTransitionTimes"] == {"ready": "2026-01-01T00:00:00Z"}


def test_a_worker_that_is_not_ready_keeps_the_cluster_from_being_ready() -> None:
    step = reconcile_raycluster(a_cluster(2), [HEAD, *workers(1), a_pod("rc-gpu-worker-x", "worker", "gpu", ready=False)],
                                [head_service(a_cluster())], NOW)
    assert "state" not in step.status and step.status["availableWorkerReplicas"] == 2


@pytest.mark.parametrize("pods, creates, deletes", [
    pytest.param([HEAD, *workers(1)], ["rc-gpu-worker-"], [], id="a missing worker is made again"),
    pytest.param([HEAD, *workers(3)], [], ["rc-gpu-worker-00002"], id="the newest extra worker goes"),
    pytest.param([a_pod("rc-head-old", "head", "headgroup", phase="Failed"), *workers(2)], ["rc-head-"],
                 ["rc-head-old"], id="an ended head is deleted and made again"),
    pytest.param([HEAD, *workers(1), a_pod("rc-gpu-worker-f", "worker", "gpu", phase="Succeeded")], ["rc-gpu-worker-"],
                 ["rc-gpu-worker-f"], id="an ended worker is replaced"),
])
def test_pods_follow_the_spec(pods: list[dict[str, Any]], creates: list[str], deletes: list[str]) -> None:
    step = reconcile_raycluster(a_cluster(2), pods, [head_service(a_cluster())], NOW)
    assert [p["metadata"]["generateName"] for p in step.create_pods] == creates
    assert step.delete_pods == deletes


def test_suspend_deletes_every_pod_and_reports_suspended_once_they_are_gone() -> None:
    step = reconcile_raycluster(a_cluster(2, suspend=True), [HEAD, *workers(2)], [], NOW)
    assert sorted(step.delete_pods) == ["rc-gpu-worker-00000", "rc-gpu-worker-00001", "rc-head-abcde"]
    assert step.create_pods == [] and "state" not in step.status
    assert reconcile_raycluster(a_cluster(2, suspend=True), [], [], NOW).status["state"] == "suspended"


@pytest.mark.parametrize("mutate, message", [
    pytest.param(lambda c: c["spec"].pop("headGroupSpec"), "headGroupSpec should have at least one container",
                 id="no head group"),
    pytest.param(lambda c: c["spec"]["workerGroupSpecs"][0].update(minReplicas=3, maxReplicas=1),
                 "worker group gpu has minReplicas 3 greater than maxReplicas 1", id="min above max"),
    pytest.param(lambda c: c["spec"]["workerGroupSpecs"][0].update(minReplicas=-1),
                 "worker group gpu has negative minReplicas -1", id="a negative minimum"),
    pytest.param(lambda c: c["spec"]["workerGroupSpecs"][0]["template"]["spec"].update(containers=[]),
                 "workerGroupSpec should have at least one container", id="a worker group without containers"),
])
def test_a_spec_kuberay_refuses_makes_nothing_and_says_why_once(mutate: Any, message: str) -> None:
    cluster = a_cluster(2)
    mutate(cluster)
    step = reconcile_raycluster(cluster, [], [], NOW)
    assert (step.create_pods, step.create_services) == ([], [])
    assert [(e.type, e.reason, e.message) for e in step.events] == [("Warning", "InvalidRayClusterSpec", message)]
    cluster["status"] = step.status
    assert reconcile_raycluster(cluster, [], [], NOW).events == [], "the Warning is not repeated every sync"
