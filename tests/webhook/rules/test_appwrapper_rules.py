"""Upstream AppWrapper validation semantics (its webhook's checks and their tests)."""

from __future__ import annotations

from typing import Any

import pytest

from batchgate.policy import parse_policy
from webhook.rules import appwrapper_rules
from tests.builders import (
    a_deployment, a_job, a_jobset, a_pod, a_pytorchjob, a_raycluster, a_rayjob, a_service, an_appwrapper, pod_template,
)

POLICY = parse_policy("""
allowedKinds:
  wrapped: [Job.batch, Pod, Deployment.apps, StatefulSet.apps, PyTorchJob.kubeflow.org, RayCluster.ray.io,
            RayJob.ray.io, JobSet.jobset.x-k8s.io, Service, ConfigMap, PodGroup.scheduling.x-k8s.io,
            Custom.example.com]
""")
CUSTOM = {"apiVersion": "example.com/v1", "kind": "Custom", "spec": {"pods": [pod_template(), pod_template()]}}


def errors_of(aw: Any) -> list[str]:
    return [str(e) for e in appwrapper_rules.validate_create(aw, "team-a", POLICY)]


@pytest.mark.parametrize(
    "aw",
    [
        pytest.param(an_appwrapper().with_pod().with_component(a_deployment().build())
                     .with_component(a_pod("p2", namespace="team-a").build())
                     .with_component(a_raycluster().build()).with_component(a_jobset().build()).build(),
                     id="five mixed components with inferred podSets"),
        pytest.param(an_appwrapper().with_job(replicas=8, gpus=8).build(), id="a job of eight gpu pods is one podSet"),
        pytest.param(an_appwrapper().with_component(a_job(parallelism=2, completions=4).build()).build(),
                     id="a job with parallelism below completions"),
        pytest.param(an_appwrapper().with_component(a_rayjob().build()).build(), id="a rayjob"),
        pytest.param(an_appwrapper().with_component(a_service().build()).with_pytorchjob(workers=3).build(),
                     id="a service beside a pytorchjob"),
        pytest.param(an_appwrapper().with_job(replicas=2, pod_sets=[{"path": "template.spec.template", "replicas": 2}])
                     .build(), id="declared podSets that match inference"),
        pytest.param(an_appwrapper().with_component(CUSTOM, pod_sets=[
            {"path": "template.spec.pods[0]"}, {"path": "template.spec.pods[1]", "replicas": 3}]).build(),
            id="a kind upstream cannot infer with declared podSets"),
        pytest.param(an_appwrapper().with_pod().with_pod().with_pod().with_pod().with_pod().with_pod()
                     .with_pod().with_pod().build(), id="exactly eight podSets"),
    ],
)
def test_valid_appwrappers(aw: dict[str, Any]) -> None:
    assert errors_of(aw) == []


@pytest.mark.parametrize(
    "aw, expected",
    [
        pytest.param(an_appwrapper().build(), "spec.components: components contains no podspecs",
                     id="no components at all"),
        pytest.param(an_appwrapper().with_component(a_service().build()).build(),
                     "spec.components: components contains no podspecs", id="only a service"),
        pytest.param(an_appwrapper().with_pod().with_pod().with_pod().with_pod().with_pod().with_pod().with_pod()
                     .with_pod().with_pod().build(),
                     "spec.components: components contains 9 podspecs; at most 8 are allowed", id="nine pods"),
        pytest.param(an_appwrapper().with_job(pod_sets=[{"path": ""}]).build(),
                     "spec.components[0].podSets[0].path: podspec must specify path", id="an empty path"),
        pytest.param(an_appwrapper().with_job(pod_sets=[{"path": "template.spec.template.metadata"}]).build(),
                     "spec.components[0].podSets[0].path: path 'template.spec.template.metadata'",
                     id="a path to the template's metadata"),
        pytest.param(an_appwrapper().with_job(pod_sets=[{"path": "template.spec.missing"}]).build(),
                     "path 'template.spec.missing': no field 'missing' at template.spec", id="a path to a missing field"),
        pytest.param(an_appwrapper().with_component(a_jobset().build(), pod_sets=[
            {"path": "template.spec.replicatedJobs.template.spec.template"}]).build(),
            "is not a map", id="a path that forgets the index"),
        pytest.param(an_appwrapper().with_component(a_jobset().build(), pod_sets=[
            {"path": "template.spec.replicatedJobs[10].template.spec.template"}]).build(),
            "index 10 out of bounds", id="an index out of bounds"),
        pytest.param(an_appwrapper().with_job(pod_sets=[{"path": "template.spec.template"}] * 2).build(),
                     "multiple DeclaredPodSets with path 'template.spec.template'", id="a duplicated path"),
        pytest.param(an_appwrapper().with_pytorchjob(workers=1, pod_sets=[
            {"path": "template.spec.pytorchReplicaSpecs.Master.template"}]).build(),
            "DeclaredPodSet count 1 differs from inferred count 2", id="fewer declared podSets than inferred"),
        pytest.param(an_appwrapper().with_job(replicas=4, pod_sets=[{"path": "template.spec.template", "replicas": 2}])
                     .build(), "spec.components[0].podSets[0].replicas: replica count 2 differs from inferred count 4",
                     id="declared replicas that disagree with the job"),
        pytest.param(an_appwrapper().with_component(a_pod().build(), pod_sets=[{"path": "template.spec"}]).build(),
                     "podSets[0].path: path 'template.spec' leads to a map without a spec",
                     id="a pod podSet pointing at the spec instead of the pod"),
        pytest.param(an_appwrapper().with_component(CUSTOM).build(), "components contains no podspecs",
                     id="a kind upstream cannot infer without declared podSets"),
        pytest.param(an_appwrapper().with_component(
            {**a_job().build(), "spec": {"template": {"spec": {"containers": [{"name": "a", "imagee": "x"}]}}}}).build(),
            "spec.components[0].template.spec.template.spec.containers[0].imagee: unknown field",
            id="an inferred template with an unknown pod field"),
        pytest.param(an_appwrapper().with_component(CUSTOM, pod_sets=[
            {"path": "template.spec.pods[0]"}]).with_component(
            {**CUSTOM, "spec": {"pods": [{"spec": {"containers": "x"}}]}}, pod_sets=[{"path": "template.spec.pods[0]"}])
            .build(), "spec.components[1].template.spec.pods[0].spec.containers: must be a list",
            id="a declared template with a malformed pod spec"),
        pytest.param(an_appwrapper().with_component(a_job().build()).build() | {"spec": {"components": [
            {"template": ["a", "list"]}]}}, "spec.components[0].template: failed to decode as an object",
            id="a template that is a list"),
        pytest.param({**an_appwrapper().build(), "spec": {"components": [{"template": "kind: Pod"}]}},
                     "spec.components[0].template: failed to decode", id="a template that is a string"),
        pytest.param({**an_appwrapper().build(), "spec": {"components": [{"template": {"metadata": {}}}]}},
                     "spec.components[0].template: must have apiVersion and kind", id="a template without a kind"),
        pytest.param({**an_appwrapper().build(), "spec": {"components": "all of them"}},
                     "spec.components: is required and must be a list", id="components that are a string"),
        pytest.param({**an_appwrapper().build(), "spec": None}, "spec: must be a mapping, got null", id="no spec"),
        pytest.param(an_appwrapper().with_component(
            {**a_deployment().build(), "spec": {"replicas": "two", "template": pod_template()}}).build(),
            "spec.components[0].template.spec.replicas: must be a non-negative integer", id="replicas that are text"),
        pytest.param(an_appwrapper().with_component(
            {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "spec": {}}).build(),
            "LeaderWorkerSet.leaderworkerset.x-k8s.io is not in allowedKinds.wrapped",
            id="a component kind the policy does not allow"),
    ],
)
def test_invalid_appwrappers(aw: Any, expected: str) -> None:
    errors = errors_of(aw)
    assert any(expected in e for e in errors), errors


def test_errors_are_aggregated_over_components() -> None:
    aw = (an_appwrapper().with_component(an_appwrapper("inner").build())
          .with_component(a_pod(namespace="elsewhere").build())
          .with_job(pod_sets=[{"path": "nope"}]).build())
    errors = errors_of(aw)
    assert [e.split(":")[0] for e in errors] == [
        "spec.components[0].template",
        "spec.components[1].template.metadata.namespace",
        "spec.components[2].podSets[0].path",
        "spec.components[2].podSets",  # and, as upstream, the inferred path is then missing
    ]


def test_a_pytorchjob_with_matching_declared_podsets() -> None:
    aw = an_appwrapper().with_component(a_pytorchjob(workers=2).build(), pod_sets=[
        {"path": "template.spec.pytorchReplicaSpecs.Master.template"},
        {"path": "template.spec.pytorchReplicaSpecs.Worker.template", "replicas": 2},
    ]).build()
    assert errors_of(aw) == []
