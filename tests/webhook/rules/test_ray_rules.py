"""Ray shapes the gateway refuses (webhook/rules/ray_rules.py), after KubeRay's ValidateRayClusterSpec
(ray-operator/controllers/ray/utils/validation.go) and Kueue's rule that a queued cluster does not
autoscale, with every problem named by its field; through the rules as a user's request meets them."""

from __future__ import annotations

import copy
from typing import Any, Callable

import pytest

from batchgate import keys
from batchgate.kinds import APPWRAPPER
from batchgate.policy import DEFAULT_POLICY
from webhook import rules
from webhook.rules.ray_rules import ray_shape_errors
from webhook.rules.review import AdmissionRequest, GroupVersionKind, UserInfo

CONTAINERS = {"spec": {"containers": [{"name": "c", "image": "ray"}]}}
CLUSTER_SPEC = {"headGroupSpec": {"template": CONTAINERS},
                "workerGroupSpecs": [{"groupName": "g", "replicas": 2, "minReplicas": 1, "maxReplicas": 3,
                                      "template": CONTAINERS}]}


def a_raycluster(change: Callable[[dict[str, Any]], Any] = lambda spec: None) -> dict[str, Any]:
    spec = copy.deepcopy(CLUSTER_SPEC)
    change(spec)
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "spec": spec,
            "metadata": {"name": "rc", "namespace": "team-a", "labels": {keys.QUEUE_NAME_LABEL: "q"}}}


def group(spec: dict[str, Any]) -> dict[str, Any]:
    return spec["workerGroupSpecs"][0]


CASES = [
    pytest.param(a_raycluster(), [], id="a well-formed cluster passes"),
    pytest.param(a_raycluster(lambda s: s.pop("headGroupSpec")),
                 ["spec.headGroupSpec.template.spec.containers: the head group needs at least one container"],
                 id="no head group"),
    pytest.param(a_raycluster(lambda s: group(s).update(replicas=5)),
                 ["spec.workerGroupSpecs[0].replicas: 5 is outside minReplicas..maxReplicas (1..3): KubeRay would "
                  "run a different count than the quota holds"], id="replicas above maxReplicas"),
    pytest.param(a_raycluster(lambda s: group(s).update(minReplicas=4)),
                 ["spec.workerGroupSpecs[0].minReplicas: 4 is greater than maxReplicas 3"], id="crossed min and max"),
    pytest.param(a_raycluster(lambda s: group(s).update(minReplicas=-1)),
                 ["spec.workerGroupSpecs[0].minReplicas: must not be negative, got -1"], id="a negative minimum"),
    pytest.param(a_raycluster(lambda s: group(s).pop("template")),
                 ["spec.workerGroupSpecs[0].template.spec.containers: a worker group needs at least one container"],
                 id="a worker group without a template"),
    pytest.param(a_raycluster(lambda s: s.update(enableInTreeAutoscaling=True)),
                 ["spec.enableInTreeAutoscaling: a queued Ray cluster cannot autoscale: the quota counts its replicas"],
                 id="in-tree autoscaling"),
    pytest.param(a_raycluster(lambda s: s.update(workerGroupSpecs="many")), ["spec.workerGroupSpecs: must be a list"],
                 id="worker groups that are not a list"),
]


@pytest.mark.parametrize("obj, expected", CASES)
def test_ray_shape_errors(obj: dict[str, Any], expected: list[str]) -> None:
    assert [str(e) for e in ray_shape_errors("RayCluster.ray.io", obj)] == expected


def test_a_rayjob_is_checked_at_its_cluster_spec_unless_it_selects_a_cluster() -> None:
    job = {"spec": {"rayClusterSpec": {"workerGroupSpecs": []}}}
    assert [e.path for e in ray_shape_errors("RayJob.ray.io", job)] == [
        "spec.rayClusterSpec.headGroupSpec.template.spec.containers"]
    assert ray_shape_errors("RayJob.ray.io", {"spec": {"clusterSelector": {"ray.io/cluster": "shared"}}}) == []
    assert [str(e) for e in ray_shape_errors("RayJob.ray.io", {"spec": {}})] == [
        "spec.rayClusterSpec: a Ray cluster spec is required"]


def request(obj: dict[str, Any], group_: str, kind: str) -> AdmissionRequest:
    version = str(obj["apiVersion"]).rpartition("/")[2]
    return AdmissionRequest(uid="u", kind=GroupVersionKind(group_, version, kind), operation="CREATE",
                            user=UserInfo("alice", "1001", ("system:authenticated",)), namespace="team-a", name="x",
                            object=obj)


def test_alice_is_refused_a_raycluster_kuberay_cannot_run_as_counted() -> None:
    bad = a_raycluster(lambda s: group(s).update(replicas=5))
    mutated = rules.mutate(request(bad, "ray.io", "RayCluster"), DEFAULT_POLICY).object
    verdict = rules.validate(request(mutated, "ray.io", "RayCluster"), DEFAULT_POLICY)
    assert not verdict.allowed and verdict.reason == "InvalidRayCluster"
    assert "spec.workerGroupSpecs[0].replicas: 5 is outside" in verdict.message


def test_a_wrapped_raycluster_is_checked_at_its_component_path() -> None:
    aw = {"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper",
          "metadata": {"name": "aw", "namespace": "team-a"},
          "spec": {"components": [{"template": {**a_raycluster(lambda s: s.pop("headGroupSpec")),
                                                "metadata": {"name": "rc"}}}]}}
    mutated = rules.mutate(request(aw, APPWRAPPER.group, "AppWrapper"), DEFAULT_POLICY).object
    verdict = rules.validate(request(mutated, APPWRAPPER.group, "AppWrapper"), DEFAULT_POLICY)
    assert not verdict.allowed
    assert "spec.components[0].template.spec.headGroupSpec.template.spec.containers" in verdict.message
