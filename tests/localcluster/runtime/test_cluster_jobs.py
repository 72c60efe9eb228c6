"""We test Jobs end to end on the local cluster: both completion modes, every failure path with
its upstream reason, suspend and resume, the deadline, TTL, and invalid specs at create."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.localcluster.runtime.conftest import eventually
from tests.localcluster.webhook_stub import WebhookStub


def job_manifest(name, behavior, restart="Never", **spec):
    return {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {**spec, "template": {
            "metadata": {"annotations": {"localcluster.batchgate.dev/behavior": json.dumps(behavior)}},
            "spec": {"restartPolicy": restart, "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}]}}},
    }


def batch(api):
    return client.BatchV1Api(api)


def condition(api, ns, name, kind):
    job = batch(api).read_namespaced_job_status(name, ns)
    return next(((c.status, c.reason, c.message) for c in job.status.conditions or [] if c.type == kind), None)


def pods_of(api, ns, name):
    return client.CoreV1Api(api).list_namespaced_pod(ns, label_selector=f"batch.kubernetes.io/job-name={name}").items


def test_a_job_runs_its_completions_and_completes(sim_api, ns):
    batch(sim_api).create_namespaced_job(ns, job_manifest("work", {"runFor": "2s"}, parallelism=2, completions=4))
    assert eventually(lambda: condition(sim_api, ns, "work", "Complete"), timeout=30) == (
        "True", "CompletionsReached", "Reached expected number of succeeded pods")
    job = batch(sim_api).read_namespaced_job_status("work", ns)
    assert (job.status.succeeded, job.status.active or 0) == (4, 0)
    assert job.status.start_time and job.status.completion_time
    assert condition(sim_api, ns, "work", "SuccessCriteriaMet")[0] == "True"
    pods = pods_of(sim_api, ns, "work")
    assert len(pods) == 4
    pod = pods[0]
    assert pod.metadata.labels["job-name"] == "work" and pod.metadata.labels["controller-uid"] == job.metadata.uid
    assert pod.metadata.owner_references[0].kind == "Job" and pod.metadata.owner_references[0].controller
    assert not pod.metadata.finalizers


def test_an_indexed_job_gives_each_pod_its_index_and_hostname(sim_api, ns):
    batch(sim_api).create_namespaced_job(ns, job_manifest("idx", {"runFor": "1s"}, completions=3, parallelism=3,
                                                          completionMode="Indexed"))
    eventually(lambda: condition(sim_api, ns, "idx", "Complete"), timeout=30)
    assert batch(sim_api).read_namespaced_job_status("idx", ns).status.completed_indexes == "0-2"
    pods = sorted(pods_of(sim_api, ns, "idx"), key=lambda p: p.metadata.annotations["batch.kubernetes.io/job-completion-index"])
    assert [p.spec.hostname for p in pods] == ["idx-0", "idx-1", "idx-2"]
    assert [p.metadata.labels["batch.kubernetes.io/job-completion-index"] for p in pods] == ["0", "1", "2"]
    assert pods[0].metadata.name.startswith("idx-0-")


@pytest.mark.parametrize(
    ("spec", "behavior", "reason", "message"),
    [
        pytest.param(dict(backoffLimit=1), {"runFor": "1s", "exitCode": 1}, "BackoffLimitExceeded",
                     "Job has reached the specified backoff limit", id="failures beyond backoffLimit"),
        pytest.param(dict(activeDeadlineSeconds=3), {"runFor": "1h"}, "DeadlineExceeded",
                     "Job was active longer than specified deadline", id="a job running past its deadline"),
        pytest.param(dict(backoffLimit=6, podFailurePolicy={"rules": [
            {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}}]}),
            {"runFor": "1s", "exitCode": 42}, "PodFailurePolicy", None, id="a FailJob pod failure policy rule"),
        pytest.param(dict(completions=2, parallelism=2, completionMode="Indexed", backoffLimitPerIndex=0),
                     {"runFor": "1s", "exitCode": 1}, "FailedIndexes", "Job has failed indexes",
                     id="every index failing under backoffLimitPerIndex"),
    ],
)
def test_jobs_fail_with_the_upstream_reason(sim_api, ns, spec, behavior, reason, message):
    batch(sim_api).create_namespaced_job(ns, job_manifest("bad", behavior, **spec))
    status, got_reason, got_message = eventually(lambda: condition(sim_api, ns, "bad", "Failed"), timeout=40)
    assert (status, got_reason) == ("True", reason)
    if message:
        assert got_message == message
    else:
        assert got_message.startswith("Container main for pod ") and got_message.endswith("failed with exit code 42 matching FailJob rule at index 0")
    assert condition(sim_api, ns, "bad", "FailureTarget")[1] == reason
    assert eventually(lambda: all(p.status.phase in ("Succeeded", "Failed") or p.metadata.deletion_timestamp
                                  for p in pods_of(sim_api, ns, "bad")))


def test_suspend_deletes_pods_and_resume_runs_the_job(sim_api, ns):
    api = batch(sim_api)
    api.create_namespaced_job(ns, job_manifest("sus", {"runFor": "1h"}, parallelism=2, completions=2))
    eventually(lambda: len(pods_of(sim_api, ns, "sus")) == 2)
    api.patch_namespaced_job("sus", ns, {"spec": {"suspend": True}})
    assert eventually(lambda: (condition(sim_api, ns, "sus", "Suspended") or ())[:2] == ("True", "JobSuspended"))
    eventually(lambda: not pods_of(sim_api, ns, "sus"))
    assert (api.read_namespaced_job_status("sus", ns).status.active or 0) == 0
    api.patch_namespaced_job("sus", ns, {"spec": {"suspend": False}})
    assert eventually(lambda: (condition(sim_api, ns, "sus", "Suspended") or ())[:2] == ("False", "JobResumed"))
    assert eventually(lambda: len([p for p in pods_of(sim_api, ns, "sus") if p.status.phase == "Running"]) == 2)
    assert api.read_namespaced_job_status("sus", ns).status.failed in (None, 0)


def test_ttl_after_finished_deletes_the_job_and_its_pods(sim_api, ns):
    batch(sim_api).create_namespaced_job(ns, job_manifest("ttl", {"runFor": "1s"}, ttlSecondsAfterFinished=5))

    def gone():
        try:
            batch(sim_api).read_namespaced_job("ttl", ns)
        except ApiException as err:
            return err.status == 404
        return False

    assert eventually(gone, timeout=30)
    assert eventually(lambda: not pods_of(sim_api, ns, "ttl"))


def test_a_job_with_restart_policy_always_is_invalid_at_create(sim_api, ns):
    with pytest.raises(ApiException) as err:
        batch(sim_api).create_namespaced_job(ns, job_manifest("always", {"runFor": "1s"}, restart="Always"))
    assert err.value.status == 422
    assert json.loads(err.value.body)["reason"] == "Invalid"


@pytest.fixture(scope="module")
def stub(tmp_path_factory):
    with WebhookStub(tmp_path_factory.mktemp("stub")) as server:
        yield server


def refusing_pod_updates(ns, stub):
    """A validating webhook on pod UPDATEs in `ns` only that refuses them with 409 Conflict, as an
    API server answers a write that raced another: every finalizer removal there fails."""
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": f"refuse-pods-{ns}"},
            "webhooks": [{"name": "refuse.batchgate.dev", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                          "failurePolicy": "Fail",
                          "clientConfig": {"url": f"https://127.0.0.1:{stub.port}/deny-conflict",
                                           "caBundle": stub.files.ca_bundle},
                          "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                          "rules": [{"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                     "resources": ["pods"]}]}]}


def test_an_orphan_pods_finalizer_removal_that_failed_is_tried_again(sim_api, ns, stub):
    """Issue 20 item 2: a write that failed other than NotFound (here a 409) is not taken for done.
    The Job is deleted while its pods' tracking finalizer cannot be removed; once the pods have
    stopped (no event of theirs will come again) the webhook goes, and the removal tried again
    lets the pods go. Before, the failure was swallowed and the pods stayed forever."""
    hooks = client.AdmissionregistrationV1Api(sim_api)
    batch(sim_api).create_namespaced_job(ns, job_manifest("orphan", {"runFor": "1h"}, parallelism=2, completions=2))
    eventually(lambda: len([p for p in pods_of(sim_api, ns, "orphan") if p.status.phase == "Running"]) == 2)
    hooks.create_validating_webhook_configuration(refusing_pod_updates(ns, stub))
    try:
        batch(sim_api).delete_namespaced_job("orphan", ns, propagation_policy="Background")
        eventually(lambda: (pods := pods_of(sim_api, ns, "orphan")) and all(
            p.metadata.deletion_timestamp and p.status.phase in ("Succeeded", "Failed") for p in pods))
        time.sleep(2)  # the kubelet's final deletes and their events have passed: nothing more will come
        assert all(p.metadata.finalizers == ["batch.kubernetes.io/job-tracking"] for p in pods_of(sim_api, ns, "orphan"))
    finally:
        hooks.delete_validating_webhook_configuration(f"refuse-pods-{ns}")
    assert eventually(lambda: not pods_of(sim_api, ns, "orphan"), timeout=30)
