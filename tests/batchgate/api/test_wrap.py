"""Wrapping resources into an AppWrapper: the podSets declared for kinds upstream does not infer,
and what stops a document from being a component at all."""

from __future__ import annotations

from typing import Any

import pytest

from batchgate.api.errors import FieldError
from batchgate.api.pod_templates import find_pod_templates
from batchgate.kinds.wrapped import pod_sets_to_declare
from batchgate.api.paths import format_steps
from batchgate.api.wrap import Wrapping, component, default_name, stated_namespace, wrap
from tests.builders import a_job, a_pod, a_pytorchjob, a_service, pod_template


def lws(replicas: int | None = 2, size: int | None = 3, leader: bool = True) -> dict[str, Any]:
    group: dict[str, Any] = {"workerTemplate": pod_template()}
    if leader:
        group["leaderTemplate"] = pod_template()
    if size is not None:
        group["size"] = size
    spec: dict[str, Any] = {"leaderWorkerTemplate": group}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "lws"},
            "spec": spec}


def kubeflow(kind: str, api_version: str, specs: str, **roles: int) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": kind.lower()},
            "spec": {"runPolicy": {"cleanPodPolicy": "None"},
                     specs: {role: {"replicas": n, "template": pod_template()} for role, n in roles.items()}}}


def cronjob() -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"},
            "spec": {"schedule": "0 0 * * *", "jobTemplate": {"spec": {"template": pod_template()}}}}


@pytest.mark.parametrize(("obj", "expected"), [
    pytest.param(lws(), [("template.spec.leaderWorkerTemplate.leaderTemplate", 2),
                         ("template.spec.leaderWorkerTemplate.workerTemplate", 4)],
                 id="a leader-worker set of 2 groups of 3 runs 2 leaders and 4 workers"),
    pytest.param(lws(leader=False), [("template.spec.leaderWorkerTemplate.workerTemplate", 6)],
                 id="without a leader template the worker template makes the leaders too"),
    pytest.param(lws(replicas=None, size=None), [("template.spec.leaderWorkerTemplate.leaderTemplate", 1)],
                 id="one group of one pod by default: a leader alone"),
    pytest.param(kubeflow("TFJob", "kubeflow.org/v1", "tfReplicaSpecs", Chief=1, PS=2, Worker=4),
                 [("template.spec.tfReplicaSpecs.Chief.template", 1), ("template.spec.tfReplicaSpecs.PS.template", 2),
                  ("template.spec.tfReplicaSpecs.Worker.template", 4)],
                 id="a TFJob declares each role in the order written"),
    pytest.param(kubeflow("MPIJob", "kubeflow.org/v2beta1", "mpiReplicaSpecs", Launcher=1, Worker=8),
                 [("template.spec.mpiReplicaSpecs.Launcher.template", 1),
                  ("template.spec.mpiReplicaSpecs.Worker.template", 8)], id="an MPIJob declares its launcher and workers"),
    pytest.param(a_pytorchjob(workers=3).build(), [], id="a PyTorchJob needs none: upstream infers it"),
    pytest.param(a_job(parallelism=4).build(), [], id="a Job needs none"),
    pytest.param(a_pod().build(), [], id="a Pod needs none"),
])
def test_pod_sets_to_declare(obj: dict[str, Any], expected: list[tuple[str, int]]) -> None:
    found = pod_sets_to_declare(obj)
    assert found is not None
    assert [(p.path, p.replicas) for p in found] == expected


@pytest.mark.parametrize("obj", [
    pytest.param(a_service().build(), id="a Service"), pytest.param(cronjob(), id="a CronJob"),
])
def test_kinds_whose_pods_cannot_be_counted(obj: dict[str, Any]) -> None:
    assert pod_sets_to_declare(obj) is None


def test_a_bad_group_size_is_a_field_error() -> None:
    with pytest.raises(FieldError, match=r"spec\.leaderWorkerTemplate\.size: must be a non-negative integer"):
        pod_sets_to_declare(lws(size="three"))  # type: ignore[arg-type]


@pytest.mark.parametrize(("obj", "expected"), [
    pytest.param(cronjob(), ["spec.jobTemplate.spec.template"], id="a CronJob's template, two levels down"),
    pytest.param(a_service().build(), [], id="a Service holds none"),
    pytest.param(lws(), ["spec.leaderWorkerTemplate.workerTemplate", "spec.leaderWorkerTemplate.leaderTemplate"],
                 id="every template of a leader-worker set"),
])
def test_find_pod_templates(obj: dict[str, Any], expected: list[str]) -> None:
    assert [format_steps(at) for at in find_pod_templates(obj)] == expected


def test_each_document_is_a_component_in_order() -> None:
    documents = [a_service("svc").build(), lws(), a_job("train").build()]
    aw, errors = wrap(documents, Wrapping("aw", "team-a", "q"))
    assert errors == [] and aw is not None
    assert aw["metadata"] == {"name": "aw", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "q"}}
    assert [c["template"] for c in aw["spec"]["components"]] == documents
    assert ["podSets" in c for c in aw["spec"]["components"]] == [False, True, False]


def test_an_empty_queue_and_namespace_are_left_off() -> None:
    aw, _ = wrap([a_pod().build()], Wrapping("aw", None, ""))
    assert aw is not None and aw["metadata"] == {"name": "aw"}


@pytest.mark.parametrize(("document", "path", "detail"), [
    pytest.param("just text", "", "is not a Kubernetes object (it needs apiVersion and kind)", id="a string"),
    pytest.param([a_pod().build()], "", "is not a Kubernetes object (it needs apiVersion and kind)", id="a list"),
    pytest.param({"apiVersion": "v1", "metadata": {"name": "x"}}, "",
                 "is not a Kubernetes object (it needs apiVersion and kind)", id="no kind"),
    pytest.param(cronjob(), "spec.jobTemplate.spec.template",
                 "a CronJob holds pods here, but wrap does not know how many it runs: write its AppWrapper component "
                 "with podSets (path and replicas) by hand", id="a kind whose pods wrap cannot count"),
    pytest.param(lws(replicas=-1), "spec.replicas", "must be a non-negative integer, got -1", id="a negative count"),
])
def test_what_cannot_be_a_component(document: Any, path: str, detail: str) -> None:
    with pytest.raises(FieldError) as caught:
        component(document)
    assert (caught.value.path, caught.value.detail) == (path, detail)


def test_every_bad_document_is_reported_by_index() -> None:
    aw, errors = wrap([a_pod().build(), "x", cronjob(), 7], Wrapping("aw", None, "q"))
    assert aw is None
    assert [e.index for e in errors] == [1, 2, 3]


def test_the_name_and_namespace_come_from_the_documents() -> None:
    first = a_job("train", namespace=None).build()
    second = a_service("svc").build()
    second["metadata"]["namespace"] = "team-b"
    assert (default_name([first, second]), stated_namespace([first, second])) == ("train", "team-b")
    assert (default_name(["x"]), stated_namespace(["x"])) == ("", None)
