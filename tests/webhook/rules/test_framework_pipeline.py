"""The framework plugins inside the real mutate pipeline: policy settings in, both phases run."""

from __future__ import annotations

import dataclasses
from typing import Any

from batchgate import keys
from batchgate.kinds import APPWRAPPER
from batchgate.policy import DEFAULT_POLICY, parse_policy
from webhook.rules import mutate, validate
from webhook.rules.mutation import framework_settings
from tests.builders import APPWRAPPER_CONTROLLER, a_request
from tests.webhook.rules.frameworks.builders import appwrapper, env_of, indexed_job, pods_of, pytorchjob


def admitted(obj: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    request = a_request(obj, namespace="team1", **kwargs)
    mutation = mutate(request, DEFAULT_POLICY)
    assert mutation.denial is None, mutation.denial
    result = mutation.object if mutation.object is not None else obj
    verdict = validate(dataclasses.replace(request, object=result), DEFAULT_POLICY)
    assert verdict.allowed, verdict.message
    return result


def test_the_policy_frameworks_section_reaches_the_plugins() -> None:
    policy = parse_policy("frameworks: {pytorch: {port: 29500}, mpi: {waitImage: 'alpine:3', waitTimeout: 2m}}")
    settings = framework_settings(policy)
    assert (settings.pytorch_port, settings.wait_image, settings.wait_timeout_seconds) == (29500, "alpine:3", 120)
    assert framework_settings(DEFAULT_POLICY).tensorflow_port == 2222


def test_a_pytorch_appwrapper_is_laid_out_and_its_pods_get_the_rendezvous_env() -> None:
    aw = admitted(appwrapper("train", pytorchjob("train-ptj", masters=1, workers=2), framework="pytorch"))
    assert aw["spec"]["suspend"] is True
    wrapped = aw["spec"]["components"][0]["template"]
    wrapped["metadata"]["ownerReferences"] = [{"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper",
                                               "name": "train", "uid": "u", "controller": True}]
    wrapped = admitted(wrapped, user=APPWRAPPER_CONTROLLER)
    pods = [admitted({"apiVersion": "v1", "kind": "Pod", **pod}, user="system:serviceaccount:kubeflow:training-operator")
            for pod in pods_of(wrapped)]
    envs = [env_of(pod) for pod in pods]
    assert sorted(env["RANK"] for env in envs) == ["0", "1", "2"]
    assert {env["WORLD_SIZE"] for env in envs} == {"3"}
    assert {env["MASTER_PORT"] for env in envs} == {"23456"}


def test_an_indexed_job_with_a_framework_label_is_laid_out_in_the_same_pass() -> None:
    job = indexed_job("tf", 2, framework="tensorflow", completionMode="Indexed")
    job["metadata"]["labels"][keys.QUEUE_NAME_LABEL] = "default-queue"
    mutation = mutate(a_request(job, namespace="team1"), DEFAULT_POLICY)
    assert any("schedulerName" in change for change in mutation.changes)
    assert len(mutation.changes) > 6  # identity, scheduler, gang, suspend and the framework layout


def test_bad_framework_args_deny_the_request_with_the_field_path() -> None:
    job = indexed_job("pt", 2, framework="pytorch", args={"port": "not-a-port"}, completionMode="Indexed")
    job["metadata"]["labels"][keys.QUEUE_NAME_LABEL] = "default-queue"
    mutation = mutate(a_request(job, namespace="team1"), DEFAULT_POLICY)
    assert mutation.denial is not None and mutation.denial.reason == "InvalidFramework"
    assert f"metadata.annotations[{keys.FRAMEWORK_ARGS_ANNOTATION}].port" in mutation.denial.message
