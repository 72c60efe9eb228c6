"""We test the PyTorchJob controller on a PyTorchJob as MLBatch users write one: pod and service names, labels and
env as the training operator sets them, conditions through the life of a job, restarts and the
backoff limit, ExitCode restarts, suspend and resume."""

from __future__ import annotations

import copy

import pytest

from localcluster.sim.pytorchjobs import reconcile
from tests.localcluster.runtime.builders import a_pytorchjob, at


def sample(**run_policy):
    job = a_pytorchjob()
    job["metadata"].update(namespace="team1", uid="pt-uid")
    if run_policy:
        job["spec"]["runPolicy"] = run_policy
    return job


def with_workers(job, n):
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = n
    return job


def env(pod):
    return {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}


def running(pod, restarts=0, phase="Running", exit_code=None):
    pod = copy.deepcopy(pod)
    state = {"running": {}} if phase == "Running" else {"terminated": {"exitCode": exit_code or 0}}
    pod["status"] = {"phase": phase, "containerStatuses": [{"name": "pytorch", "restartCount": restarts, "state": state}]}
    return pod


def conditions(step):
    return {c["type"]: (c["status"], c["reason"]) for c in step.status["conditions"]}


def test_a_new_job_gets_master_and_worker_pods_and_headless_services():
    step = reconcile(with_workers(sample(), 3), [], [], at(0))
    assert [p["metadata"]["name"] for p in step.create_pods] == [
        "sample-pytorchjob-master-0", "sample-pytorchjob-worker-0", "sample-pytorchjob-worker-1", "sample-pytorchjob-worker-2"]
    assert [s["metadata"]["name"] for s in step.create_services] == [p["metadata"]["name"] for p in step.create_pods]
    service = step.create_services[0]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["ports"] == [{"name": "pytorchjob-port", "port": 23456}]
    assert service["spec"]["selector"]["training.kubeflow.org/replica-index"] == "0"
    assert conditions(step) == {"Created": ("True", "PyTorchJobCreated")}


@pytest.mark.parametrize(
    ("index", "expected_rank"),
    [pytest.param(0, "0", id="the master is rank 0"), pytest.param(2, "2", id="worker 1 is node rank 2")],
)
def test_env_matches_the_training_operator(index, expected_rank):
    pods = reconcile(with_workers(sample(), 3), [], [], at(0)).create_pods
    pod = pods[index]
    assert env(pod) == {
        "PYTHONUNBUFFERED": "1",
        "MASTER_PORT": "23456", "PET_MASTER_PORT": "23456",
        "MASTER_ADDR": "sample-pytorchjob-master-0", "PET_MASTER_ADDR": "sample-pytorchjob-master-0",
        "WORLD_SIZE": "4", "RANK": expected_rank, "PET_NODE_RANK": expected_rank,
        "PET_NPROC_PER_NODE": "auto", "PET_NNODES": "4",
    }
    assert [e["name"] for e in pod["spec"]["containers"][0]["env"]][:3] == ["PYTHONUNBUFFERED", "MASTER_PORT", "PET_MASTER_PORT"]


def test_labels_ports_restart_policy_owner_and_init_container():
    master, worker = reconcile(sample(), [], [], at(0)).create_pods
    assert master["metadata"]["labels"] == {
        "training.kubeflow.org/job-name": "sample-pytorchjob",
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/replica-type": "master",
        "training.kubeflow.org/replica-index": "0",
        "training.kubeflow.org/job-role": "master",
    }
    assert "training.kubeflow.org/job-role" not in worker["metadata"]["labels"]
    assert master["spec"]["containers"][0]["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456}]
    assert master["spec"]["restartPolicy"] == "OnFailure"
    assert master["metadata"]["ownerReferences"][0]["kind"] == "PyTorchJob"
    assert "initContainers" not in master["spec"]
    assert [c["name"] for c in worker["spec"]["initContainers"]] == ["init-pytorch"]


def test_nproc_per_node_multiplies_world_size_only():
    job = with_workers(sample(), 3)
    job["spec"]["nprocPerNode"] = "8"
    worker = reconcile(job, [], [], at(0)).create_pods[2]
    assert (env(worker)["WORLD_SIZE"], env(worker)["RANK"], env(worker)["PET_NPROC_PER_NODE"]) == ("32", "2", "8")


def life(job, phases, now=10, **kw):
    first = reconcile(job, [], [], at(0))
    job["status"] = first.status
    pods = [running(p, phase=ph, **kw) for p, ph in zip(first.create_pods, phases)]
    return reconcile(job, pods, first.create_services, at(now))


def test_running_then_succeeded_when_the_master_succeeds():
    job = sample()
    step = life(job, ["Running", "Running"])
    assert conditions(step) == {"Created": ("True", "PyTorchJobCreated"), "Running": ("True", "PyTorchJobRunning")}
    assert step.status["replicaStatuses"]["Master"]["active"] == 1
    job["status"] = step.status
    first = reconcile(job, [], [], at(0))
    done = reconcile(job, [running(p, phase="Succeeded") for p in first.create_pods], first.create_services, at(20))
    assert conditions(done)["Succeeded"] == ("True", "PyTorchJobSucceeded")
    assert conditions(done)["Running"] == ("False", "PyTorchJobRunning")
    assert done.status["completionTime"] == "2026-01-01T00:00:20Z"


def test_a_failed_replica_under_never_fails_the_job():
    job = sample()
    for spec in job["spec"]["pytorchReplicaSpecs"].values():
        spec["restartPolicy"] = "Never"
    step = life(job, ["Running", "Failed"], exit_code=1)
    failed = next(c for c in step.status["conditions"] if c["type"] == "Failed")
    assert failed["message"] == "PyTorchJob team1/sample-pytorchjob has failed because 1 Worker replica(s) failed."


def test_restarts_beyond_backoff_limit_fail_the_job():
    job = sample(backoffLimit=2)
    first = reconcile(job, [], [], at(0))
    job["status"] = first.status
    pods = [running(first.create_pods[0]), running(first.create_pods[1], restarts=2)]
    step = reconcile(job, pods, first.create_services, at(30))
    assert conditions(step)["Failed"] == ("True", "PyTorchJobFailed")
    assert step.status["conditions"][-1]["message"] == "Job sample-pytorchjob has failed because it has reached the specified backoff limit"


def test_exit_code_policy_recreates_a_pod_killed_by_a_signal():
    job = sample()
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["restartPolicy"] = "ExitCode"
    first = reconcile(job, [], [], at(0))
    assert first.create_pods[1]["spec"]["restartPolicy"] == "Never"
    job["status"] = first.status
    pods = [running(first.create_pods[0]), running(first.create_pods[1], phase="Failed", exit_code=137)]
    step = reconcile(job, pods, first.create_services, at(5))
    assert step.delete_pods == ["sample-pytorchjob-worker-0"]
    assert conditions(step)["Restarting"] == ("True", "PyTorchJobRestarting")
    assert "Running" not in conditions(step)


def test_suspend_removes_pods_and_services_and_resume_recreates_them():
    job = sample(suspend=True)
    first = reconcile(sample(), [], [], at(0))
    job["status"] = first.status
    suspended = reconcile(job, [running(p) for p in first.create_pods], first.create_services, at(5))
    assert suspended.delete_pods == ["sample-pytorchjob-master-0", "sample-pytorchjob-worker-0"]
    assert suspended.delete_services == suspended.delete_pods
    assert conditions(suspended)["Suspended"] == ("True", "PyTorchJobSuspended")
    job["status"] = suspended.status
    job["spec"]["runPolicy"]["suspend"] = False
    resumed = reconcile(job, [], [], at(9))
    assert conditions(resumed)["Suspended"] == ("False", "PyTorchJobResumed")
    assert len(resumed.create_pods) == 2 and resumed.status["startTime"] == "2026-01-01T00:00:09Z"


def finished(job, seconds):
    first = reconcile(job, [], [], at(0))
    job["status"] = first.status
    pods = [running(p, phase="Succeeded") for p in first.create_pods[:1]] + [running(p) for p in first.create_pods[1:]]
    done = reconcile(job, pods, first.create_services, at(seconds))
    job["status"] = done.status
    return pods, first.create_services


@pytest.mark.parametrize(
    ("policy", "deleted"),
    [
        pytest.param(None, [], id="cleanPodPolicy None keeps the pods"),
        pytest.param("Running", ["sample-pytorchjob-worker-0"], id="cleanPodPolicy Running deletes the running pods"),
        pytest.param("All", ["sample-pytorchjob-master-0", "sample-pytorchjob-worker-0"], id="cleanPodPolicy All deletes every pod"),
    ],
)
def test_clean_pod_policy_after_success(policy, deleted):
    job = sample(**({"cleanPodPolicy": policy} if policy else {}))
    pods, services = finished(job, 10)
    assert reconcile(job, pods, services, at(11)).delete_pods == deleted


def test_ttl_after_finished_deletes_the_job_when_it_expires():
    job = sample(ttlSecondsAfterFinished=30)
    pods, services = finished(job, 10)
    assert reconcile(job, pods, services, at(20)).requeue_after.total_seconds() == 20
    assert reconcile(job, pods, services, at(40)).delete_job is True


def test_active_deadline_fails_the_job():
    job = sample(activeDeadlineSeconds=60)
    first = reconcile(job, [], [], at(0))
    assert first.requeue_after.total_seconds() == 60
    job["status"] = first.status
    late = reconcile(job, [running(p) for p in first.create_pods], first.create_services, at(60))
    assert conditions(late)["Failed"] == ("True", "PyTorchJobFailed")
    assert late.status["conditions"][-1]["message"] == "Job sample-pytorchjob has failed because it was active longer than specified deadline"
