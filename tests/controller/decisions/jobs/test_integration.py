"""Kueue's job reconciler as a table: given a job and its Workload, what happens next."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from batchgate import keys
from batchgate.kinds import QUEUED
from controller.decisions.jobs import integration as ji
from controller.decisions.jobs.workloads import PriorityClasses, desired_workload
from tests.controller.builders import a_job, a_pytorch_appwrapper, a_pytorchjob

NOW = "2026-01-01T00:00:00Z"
FLAVORS = {
    "a100": {"spec": {"nodeLabels": {"gpu": "a100"},
                      "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]}},
    "default": {"spec": {}},
}


def workload_for(job: dict[str, Any], *conditions: tuple[str, str, str], flavor: str = "a100") -> dict[str, Any]:
    wl = desired_workload(job, QUEUED[job["kind"]], PriorityClasses())
    wl["status"] = {"conditions": [{"type": t, "status": s, "reason": r, "message": f"{t} {r}",
                                    "lastTransitionTime": "2025-12-31T00:00:00Z"} for t, s, r in conditions]}
    if any(t == "QuotaReserved" and s == "True" for t, s, _ in conditions):
        wl["status"]["admission"] = {"clusterQueue": "cq-a", "podSetAssignments": [
            {"name": ps["name"], "flavors": {"cpu": flavor}, "count": ps["count"]} for ps in wl["spec"]["podSets"]]}
    return wl


ADMITTED = (("QuotaReserved", "True", "QuotaReserved"), ("Admitted", "True", "Admitted"))
EVICTED = (*ADMITTED, ("Evicted", "True", "Preempted"))


def running(job: dict[str, Any], active: int = 2) -> dict[str, Any]:
    job = copy.deepcopy(job)
    job["spec"]["suspend"] = False
    job["status"] = {"active": active}
    return job


def done(job: dict[str, Any], type_: str) -> dict[str, Any]:
    job = copy.deepcopy(job)
    job["status"] = {"conditions": [{"type": type_, "status": "True", "message": f"job {type_}"}]}
    return job


def decide(job: dict[str, Any], workload: dict[str, Any] | None, **kw: Any) -> list[ji.Action]:
    return ji.reconcile_job(job, QUEUED[job["kind"]], workload, owner=kw.get("owner"),
                            classes=PriorityClasses(), flavors=kw.get("flavors", FLAVORS), now=NOW)


JOB = a_job()


def admitted_then_stopped() -> dict[str, Any]:
    job = copy.deepcopy(JOB)
    job["spec"]["template"]["spec"]["nodeSelector"] = {"gpu": "a100"}
    return job


@pytest.mark.parametrize(
    "job,workload,expected",
    [
        pytest.param(JOB, None, ["CreateWorkload"], id="a new suspended job gets a Workload"),
        pytest.param(running(JOB, 0), None, ["StopJob", "CreateWorkload"],
                     id="a job found running without a Workload is stopped and gets one"),
        pytest.param(a_job(queue=None), None, [], id="a job without a queue is left alone"),
        pytest.param(JOB, workload_for(JOB), [], id="a pending job stays suspended"),
        pytest.param(running(JOB), workload_for(JOB), ["StopJob"], id="a job running without admission is stopped"),
        pytest.param(JOB, workload_for(JOB, *ADMITTED), ["StartJob"], id="an admitted job is started"),
        pytest.param(running(JOB), workload_for(JOB, *ADMITTED), [], id="an admitted running job is left alone"),
        pytest.param(running(JOB), workload_for(JOB, *EVICTED), ["StopJob"], id="an evicted job is stopped first"),
        pytest.param(running(JOB, active=2) | {"spec": {**JOB["spec"], "suspend": True}}, workload_for(JOB, *EVICTED), [],
                     id="an evicted job whose pods still run keeps its quota"),
        pytest.param(JOB, workload_for(JOB, *EVICTED), ["ReleaseQuota"],
                     id="an evicted job whose pods are gone releases its quota"),
        pytest.param(admitted_then_stopped(), workload_for(JOB, *EVICTED), ["RestoreJob", "ReleaseQuota"],
                     id="a stopped job gets its submitted templates back once suspended"),
        pytest.param(done(running(JOB, 0), "Complete"), workload_for(JOB, *ADMITTED), ["FinishWorkload"],
                     id="a completed job finishes its Workload"),
        pytest.param(done(running(JOB, 0), "Failed"), workload_for(JOB, *ADMITTED), ["FinishWorkload"],
                     id="a failed job finishes its Workload too"),
        pytest.param(done(JOB, "Complete"), workload_for(JOB, *ADMITTED, ("Finished", "True", "Succeeded")), [],
                     id="a finished Workload is left alone"),
        pytest.param(a_job(parallelism=5), workload_for(JOB), ["ReplaceWorkload"],
                     id="a waiting job resized since gets a fresh Workload"),
        pytest.param(a_job(parallelism=5), workload_for(JOB, *ADMITTED), ["StartJob"],
                     id="a Workload holding quota is never replaced"),
        pytest.param(a_job(cpu="plenty"), None, ["Invalid"], id="a job with unreadable requests gets a warning"),
    ],
)
def test_reconcile_job(job: dict[str, Any], workload: dict[str, Any] | None, expected: list[str]) -> None:
    assert [type(a).__name__ for a in decide(job, workload)] == expected


def test_starting_injects_the_flavor_node_labels_and_tolerations() -> None:
    (start,) = decide(JOB, workload_for(JOB, *ADMITTED))
    assert isinstance(start, ji.StartJob) and start.message == "Admitted by clusterQueue cq-a"
    pod = start.job["spec"]["template"]["spec"]
    assert start.job["spec"]["suspend"] is False
    assert pod["nodeSelector"] == {"gpu": "a100"}
    assert pod["tolerations"] == [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert "nodeSelector" not in JOB["spec"]["template"]["spec"], "the observed job is not modified"


def test_stopping_suspends_first_and_restores_the_submitted_templates_after() -> None:
    (start,) = decide(JOB, workload_for(JOB, *ADMITTED))
    started = running(dict(start.job))
    (stop,) = decide(started, workload_for(JOB, *EVICTED))
    assert isinstance(stop, ji.StopJob) and stop.job["spec"]["suspend"] is True
    assert stop.job["spec"]["template"] == started["spec"]["template"], "a running job's template cannot change"
    restore, _ = decide(running(dict(stop.job), active=0) | {"spec": stop.job["spec"]}, workload_for(JOB, *EVICTED))
    assert isinstance(restore, ji.RestoreJob)
    assert restore.job["spec"]["template"] == JOB["spec"]["template"]


def an_appwrapper(phase: str, *conditions: tuple[str, str], suspend: bool = False) -> dict[str, Any]:
    """The demo's PyTorchJob AppWrapper in `phase` with the given (type, status) conditions."""
    aw = a_pytorch_appwrapper()
    aw["spec"]["suspend"] = suspend
    aw["status"] = {"phase": phase, "conditions": [{"type": t, "status": s, "reason": "Test", "message": ""}
                                                   for t, s in conditions]}
    return aw


AW = an_appwrapper("")


@pytest.mark.parametrize(
    "aw,workload,expected",
    [
        pytest.param(an_appwrapper("Succeeded", ("QuotaReserved", "False"), ("ResourcesDeployed", "True")),
                     workload_for(AW, *ADMITTED), ["FinishWorkload"],
                     id="a succeeded AppWrapper finishes its Workload though its resources stay for the TTL"),
        pytest.param(an_appwrapper("Failed", ("QuotaReserved", "True"), ("ResourcesDeployed", "True")),
                     workload_for(AW, *ADMITTED), [],
                     id="a failed AppWrapper still deleting its components keeps its quota"),
        pytest.param(an_appwrapper("Failed", ("QuotaReserved", "False"), ("ResourcesDeployed", "False")),
                     workload_for(AW, *ADMITTED), ["FinishWorkload"],
                     id="a failed AppWrapper with nothing deployed finishes its Workload"),
        pytest.param(an_appwrapper("Suspending", ("QuotaReserved", "True"), ("ResourcesDeployed", "True"), suspend=True),
                     workload_for(AW, *EVICTED), [],
                     id="an evicted AppWrapper still taking its components down keeps its quota"),
        pytest.param(an_appwrapper("Suspending", ("QuotaReserved", "True"), ("ResourcesDeployed", "False"), suspend=True),
                     workload_for(AW, *EVICTED), [],
                     id="an evicted AppWrapper is active until it gives its QuotaReserved back"),
        pytest.param(an_appwrapper("Suspended", ("QuotaReserved", "False"), ("ResourcesDeployed", "False"), suspend=True),
                     workload_for(AW, *EVICTED), ["ReleaseQuota"],
                     id="an evicted AppWrapper once suspended releases its quota"),
    ],
)
def test_an_appwrappers_quota_follows_its_lifecycle(aw: dict[str, Any], workload: dict[str, Any],
                                                   expected: list[str]) -> None:
    assert [type(a).__name__ for a in decide(aw, workload)] == expected


def test_an_admitted_appwrapper_gets_pod_set_infos_per_component() -> None:
    aw = a_pytorch_appwrapper()
    aw["spec"]["suspend"] = True
    (start,) = decide(aw, workload_for(aw, *ADMITTED))
    assert isinstance(start, ji.StartJob)
    infos = start.job["spec"]["components"][0]["podSetInfos"]
    assert infos == [{"nodeSelector": {"gpu": "a100"}, "tolerations": [FLAVORS["a100"]["spec"]["tolerations"][0]]}] * 2
    assert start.job["spec"]["suspend"] is False


@pytest.mark.parametrize(("managed_by", "finalizers", "written"), [
    pytest.param(None, None, [keys.APPWRAPPER_FINALIZER],
                 id="an AppWrapper this controller runs gets the lifecycle's finalizer with its un-suspend"),
    pytest.param(keys.APPWRAPPER_CONTROLLER_NAME, ["example.com/keep"], ["example.com/keep", keys.APPWRAPPER_FINALIZER],
                 id="the finalizer is added beside the ones it already has"),
    pytest.param(None, [keys.APPWRAPPER_FINALIZER], [keys.APPWRAPPER_FINALIZER],
                 id="an AppWrapper that has the finalizer does not get it twice"),
    pytest.param("kueue.x-k8s.io/multikueue", None, None,
                 id="an AppWrapper another controller runs gets no finalizer of ours"),
])
def test_an_admitted_appwrapper_carries_the_lifecycle_finalizer_only_if_run_here(
        managed_by: str | None, finalizers: list[str] | None, written: list[str] | None) -> None:
    aw = a_pytorch_appwrapper()
    aw["spec"]["suspend"] = True
    if managed_by is not None:
        aw["spec"]["managedBy"] = managed_by
    if finalizers is not None:
        aw["metadata"]["finalizers"] = finalizers
    (start,) = decide(aw, workload_for(aw, *ADMITTED))
    assert isinstance(start, ji.StartJob)
    assert start.job["metadata"].get("finalizers") == written


def test_a_pytorchjob_is_started_through_its_run_policy() -> None:
    job = a_pytorchjob()
    job["spec"]["runPolicy"] = {"suspend": True}
    (start,) = decide(job, workload_for(job, *ADMITTED, flavor="default"))
    assert isinstance(start, ji.StartJob) and start.job["spec"]["runPolicy"]["suspend"] is False


def test_releasing_quota_after_preemption_marks_the_workload_requeued() -> None:
    (release,) = decide(JOB, workload_for(JOB, *EVICTED))
    assert isinstance(release, ji.ReleaseQuota)
    status = release.status_patch["status"]
    assert status["admission"] is None
    by_type = {c["type"]: c for c in status["conditions"]}
    assert (by_type["QuotaReserved"]["status"], by_type["QuotaReserved"]["reason"]) == ("False", "Pending")
    assert by_type["Requeued"]["status"] == "True"
    assert by_type["Evicted"]["status"] == "True", "eviction stays recorded"


def test_finishing_copies_the_job_outcome() -> None:
    (finish,) = decide(done(JOB, "Failed"), workload_for(JOB, *ADMITTED))
    assert isinstance(finish, ji.FinishWorkload) and finish.reason == "Failed"
    (cond,) = [c for c in finish.status_patch["status"]["conditions"] if c["type"] == "Finished"]
    assert (cond["status"], cond["reason"], cond["message"], cond["lastTransitionTime"]) == ("True", "Failed", "job Failed", NOW)


def test_a_missing_flavor_is_reported_not_crashed_on() -> None:
    (invalid,) = decide(JOB, workload_for(JOB, *ADMITTED), flavors={})
    assert isinstance(invalid, ji.Invalid) and invalid.message == 'ResourceFlavor "a100" not found'


# Moving a job to another queue (issue 16 item 4): kubernetes-sigs/kueue v0.10.2
# pkg/controller/jobframework/reconciler.go, ReconcileGenericJob step 7 ("update queue name if
# changed": a suspended job whose Workload is not admitted has spec.queueName follow the label),
# and the step "checking the workload is updated with queue name when the job does" of the
# integration tests test/integration/controller/jobs/{job/job_controller_test.go,
# kubeflow/kubeflowjob.go, rayjob/rayjob_controller_test.go, raycluster/raycluster_controller_test.go}:
# the same Workload (same creation time) gets the new queueName. AppWrapper is built into Kueue
# from v0.11 on the same reconciler. The gateway refuses the relabel of a job that runs.
RAY_POD = {"spec": {"containers": [{"name": "ray", "image": "ray:2"}]}}
RAY_CLUSTER_SPEC = {"headGroupSpec": {"template": RAY_POD},
                    "workerGroupSpecs": [{"groupName": "workers", "replicas": 2, "template": RAY_POD}]}


def queued(obj: dict[str, Any], queue: str, **suspend: Any) -> dict[str, Any]:
    """`obj` in team-a labelled for `queue` and suspended through its kind's switch."""
    obj = copy.deepcopy(obj)
    meta = obj["metadata"]
    meta.setdefault("namespace", "team-a")
    meta.setdefault("uid", f"uid-{meta['name']}")
    meta.setdefault("labels", {})["kueue.x-k8s.io/queue-name"] = queue
    path = QUEUED[obj["kind"]].suspend_path
    target = obj
    for step in path[:-1]:
        target = target.setdefault(step, {})
    target[path[-1]] = suspend.get("suspend", True)
    return obj


MOVABLE = {
    "Job": a_job(),
    "PyTorchJob": a_pytorchjob(),
    "RayJob": {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "rj"},
               "spec": {"rayClusterSpec": RAY_CLUSTER_SPEC}},
    "RayCluster": {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc"},
                   "spec": copy.deepcopy(RAY_CLUSTER_SPEC)},
    "AppWrapper": a_pytorch_appwrapper(),
}


@pytest.mark.parametrize("kind", list(MOVABLE))
def test_a_suspended_job_relabelled_moves_its_pending_workload(kind: str) -> None:
    typo = queued(MOVABLE[kind], "team-a-queu")
    fixed = queued(MOVABLE[kind], "team-a-queue")
    wl = workload_for(typo)
    wl["metadata"]["resourceVersion"] = "41"
    (move,) = decide(fixed, wl)
    assert isinstance(move, ji.MoveWorkload) and move.workload_name == wl["metadata"]["name"]
    assert move.spec_patch == {"metadata": {"resourceVersion": "41"}, "spec": {"queueName": "team-a-queue"}}
    assert move.message == 'Workload moved from LocalQueue "team-a-queu" to "team-a-queue"'
    assert decide(fixed, {**wl, "spec": {**wl["spec"], "queueName": "team-a-queue"}}) == [], "moved once"


RELEASED = (("QuotaReserved", "False", "Pending"), ("Admitted", "False", "NoReservation"), ("Evicted", "True", "Preempted"))


@pytest.mark.parametrize(
    "job,workload,expected",
    [
        pytest.param(queued(JOB, "b"), workload_for(queued(JOB, "a")), ["MoveWorkload"],
                     id="a pending Workload follows its suspended job to the new queue"),
        pytest.param(queued(JOB, "b"), workload_for(queued(JOB, "a"), *ADMITTED), ["StartJob"],
                     id="an admitted Workload stays and its job starts as Kueue starts it"),
        pytest.param(queued(JOB, "b"), workload_for(queued(JOB, "a"), *EVICTED), ["ReleaseQuota"],
                     id="an evicted Workload still holding quota gives it back before it moves"),
        pytest.param(queued(JOB, "b"), workload_for(queued(JOB, "a"), *RELEASED), ["MoveWorkload"],
                     id="an evicted Workload whose quota is released moves where Kueue would wait for readmission"),
        pytest.param(running(queued(JOB, "b")), workload_for(queued(JOB, "a"), *ADMITTED), [],
                     id="a running job's Workload is never moved"),
        pytest.param(running(queued(JOB, "b")), workload_for(queued(JOB, "a")), ["StopJob"],
                     id="a job found running unadmitted is stopped first and moved on the next pass"),
        pytest.param(queued(a_job(parallelism=5), "b"), workload_for(queued(JOB, "a")), ["ReplaceWorkload"],
                     id="a job resized and relabelled gets a fresh Workload in the new queue"),
    ],
)
def test_queue_moves(job: dict[str, Any], workload: dict[str, Any], expected: list[str]) -> None:
    assert [type(a).__name__ for a in decide(job, workload)] == expected
