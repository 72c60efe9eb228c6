"""docs/rules.md, "Mutations": every mutation, who gets it, and who does not."""

from __future__ import annotations

from typing import Any

import pytest

from batchgate.policy import DEFAULT_POLICY, Policy, parse_policy
from webhook.rules import mutate
from webhook.rules.mutation import POD_PHASE_STEPS, WORKLOAD_STEPS
from tests.builders import (
    APPWRAPPER_CONTROLLER,
    JOB_CONTROLLER,
    a_deployment, a_job, a_pod, a_pytorchjob, a_raycluster, a_rayjob, a_request, a_service, an_appwrapper, value_at,
)

QUEUE = "kueue.x-k8s.io/queue-name"
USER = "workload.codeflare.dev/user"
USERID = "workload.codeflare.dev/userid"
GROUP = "scheduling.x-k8s.io/pod-group"
PRIORITY = "kueue.x-k8s.io/priority-class"
WITH_PRIORITY = parse_policy("priority: {defaultWorkloadPriorityClass: default-priority}")
OVERRIDE = parse_policy("scheduling: {overrideExisting: true}")
NO_GANG = parse_policy("scheduling: {gang: false}")
NO_DEFAULT_QUEUE = parse_policy("queues: {defaultQueueName: ''}")


@pytest.mark.parametrize(
    "obj, policy, path, expected",
    [
        pytest.param(an_appwrapper().with_job().build(), DEFAULT_POLICY, f"metadata.labels[{QUEUE}]",
                     "default-queue", id="an appwrapper without a queue gets the default queue"),
        pytest.param(an_appwrapper().with_job().with_queue("mine").build(), DEFAULT_POLICY,
                     f"metadata.labels[{QUEUE}]", "mine", id="a user's queue wins over the default"),
        pytest.param(an_appwrapper().with_job().build(), NO_DEFAULT_QUEUE, f"metadata.labels[{QUEUE}]",
                     None, id="an empty default queue injects nothing"),
        pytest.param(a_job().build(), DEFAULT_POLICY, f"metadata.labels[{QUEUE}]", None,
                     id="a bare job does not get a default queue"),
        pytest.param(an_appwrapper().with_job().build(), DEFAULT_POLICY, f"metadata.labels[{USER}]",
                     "alice", id="an appwrapper gets the submitter's name"),
        pytest.param(an_appwrapper().with_job().labelled(USER, "admin").build(), DEFAULT_POLICY,
                     f"metadata.labels[{USER}]", "alice", id="a forged user label is overwritten"),
        pytest.param(a_job().labelled(USERID, "root").with_queue().build(), DEFAULT_POLICY,
                     f"metadata.labels[{USERID}]", "uid-alice", id="a forged userid on a job is overwritten"),
        pytest.param(a_pod().build(), DEFAULT_POLICY, f"metadata.labels[{USER}]", None,
                     id="a bare pod is not a workload and gets no identity"),
        pytest.param(a_job().build(), DEFAULT_POLICY, "spec.template.spec.schedulerName", "batchgate-scheduler",
                     id="a job's template gets the scheduler"),
        pytest.param(a_pod().build(), DEFAULT_POLICY, "spec.schedulerName", "batchgate-scheduler",
                     id="a bare pod gets the scheduler"),
        pytest.param(a_job().with_spec(template={"spec": {"schedulerName": "mine", "containers": []}}).build(),
                     DEFAULT_POLICY, "spec.template.spec.schedulerName", "mine", id="a named scheduler is kept"),
        pytest.param(a_job().with_spec(template={"spec": {"schedulerName": "default-scheduler", "containers": []}}
                                       ).build(), DEFAULT_POLICY, "spec.template.spec.schedulerName",
                     "batchgate-scheduler",
                     id="the default-scheduler kube-apiserver writes into a template that names none counts as none"),
        pytest.param(a_job().with_spec(template={"spec": {"schedulerName": "mine", "containers": []}}).build(),
                     OVERRIDE, "spec.template.spec.schedulerName", "batchgate-scheduler",
                     id="overrideExisting replaces a named scheduler"),
        pytest.param(a_job().with_spec(template={"spec": {"schedulerName": "default-scheduler", "containers": []}})
                     .build(), DEFAULT_POLICY, "spec.template.spec.schedulerName", "batchgate-scheduler",
                     id="a job's template naming default-scheduler, as kube-apiserver hands it over, gets the scheduler"),
        pytest.param(a_pod().with_spec(schedulerName="default-scheduler").build(), DEFAULT_POLICY, "spec.schedulerName",
                     "batchgate-scheduler", id="a bare pod naming default-scheduler gets the scheduler"),
        pytest.param(an_appwrapper().with_component(
            a_job().with_spec(template={"spec": {"schedulerName": "default-scheduler", "containers": []}}).build())
            .build(), DEFAULT_POLICY, "spec.components[0].template.spec.template.spec.schedulerName",
            "default-scheduler", id="default-scheduler named in an appwrapper's component is its author's and is kept"),
        pytest.param(an_appwrapper().with_pytorchjob(workers=2).build(), DEFAULT_POLICY,
                     "spec.components[0].template.spec.pytorchReplicaSpecs.Worker.template.spec.schedulerName",
                     "batchgate-scheduler", id="templates inside appwrapper components get the scheduler"),
        pytest.param(a_raycluster(workers=(1, 2)).with_queue().build(), DEFAULT_POLICY,
                     "spec.workerGroupSpecs[1].template.spec.schedulerName", "batchgate-scheduler",
                     id="every ray worker group gets the scheduler"),
        pytest.param(an_appwrapper("train").with_job().build(), DEFAULT_POLICY,
                     f"spec.components[0].template.spec.template.metadata.labels[{GROUP}]", "train",
                     id="an appwrapper's pods form a gang named after it"),
        pytest.param(a_pytorchjob("ptj").with_queue().build(), DEFAULT_POLICY,
                     f"spec.pytorchReplicaSpecs.Master.template.metadata.labels[{GROUP}]", "ptj",
                     id="a pytorchjob's pods form a gang"),
        pytest.param(an_appwrapper("train").with_job().build(), NO_GANG,
                     f"spec.components[0].template.spec.template.metadata.labels[{GROUP}]", None,
                     id="no gang label when gang scheduling is off"),
        pytest.param(a_pod().build(), DEFAULT_POLICY, f"metadata.labels[{GROUP}]", None,
                     id="a bare pod is not given a gang"),
        pytest.param(a_job().with_queue().build(), WITH_PRIORITY, f"metadata.labels[{PRIORITY}]",
                     "default-priority", id="a workload gets the default priority class"),
        pytest.param(a_job().with_queue().labelled(PRIORITY, "high").build(), WITH_PRIORITY,
                     f"metadata.labels[{PRIORITY}]", "high", id="a chosen priority class is kept"),
        pytest.param(an_appwrapper().with_job().build(), DEFAULT_POLICY, "spec.suspend", True,
                     id="an appwrapper that will be queued is created suspended"),
        pytest.param(a_job().with_queue().build(), DEFAULT_POLICY, "spec.suspend", True,
                     id="a queued job is created suspended"),
        pytest.param(a_pytorchjob().with_queue().build(), DEFAULT_POLICY, "spec.runPolicy.suspend", True,
                     id="a queued pytorchjob is suspended through its run policy"),
        pytest.param(a_rayjob().with_queue().build(), DEFAULT_POLICY, "spec.suspend", True,
                     id="a queued rayjob is created suspended"),
        pytest.param(a_job().build(), DEFAULT_POLICY, "spec.suspend", None,
                     id="a job without a queue is not suspended"),
    ],
)
def test_mutations(obj: dict[str, Any], policy: Policy, path: str, expected: Any) -> None:
    result = mutate(a_request(obj), policy)
    assert result.denial is None
    assert value_at(result.object if result.object is not None else obj, path) == expected


def test_the_request_object_is_never_modified() -> None:
    obj = an_appwrapper().with_job().build()
    before = repr(obj)
    mutate(a_request(obj), DEFAULT_POLICY)
    assert repr(obj) == before


def test_every_change_is_named_once() -> None:
    result = mutate(a_request(an_appwrapper("aw").with_job().build()), DEFAULT_POLICY)
    assert result.reason == "Mutated"
    assert result.changes == (
        f"set label {QUEUE}=default-queue",
        f"set label {USER}=alice",
        f"set label {USERID}=uid-alice",
        "set spec.components[0].template.spec.template.spec.schedulerName=batchgate-scheduler",
        f"set label {GROUP}=aw on spec.components[0].template.spec.template.metadata.labels",
        "set spec.suspend=true",
    )


def test_mutation_is_idempotent_under_reinvocation() -> None:
    first = mutate(a_request(an_appwrapper().with_pytorchjob().build()), DEFAULT_POLICY)
    again = mutate(a_request(first.object), DEFAULT_POLICY)
    assert again.object is None and again.changes == () and again.reason == "Unchanged"


@pytest.mark.parametrize(
    "request_kwargs, reason",
    [
        pytest.param({"namespace": "kube-system"}, "Exempt", id="an exempt namespace passes untouched"),
        pytest.param({"user": "ops-bot"}, "Exempt", id="an exempt user passes untouched"),
        pytest.param({"groups": ("system:masters",)}, "Exempt", id="an exempt group passes untouched"),
        pytest.param({"operation": "DELETE"}, "OperationNotMutated", id="deletes are never mutated"),
    ],
)
def test_requests_that_pass_untouched(request_kwargs: dict[str, Any], reason: str) -> None:
    policy = parse_policy("exempt: {users: [ops-bot], groups: [system:masters]}")
    result = mutate(a_request(an_appwrapper().with_job().build(), **request_kwargs), policy)
    assert (result.object, result.changes, result.denial, result.reason) == (None, (), None, reason)


def test_namespaces_outside_the_selector_are_not_managed() -> None:
    policy = parse_policy("managedNamespaces: {selector: {matchLabels: {team: 'true'}}}")
    request = a_request(an_appwrapper().with_job().build(), namespace="team-a")
    assert mutate(request, policy, {"team-a": {}}).reason == "NamespaceNotManaged"
    assert mutate(request, policy, {"team-a": {"team": "true"}}).reason == "Mutated"
    assert mutate(request, policy, None).reason == "Mutated"  # unknown labels count as matching


@pytest.mark.parametrize(
    "obj, path, expected",
    [
        pytest.param(a_deployment().owned_by("AppWrapper", "aw").build(), "spec.template.spec.schedulerName",
                     "batchgate-scheduler", id="a wrapped deployment gets the scheduler"),
        pytest.param(a_deployment().owned_by("AppWrapper", "aw").with_spec(
            template={"spec": {"schedulerName": "default-scheduler", "containers": []}}).build(),
            "spec.template.spec.schedulerName", "default-scheduler",
            id="a wrapped deployment keeps the default-scheduler its appwrapper's author named"),
        pytest.param(a_job().with_queue().owned_by("AppWrapper", "aw").build(), "spec.suspend", None,
                     id="a wrapped job is never suspended by the gateway"),
        pytest.param(a_job().with_queue().labelled(USER, "bob").owned_by("AppWrapper", "aw").build(),
                     f"metadata.labels[{USER}]", "bob", id="a wrapped job keeps the labels its appwrapper gave it"),
    ],
)
def test_what_the_appwrapper_controller_creates(obj: dict[str, Any], path: str, expected: Any) -> None:
    result = mutate(a_request(obj, user=APPWRAPPER_CONTROLLER), DEFAULT_POLICY)
    assert result.denial is None
    assert value_at(result.object if result.object is not None else obj, path) == expected


def test_a_job_created_by_a_controller_only_runs_the_pod_phase_steps() -> None:
    pod = a_pod().build()
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u",
                                           "controller": True}]
    result = mutate(a_request(pod, user=JOB_CONTROLLER), DEFAULT_POLICY)
    assert result.changes == () and result.denial is None
    assert POD_PHASE_STEPS is not WORKLOAD_STEPS


CONFIGMAP_OWNER = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u", "controller": True}
APPWRAPPER_OWNER = {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper", "name": "aw", "uid": "u",
                    "controller": True}


def _claiming(obj: dict[str, Any], owner: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"]["ownerReferences"] = [owner]
    return obj


@pytest.mark.parametrize(
    "obj, path, expected",
    [
        pytest.param(_claiming(a_job().with_queue().labelled(USER, "bob").build(), CONFIGMAP_OWNER),
                     f"metadata.labels[{USER}]", "alice", id="a job claiming a configmap owner gets her identity"),
        pytest.param(_claiming(a_job().with_queue().build(), CONFIGMAP_OWNER), "spec.suspend", True,
                     id="a job claiming a configmap owner is suspended"),
        pytest.param(_claiming(a_job().with_queue().labelled(USER, "bob").build(), APPWRAPPER_OWNER),
                     f"metadata.labels[{USER}]", "alice", id="a job claiming an appwrapper owner gets her identity"),
        pytest.param(_claiming(a_job().with_queue().build(), APPWRAPPER_OWNER), "spec.suspend", True,
                     id="a job claiming an appwrapper owner is suspended"),
    ],
)
def test_an_owner_reference_from_a_user_is_a_claim_not_a_pass(obj: dict[str, Any], path: str, expected: Any) -> None:
    result = mutate(a_request(obj), DEFAULT_POLICY)
    assert result.denial is None
    assert value_at(result.object, path) == expected


def test_a_generated_name_gets_no_gang_label() -> None:
    job = a_job().with_queue().build()
    job["metadata"] = {"generateName": "train-", "labels": job["metadata"]["labels"]}
    result = mutate(a_request(job), DEFAULT_POLICY)
    assert not any(GROUP in change for change in result.changes)
    assert result.warnings and "generateName" in result.warnings[0]


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(["a", "list"], id="an object that is a list"),
        pytest.param("a string", id="an object that is a string"),
        pytest.param(None, id="a missing object"),
    ],
)
def test_malformed_objects_are_denied_with_400(obj: Any) -> None:
    request = a_request(obj, kind=a_request(a_job().build()).kind)
    result = mutate(request, DEFAULT_POLICY)
    assert result.denial is not None and result.denial.code == 400
    assert result.denial.reason == "MalformedRequest" and "object: must be a mapping" in result.denial.message


def test_a_service_passes_unchanged() -> None:
    assert mutate(a_request(a_service().build()), DEFAULT_POLICY).reason == "Unchanged"
