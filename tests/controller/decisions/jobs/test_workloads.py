"""The Workload a queued job gets: name, owner, podSets, priority, queue; and who is queued at all."""

from __future__ import annotations

from typing import Any

import pytest

from batchgate.kinds import QUEUED
from controller.decisions.jobs.workloads import (
    PriorityClasses,
    WorkloadError,
    desired_workload,
    is_queued,
    workload_name,
)
from tests.controller.builders import a_job, a_pytorch_appwrapper

CLASSES = PriorityClasses(workload={"high": 1000, "low": 10}, pod={"urgent": 500, "normal": 100})


def test_workload_name_follows_kueue() -> None:
    # sha1("Job\nbatch\ntrain\nuid-1") starts with these five hex digits
    import hashlib

    expected = hashlib.sha1(b"Job\nbatch\ntrain\nuid-1").hexdigest()[:5]
    assert workload_name(QUEUED["Job"], "train", "uid-1") == f"job-train-{expected}"


def test_a_very_long_job_name_is_cut_to_fit_253_characters() -> None:
    name = workload_name(QUEUED["AppWrapper"], "x" * 300, "u")
    assert len(name) == 253 and name.startswith("appwrapper-xxx")


def test_a_job_workload_is_owned_by_the_job_and_carries_queue_and_podsets() -> None:
    job = a_job(parallelism=3, cpu="2")
    wl = desired_workload(job, QUEUED["Job"], CLASSES)
    assert wl["metadata"]["ownerReferences"] == [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "uid-train",
         "controller": True, "blockOwnerDeletion": True}]
    assert wl["metadata"]["labels"] == {"kueue.x-k8s.io/job-uid": "uid-train"}
    assert wl["spec"]["queueName"] == "default-queue"
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("main", 3)]
    assert wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "2"}}
    assert wl["spec"]["priority"] == 0 and "priorityClassName" not in wl["spec"]


def test_an_appwrapper_workload_has_one_podset_per_component_podset() -> None:
    wl = desired_workload(a_pytorch_appwrapper(), QUEUED["AppWrapper"], CLASSES)
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("resnet-ddp-0", 1), ("resnet-ddp-1", 2)]


def with_pod_class(job: dict[str, Any], name: str) -> dict[str, Any]:
    job["spec"]["template"]["spec"]["priorityClassName"] = name
    return job


@pytest.mark.parametrize(
    "job,classes,expected",
    [
        pytest.param(a_job(labels={"kueue.x-k8s.io/priority-class": "high"}), CLASSES,
                     (1000, "high", "kueue.x-k8s.io/workloadpriorityclass"),
                     id="the priority-class label names a WorkloadPriorityClass"),
        pytest.param(with_pod_class(a_job(labels={"kueue.x-k8s.io/priority-class": "low"}), "urgent"), CLASSES,
                     (10, "low", "kueue.x-k8s.io/workloadpriorityclass"),
                     id="the WorkloadPriorityClass wins over the pods' PriorityClass"),
        pytest.param(with_pod_class(a_job(), "urgent"), CLASSES, (500, "urgent", "scheduling.k8s.io/priorityclass"),
                     id="without the label the pods' PriorityClass decides"),
        pytest.param(a_job(), PriorityClasses(pod={"normal": 100}, global_default="normal"),
                     (100, "normal", "scheduling.k8s.io/priorityclass"),
                     id="without either the global default PriorityClass decides"),
        pytest.param(a_job(), CLASSES, (0, None, None), id="without any class the priority is zero"),
    ],
)
def test_priority(job: dict[str, Any], classes: PriorityClasses, expected: tuple[Any, ...]) -> None:
    spec = desired_workload(job, QUEUED["Job"], classes)["spec"]
    assert (spec["priority"], spec.get("priorityClassName"), spec.get("priorityClassSource")) == expected


@pytest.mark.parametrize(
    "job,message",
    [
        pytest.param(a_job(labels={"kueue.x-k8s.io/priority-class": "gold"}),
                     'workload priority class "gold" not found', id="a missing WorkloadPriorityClass is named"),
        pytest.param(with_pod_class(a_job(), "gold"), 'priority class "gold" not found',
                     id="a missing PriorityClass is named"),
        pytest.param(a_job(cpu="a lot"), "podSets[main].template.spec.containers[0].resources.requests.cpu: invalid quantity 'a lot'",
                     id="an unparsable request names the podSet and container"),
    ],
)
def test_jobs_that_cannot_have_a_workload_say_why(job: dict[str, Any], message: str) -> None:
    with pytest.raises(WorkloadError) as info:
        desired_workload(job, QUEUED["Job"], CLASSES)
    assert str(info.value) == message


AW_OWNER = {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper", "name": "aw", "uid": "u",
            "controller": True}
QUEUED_AW = {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q"}}}
UNQUEUED_AW: dict[str, Any] = {"metadata": {}}


@pytest.mark.parametrize(
    "job,owner,queued",
    [
        pytest.param(a_job(), None, True, id="a job with a queue label is queued"),
        pytest.param(a_job(queue=None), None, False, id="a job without a queue label is not"),
        pytest.param(a_job(owner=AW_OWNER), QUEUED_AW, False, id="a job inside a queued AppWrapper is not"),
        pytest.param(a_job(owner=AW_OWNER), None, False, id="a job whose AppWrapper is not yet seen waits for it"),
        pytest.param(a_job(owner=AW_OWNER), UNQUEUED_AW, True, id="a job inside an unqueued AppWrapper is queued"),
        pytest.param(a_job(owner={**AW_OWNER, "apiVersion": "apps/v1", "kind": "Deployment"}), None, True,
                     id="a job owned by something that is never queued is queued"),
    ],
)
def test_who_is_queued(job: dict[str, Any], owner: dict[str, Any] | None, queued: bool) -> None:
    assert is_queued(job, owner) is queued
