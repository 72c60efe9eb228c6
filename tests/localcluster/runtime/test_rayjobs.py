"""The KubeRay stand-in's RayJob decisions (K8sJobMode), as ray-project/kuberay's rayjob_controller.go
moves a RayJob: New -> Initializing (its RayCluster) -> Running (the submitter Job once the cluster
is ready) -> Complete or Failed from the submitter's outcome; the cluster deleted after
ttlSecondsAfterFinished with shutdownAfterJobFinishes; suspend through Suspending to Suspended and
back to New; a clusterSelector naming nothing waits with a Warning.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from localcluster.sim.rayjobs import reconcile_rayjob

NOW = dt.datetime(2026, 1, 1, 12, tzinfo=dt.timezone.utc)
CLUSTER_SPEC = {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "h", "image": "rayproject/ray:2.9"}]}}},
                "workerGroupSpecs": []}


def a_rayjob(phase: str | None = None, *, suspend: bool = False, selector: str | None = None, shutdown: bool = False,
             ttl: int = 0, ended: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"entrypoint": "python train.py", "rayClusterSpec": CLUSTER_SPEC}
    if suspend:
        spec["suspend"] = True
    if selector:
        spec["clusterSelector"] = {"ray.io/cluster": selector}
        spec.pop("rayClusterSpec")
    if shutdown:
        spec.update(shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=ttl)
    status: dict[str, Any] = {}
    if phase:
        status = {"jobDeploymentStatus": phase, "rayClusterName": selector or "rj-abcde", "jobId": "rj-abcde"}
    if ended:
        status["endTime"] = ended
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "status": status, "spec": spec,
            "metadata": {"name": "rj", "namespace": "ns", "uid": "u1",
                         "annotations": {"localcluster.batchgate.dev/behavior": '{"runFor": "5s"}'}}}


def a_cluster(state: str = "ready") -> dict[str, Any]:
    return {"metadata": {"name": "rj-abcde"}, "spec": CLUSTER_SPEC, "status": {"state": state}}


def a_submitter(condition: str | None = None, active: int = 0) -> dict[str, Any]:
    conditions = [{"type": condition, "status": "True", "reason": "BackoffLimitExceeded"}] if condition else []
    return {"metadata": {"name": "rj"}, "status": {"conditions": conditions, "active": active}}


def test_a_new_rayjob_names_its_cluster_and_initializes() -> None:
    step = reconcile_rayjob(a_rayjob(), None, None, NOW)
    assert step.status["jobDeploymentStatus"] == "Initializing"
    assert step.status["rayClusterName"].startswith("rj-") and len(step.status["rayClusterName"]) == 8
    assert step.status["jobId"] == step.status["rayClusterName"]


def test_initializing_makes_the_cluster_owned_by_the_rayjob() -> None:
    step = reconcile_rayjob(a_rayjob("Initializing"), None, None, NOW)
    cluster = step.create_cluster
    assert cluster is not None and cluster["metadata"]["name"] == "rj-abcde" and cluster["spec"] == CLUSTER_SPEC
    assert cluster["metadata"]["ownerReferences"][0]["uid"] == "u1"
    assert cluster["metadata"]["labels"]["ray.io/originated-from-crd"] == "RayJob"


def test_a_ready_cluster_gets_the_default_submitter_and_the_rayjob_runs() -> None:
    step = reconcile_rayjob(a_rayjob("Initializing"), a_cluster(), None, NOW)
    job = step.create_job
    assert job is not None and job["metadata"]["name"] == "rj" and job["spec"]["backoffLimit"] == 2
    pod = job["spec"]["template"]
    [container] = pod["spec"]["containers"]
    assert container["name"] == "ray-job-submitter" and container["image"] == "rayproject/ray:2.9"
    assert container["command"][:5] == ["ray", "job", "submit", "--address", "http://rj-abcde-head-svc:8265"]
    assert container["command"][-1] == "python train.py"
    assert pod["metadata"]["annotations"] == {"localcluster.batchgate.dev/behavior": '{"runFor": "5s"}'}
    assert (step.status["jobDeploymentStatus"], step.status["jobStatus"]) == ("Running", "PENDING")


def test_a_cluster_not_ready_yet_is_waited_for() -> None:
    step = reconcile_rayjob(a_rayjob("Initializing"), a_cluster(""), None, NOW)
    assert (step.create_job, step.status["jobDeploymentStatus"]) == (None, "Initializing")


@pytest.mark.parametrize("submitter, deployment, job_status", [
    pytest.param(a_submitter(active=1), "Running", "RUNNING", id="an active submitter means the job runs"),
    pytest.param(a_submitter("Complete"), "Complete", "SUCCEEDED", id="a complete submitter means success"),
    pytest.param(a_submitter("Failed"), "Failed", "FAILED", id="a failed submitter fails the RayJob"),
])
def test_the_submitters_outcome_decides(submitter: dict[str, Any], deployment: str, job_status: str) -> None:
    step = reconcile_rayjob(a_rayjob("Running"), a_cluster(), submitter, NOW)
    assert (step.status["jobDeploymentStatus"], step.status["jobStatus"]) == (deployment, job_status)
    if deployment == "Failed":
        assert step.status["reason"] == "AppFailed" and "BackoffLimitExceeded" in step.status["message"]


def test_shutdown_after_finishing_deletes_the_cluster_after_the_ttl() -> None:
    waiting = reconcile_rayjob(a_rayjob("Complete", shutdown=True, ttl=60, ended="2026-01-01T11:59:30Z"),
                               a_cluster(), None, NOW)
    assert (waiting.delete_cluster, waiting.requeue_after) == (None, dt.timedelta(seconds=30))
    due = reconcile_rayjob(a_rayjob("Complete", shutdown=True, ttl=60, ended="2026-01-01T11:58:00Z"),
                           a_cluster(), None, NOW)
    assert due.delete_cluster == "rj-abcde"
    kept = reconcile_rayjob(a_rayjob("Complete", ended="2026-01-01T11:00:00Z"), a_cluster(), None, NOW)
    assert kept.delete_cluster is None, "without shutdownAfterJobFinishes the cluster stays"


def test_suspend_goes_through_suspending_to_suspended_and_back_to_new() -> None:
    assert reconcile_rayjob(a_rayjob("Running", suspend=True), a_cluster(), a_submitter(), NOW).status[
        "jobDeploymentStatus"] == "Suspending"
    deleting = reconcile_rayjob(a_rayjob("Suspending", suspend=True), a_cluster(), a_submitter(), NOW)
    assert (deleting.delete_cluster, deleting.delete_job) == ("rj-abcde", "rj")
    done = reconcile_rayjob(a_rayjob("Suspending", suspend=True), None, None, NOW)
    assert done.status["jobDeploymentStatus"] == "Suspended"
    # Back at New, which is KubeRay's empty status: the field is gone, as the API omits it.
    assert "jobDeploymentStatus" not in reconcile_rayjob(a_rayjob("Suspended"), None, None, NOW).status


def test_a_selector_naming_no_cluster_waits_with_one_warning() -> None:
    step = reconcile_rayjob(a_rayjob("Initializing", selector="shared"), None, None, NOW)
    assert step.create_cluster is None and step.requeue_after is not None
    assert [(e.type, e.reason) for e in step.events] == [("Warning", "RayClusterNotFound")]
    again = reconcile_rayjob({**a_rayjob("Initializing", selector="shared"), "status": step.status}, None, None, NOW)
    assert again.events == []


def test_a_selected_cluster_is_never_deleted() -> None:
    step = reconcile_rayjob(a_rayjob("Suspending", suspend=True, selector="shared"), a_cluster(), None, NOW)
    assert step.delete_cluster is None and step.status["jobDeploymentStatus"] == "Suspended"
