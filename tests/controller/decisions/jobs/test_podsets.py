"""PodSets of each queued kind: names, counts and template locations as Kueue's integrations make them."""

from __future__ import annotations

from typing import Any

import pytest

from batchgate.kinds import QUEUED
from controller.decisions.jobs.podsets import PodSetError, pod_sets
from tests.controller.builders import a_job, a_pytorch_appwrapper, a_pytorchjob, stored_sample
from tests.upstream_corpus import corpus_param


def shape(obj: dict[str, Any]) -> list[tuple[str, int, str]]:
    sets = pod_sets(obj, QUEUED[obj["kind"]])
    return [(ps.name, ps.count, ".".join(map(str, ps.path or ("<default>",)))) for ps in sets]


def ray_cluster_spec() -> dict[str, Any]:
    pod = {"spec": {"containers": [{"name": "ray"}]}}
    return {"headGroupSpec": {"template": pod},
            "workerGroupSpecs": [{"groupName": "Small", "replicas": 3, "template": pod},
                                 {"groupName": "multi", "replicas": 2, "numOfHosts": 4, "template": pod}]}


@pytest.mark.parametrize(
    "obj,expected",
    [
        pytest.param(a_job(parallelism=4), [("main", 4, "spec.template")], id="a Job runs parallelism pods"),
        pytest.param(a_job(parallelism=4, completions=2), [("main", 2, "spec.template")],
                     id="a Job never runs more pods than completions"),
        pytest.param(a_job(parallelism=None), [("main", 1, "spec.template")], id="a Job without parallelism runs one pod"),
        pytest.param(a_pytorchjob(),
                     [("master", 1, "spec.pytorchReplicaSpecs.Master.template"),
                      ("worker", 2, "spec.pytorchReplicaSpecs.Worker.template")],
                     id="a PyTorchJob has a master then a worker podSet"),
        pytest.param({"kind": "RayCluster", "metadata": {"name": "rc"}, "spec": ray_cluster_spec()},
                     [("head", 1, "spec.headGroupSpec.template"), ("small", 3, "spec.workerGroupSpecs.0.template"),
                      ("multi", 8, "spec.workerGroupSpecs.1.template")],
                     id="a RayCluster has a head and one podSet per worker group, hosts multiplying replicas"),
        pytest.param({"kind": "RayJob", "metadata": {"name": "rj"}, "spec": {"rayClusterSpec": ray_cluster_spec()}},
                     [("head", 1, "spec.rayClusterSpec.headGroupSpec.template"),
                      ("small", 3, "spec.rayClusterSpec.workerGroupSpecs.0.template"),
                      ("multi", 8, "spec.rayClusterSpec.workerGroupSpecs.1.template"),
                      ("submitter", 1, "<default>")],
                     id="a RayJob in K8sJobMode adds the default submitter pod"),
        pytest.param({"kind": "RayJob", "metadata": {"name": "rj"},
                      "spec": {"submissionMode": "HTTPMode", "rayClusterSpec": ray_cluster_spec()}},
                     [("head", 1, "spec.rayClusterSpec.headGroupSpec.template"),
                      ("small", 3, "spec.rayClusterSpec.workerGroupSpecs.0.template"),
                      ("multi", 8, "spec.rayClusterSpec.workerGroupSpecs.1.template")],
                     id="a RayJob in HTTPMode has no submitter pod"),
        pytest.param(a_pytorch_appwrapper(),
                     [("resnet-ddp-0", 1, "spec.components.0.template.spec.pytorchReplicaSpecs.Master.template"),
                      ("resnet-ddp-1", 2, "spec.components.0.template.spec.pytorchReplicaSpecs.Worker.template")],
                     id="an AppWrapper infers the podSets of a wrapped PyTorchJob"),
        pytest.param(stored_sample("alice/appwrapper-job.yaml"),
                     [("fine-tune-0", 1, "spec.components.0.template.spec.template")],
                     id="an AppWrapper infers the podSet of a wrapped Job"),
        corpus_param("appwrapper/wrapped-leader-worker-set.yaml",
                     [("sample-lws-0", 2, "spec.components.0.template.spec.leaderWorkerTemplate.leaderTemplate"),
                      ("sample-lws-1", 3, "spec.components.0.template.spec.leaderWorkerTemplate.workerTemplate")],
                     id="upstream's LeaderWorkerSet AppWrapper uses its declared podSets for a kind it cannot infer"),
    ],
)
def test_pod_sets(obj: dict[str, Any], expected: list[tuple[str, int, str]]) -> None:
    assert shape(obj) == expected


@pytest.mark.parametrize(
    "obj,message",
    [
        pytest.param({"kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": {}}},
                     "spec.pytorchReplicaSpecs: no pod templates", id="a PyTorchJob without replicas is refused"),
        pytest.param({"kind": "Job", "spec": {"parallelism": -1, "template": {"spec": {}}}},
                     "spec.parallelism: must be a non-negative integer, got -1", id="a negative parallelism is refused"),
        pytest.param({"kind": "Job", "spec": {}}, "spec.template: no pod template", id="a Job without a template is refused"),
        pytest.param({"kind": "AppWrapper", "metadata": {"name": "aw"}, "spec": {"components": [
            {"template": {"apiVersion": "v1", "kind": "Service"}}]}},
                     "spec.components: no pod templates", id="an AppWrapper without pods is refused"),
        pytest.param({"kind": "AppWrapper", "metadata": {"name": "aw"}, "spec": {"components": [
            {"template": {"apiVersion": "x/v1", "kind": "X", "spec": {}}, "podSets": [{"path": "template.spec.pods[0]"}]}]}},
                     "spec.components[0].template.spec.pods[0]: no pod template",
                     id="a declared podSet path that leads nowhere is named"),
        pytest.param({"kind": "AppWrapper", "metadata": {"name": "aw"}, "spec": {"components": [
            {"template": {"apiVersion": "x/v1", "kind": "X", "spec": {}}, "podSets": [{"path": "spec.template"}]}]}},
                     None, id="a declared podSet path not starting at the template is refused"),
    ],
)
def test_bad_jobs_name_the_field(obj: dict[str, Any], message: str | None) -> None:
    with pytest.raises(PodSetError) as info:
        pod_sets(obj, QUEUED[obj["kind"]])
    if message is not None:
        assert str(info.value) == message
    else:
        assert str(info.value).startswith("spec.components[0].podSets[0].path")
