"""We test the Job controller's reconcile as a function of (job, pods, now): pod creation in both
completion modes, counting, success and every failure path with upstream reasons, suspend and
resume, deadlines, backoff, podFailurePolicy, backoffLimitPerIndex and the TTL."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localcluster.sim.job_pods import (
    COMPLETION_INDEX,
    INDEX_FAILURE_COUNT,
    TRACKING_FINALIZER,
    format_indexes,
    parse_indexes,
)
from localcluster.sim.jobs import reconcile
from tests.localcluster.runtime.builders import a_job, at, job_pod


def conditions(step):
    return {c["type"]: (c["status"], c["reason"]) for c in step.status.get("conditions") or []}


def test_a_new_job_creates_parallelism_pods_labelled_owned_and_tracked():
    job = a_job(parallelism=3, completions=5)
    step = reconcile(job, [], at(0))
    assert len(step.creates) == 3
    pod = step.creates[0]
    assert pod["metadata"]["generateName"] == "job-"
    assert pod["metadata"]["labels"] == {
        "app": "job",
        "batch.kubernetes.io/controller-uid": "job-uid",
        "batch.kubernetes.io/job-name": "job",
        "controller-uid": "job-uid",
        "job-name": "job",
    }
    assert pod["metadata"]["ownerReferences"] == [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "job", "uid": "job-uid", "controller": True, "blockOwnerDeletion": True}
    ]
    assert pod["metadata"]["finalizers"] == [TRACKING_FINALIZER]
    assert (step.status["active"], step.status["startTime"]) == (3, "2026-01-01T00:00:00Z")


def test_indexed_pods_carry_their_index_hostname_and_env():
    job = a_job(parallelism=2, completions=4, completionMode="Indexed")
    step = reconcile(job, [job_pod(job, "job-0-a", index=0)], at(0))
    assert [p["metadata"]["annotations"][COMPLETION_INDEX] for p in step.creates] == ["1"]
    pod = step.creates[0]
    assert pod["metadata"]["generateName"] == "job-1-"
    assert pod["metadata"]["labels"][COMPLETION_INDEX] == "1"
    assert pod["spec"]["hostname"] == "job-1"
    assert pod["spec"]["containers"][0]["env"] == [
        {"name": "JOB_COMPLETION_INDEX",
         "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}
    ]


def test_a_subdomain_in_the_template_is_kept_for_indexed_pods():
    job = a_job(completions=1, completionMode="Indexed")
    job["spec"]["template"]["spec"]["subdomain"] = "workers"
    pod = reconcile(job, [], at(0)).creates[0]
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("job-0", "workers")


@pytest.mark.parametrize(
    ("spec", "pods", "running", "succeeded", "created"),
    [
        pytest.param(dict(parallelism=2, completions=3), ["Succeeded", "Running"], 1, 1, 1,
                     id="finished pods are replaced up to completions"),
        pytest.param(dict(parallelism=3, completions=3), ["Succeeded", "Succeeded", "Running"], 1, 2, 0,
                     id="no more pods than the completions still needed"),
        pytest.param(dict(parallelism=2), ["Running", "Running"], 2, 0, 0,
                     id="a work queue job keeps parallelism pods until one succeeds"),
    ],
)
def test_counts_and_replacements(spec, pods, running, succeeded, created):
    job = a_job(**spec)
    step = reconcile(job, [job_pod(job, f"p{i}", phase) for i, phase in enumerate(pods)], at(5))
    assert (step.status["active"] - len(step.creates), step.status["succeeded"], len(step.creates)) == (running, succeeded, created)


def test_counted_pods_lose_their_finalizer_and_are_not_counted_twice():
    job = a_job(completions=2, parallelism=2)
    first = reconcile(job, [job_pod(job, "a", "Succeeded"), job_pod(job, "b")], at(5))
    assert (first.status["succeeded"], first.uncount) == (1, ["a"])
    job["status"] = first.status
    again = reconcile(job, [job_pod(job, "a", "Succeeded", tracked=False), job_pod(job, "b")], at(6))
    assert again.status["succeeded"] == 1


def test_success_sets_success_criteria_then_complete_with_completion_time():
    job = a_job(completions=2, parallelism=2)
    step = reconcile(job, [job_pod(job, "a", "Succeeded"), job_pod(job, "b", "Succeeded")], at(9))
    assert conditions(step) == {"SuccessCriteriaMet": ("True", "CompletionsReached"), "Complete": ("True", "CompletionsReached")}
    assert step.status["completionTime"] == "2026-01-01T00:00:09Z"
    assert [e.reason for e in step.events] == ["Completed"]


def test_a_work_queue_job_completes_when_one_pod_succeeded_and_the_rest_ended():
    job = a_job(parallelism=2)
    step = reconcile(job, [job_pod(job, "a", "Succeeded"), job_pod(job, "b", "Succeeded")], at(3))
    assert conditions(step)["Complete"] == ("True", "CompletionsReached")


def test_an_indexed_job_completes_when_every_index_succeeded():
    job = a_job(completions=3, parallelism=3, completionMode="Indexed")
    pods = [job_pod(job, f"p{i}", "Succeeded", index=i) for i in range(3)]
    step = reconcile(job, pods + [job_pod(job, "dup", "Succeeded", index=1)], at(3))
    assert (step.status["completedIndexes"], step.status["succeeded"]) == ("0-2", 3)
    assert "Complete" in conditions(step)


@pytest.mark.parametrize(
    ("spec", "pods", "reason"),
    [
        pytest.param(dict(backoffLimit=1), [("Failed", 1), ("Failed", 1)], "BackoffLimitExceeded",
                     id="more failures than backoffLimit fail the job"),
        pytest.param(dict(backoffLimit=0), [("Failed", 1)], "BackoffLimitExceeded", id="backoffLimit 0 fails on the first failure"),
        pytest.param(
            dict(backoffLimit=6, podFailurePolicy={"rules": [
                {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}}]}),
            [("Failed", 42)], "PodFailurePolicy", id="a FailJob rule on an exit code fails the job at once"),
    ],
)
def test_failures_set_failure_target_and_failed_with_upstream_reasons(spec, pods, reason):
    job = a_job(**spec)
    step = reconcile(job, [job_pod(job, f"p{i}", phase, exit_code=code) for i, (phase, code) in enumerate(pods)], at(60))
    assert conditions(step) == {"FailureTarget": ("True", reason), "Failed": ("True", reason)}
    assert step.status["failed"] == len(pods)
    assert step.events[0].type == "Warning" and step.events[0].reason == reason


def test_pod_failure_policy_message_names_container_pod_code_and_rule():
    job = a_job(podFailurePolicy={"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]})
    step = reconcile(job, [job_pod(job, "p0", "Failed", exit_code=42)], at(1))
    failed = next(c for c in step.status["conditions"] if c["type"] == "Failed")
    assert failed["message"] == "Container main for pod default/p0 failed with exit code 42 matching FailJob rule at index 1"


def test_an_ignore_rule_does_not_count_the_failure():
    job = a_job(backoffLimit=0, podFailurePolicy={"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]})
    evicted = job_pod(job, "p0", "Failed", exit_code=143, conditions=[{"type": "DisruptionTarget", "status": "True"}])
    step = reconcile(job, [evicted], at(1))
    assert (step.status["failed"], conditions(step), len(step.creates)) == (0, {}, 1)


def test_failing_deletes_the_active_pods_and_waits_for_them_before_failed():
    job = a_job(backoffLimit=0, parallelism=2, completions=2)
    step = reconcile(job, [job_pod(job, "bad", "Failed"), job_pod(job, "ok")], at(5))
    assert conditions(step) == {"FailureTarget": ("True", "BackoffLimitExceeded")}
    assert step.deletes == ["ok"]
    job["status"] = step.status
    later = reconcile(job, [job_pod(job, "bad", "Failed", tracked=False), job_pod(job, "ok", deleting=True, tracked=False)], at(6))
    assert "Failed" not in conditions(later) and later.status["terminating"] == 1
    done = reconcile(job, [job_pod(job, "bad", "Failed", tracked=False)], at(7))
    assert conditions(done)["Failed"] == ("True", "BackoffLimitExceeded")


def test_active_deadline_fails_the_job_and_is_requeued_until_then():
    job = a_job(activeDeadlineSeconds=30)
    early = reconcile(job, [], at(0))
    assert early.requeue_after.total_seconds() == 30
    job["status"] = early.status
    late = reconcile(job, [job_pod(job, "p")], at(30))
    assert conditions(late)["FailureTarget"] == ("True", "DeadlineExceeded")
    assert late.status["conditions"][0]["message"] == "Job was active longer than specified deadline"
    assert late.deletes == ["p"]


def test_failed_pods_are_replaced_after_an_exponential_backoff():
    job = a_job(backoffLimit=6)
    job["status"] = {"startTime": "2026-01-01T00:00:00Z"}
    failed = [job_pod(job, "p0", "Failed", finished=10, tracked=False), job_pod(job, "p1", "Failed", finished=40, tracked=False)]
    job["status"]["failed"] = 2
    waiting = reconcile(job, failed, at(45))
    assert (waiting.creates, waiting.requeue_after.total_seconds()) == ([], 15)  # 20s after the second failure
    assert len(reconcile(job, failed, at(60)).creates) == 1


def test_suspend_deletes_active_pods_and_resume_starts_again():
    job = a_job(parallelism=2, completions=2, suspend=True)
    job["status"] = {"startTime": "2026-01-01T00:00:00Z"}
    step = reconcile(job, [job_pod(job, "a"), job_pod(job, "b")], at(10))
    assert sorted(step.deletes) == ["a", "b"] and sorted(step.uncount) == ["a", "b"]
    assert conditions(step) == {"Suspended": ("True", "JobSuspended")}
    assert "startTime" not in step.status and step.status["active"] == 0
    job["status"] = step.status
    job["spec"]["suspend"] = False
    resumed = reconcile(job, [], at(20))
    assert conditions(resumed) == {"Suspended": ("False", "JobResumed")}
    assert (len(resumed.creates), resumed.status["startTime"]) == (2, "2026-01-01T00:00:20Z")
    assert [e.reason for e in step.events + resumed.events] == ["Suspended", "Resumed"]


def test_a_job_created_suspended_makes_no_pods():
    step = reconcile(a_job(suspend=True), [], at(0))
    assert (step.creates, conditions(step)) == ([], {"Suspended": ("True", "JobSuspended")})


def test_backoff_limit_per_index_retries_an_index_then_marks_it_failed():
    job = a_job(completions=3, parallelism=3, completionMode="Indexed", backoffLimitPerIndex=1)
    first = reconcile(job, [job_pod(job, "i0", "Failed", index=0, failures=0), job_pod(job, "i1", index=1),
                            job_pod(job, "i2", index=2)], at(100))
    assert [p["metadata"]["annotations"][INDEX_FAILURE_COUNT] for p in first.creates] == ["1"]
    job["status"] = first.status
    second = reconcile(job, [job_pod(job, "i0b", "Failed", index=0, failures=1), job_pod(job, "i1", index=1),
                             job_pod(job, "i2", index=2)], at(200))
    assert (second.status["failedIndexes"], second.creates) == ("0", [])
    job["status"] = second.status
    end = reconcile(job, [job_pod(job, "i1", "Succeeded", index=1), job_pod(job, "i2", "Succeeded", index=2)], at(300))
    assert conditions(end)["Failed"] == ("True", "FailedIndexes")


def test_max_failed_indexes_fails_the_job_early():
    job = a_job(completions=4, parallelism=4, completionMode="Indexed", backoffLimitPerIndex=0, maxFailedIndexes=0)
    step = reconcile(job, [job_pod(job, "i0", "Failed", index=0, failures=0)], at(5))
    assert conditions(step)["FailureTarget"] == ("True", "MaxFailedIndexesExceeded")


def test_ttl_after_finished_deletes_the_job_when_it_expires():
    job = a_job(ttlSecondsAfterFinished=60, status={"conditions": [
        {"type": "Complete", "status": "True", "reason": "CompletionsReached", "lastTransitionTime": "2026-01-01T00:01:00Z"}]})
    assert reconcile(job, [], at(100)).requeue_after.total_seconds() == 20
    assert reconcile(job, [], at(120)).delete_job is True


@given(st.sets(st.integers(min_value=0, max_value=60)))
def test_index_sets_round_trip_through_their_text_form(indexes):
    assert parse_indexes(format_indexes(indexes)) == indexes


@settings(max_examples=60, deadline=None)
@given(
    phases=st.lists(st.sampled_from(["Running", "Succeeded", "Failed"]), max_size=8),
    parallelism=st.integers(min_value=1, max_value=5),
    completions=st.integers(min_value=1, max_value=8),
)
def test_never_more_active_pods_than_parallelism_nor_than_completions_left(phases, parallelism, completions):
    job = a_job(parallelism=parallelism, completions=completions, backoffLimit=100)
    pods = [job_pod(job, f"p{i}", phase) for i, phase in enumerate(phases)]
    step = reconcile(job, pods, at(10_000))
    running = sum(1 for p in phases if p == "Running") - len(step.deletes) + len(step.creates)
    assert running <= parallelism
    assert running <= max(completions - step.status["succeeded"], 0)


@pytest.mark.parametrize(
    ("spec", "created"),
    [
        pytest.param(dict(), 1, id="by default a terminating pod is replaced at once"),
        pytest.param(dict(podReplacementPolicy="Failed"), 0, id="podReplacementPolicy Failed waits for it to end"),
        pytest.param(dict(podFailurePolicy={"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}),
                     0, id="a podFailurePolicy makes Failed the default"),
    ],
)
def test_pod_replacement_policy(spec, created):
    job = a_job(**spec)
    step = reconcile(job, [job_pod(job, "leaving", deleting=True)], at(5))
    assert (len(step.creates), step.status["terminating"]) == (created, 1)


def test_an_indexed_job_waits_for_a_terminating_index_under_policy_failed():
    job = a_job(completions=2, parallelism=2, completionMode="Indexed", podReplacementPolicy="Failed")
    step = reconcile(job, [job_pod(job, "i0", index=0, deleting=True), job_pod(job, "i1", index=1)], at(5))
    assert step.creates == []


@pytest.mark.parametrize(
    ("spec", "counted"),
    [
        pytest.param(dict(backoffLimit=0), 1, id="a tracked pod someone else deletes counts as failed at once, as v1.32"),
        pytest.param(dict(backoffLimit=0, podReplacementPolicy="Failed"), 0,
                     id="under podReplacementPolicy Failed it counts only once it has failed"),
    ],
)
def test_a_pod_deleted_by_someone_else(spec, counted):
    job = a_job(parallelism=1, completions=1, **spec)
    step = reconcile(job, [job_pod(job, "gone", deleting=True)], at(5))
    assert (step.status["failed"], "FailureTarget" in conditions(step)) == (counted, counted == 1)
    assert step.uncount == (["gone"] if counted else [])


def _kubelet_and_api(pods, step, now):
    """What the cluster does with one sync's writes: finalizers off, deletions (a deleted pod is
    killed: Failed, then gone once untracked), creations (bound and running)."""
    by_name = {p["metadata"]["name"]: p for p in pods}
    for name in step.uncount:
        by_name[name]["metadata"]["finalizers"] = []
    for name in step.deletes:
        by_name[name]["metadata"]["deletionTimestamp"] = now
    out = []
    for pod in by_name.values():
        if pod["metadata"].get("deletionTimestamp"):
            if pod["metadata"]["finalizers"]:
                pod["status"]["phase"] = "Failed"  # the kubelet stopped it; it waits for the controller
                out.append(pod)
            continue  # without a finalizer a deleted pod leaves at once
        out.append(pod)
    return out + [{**p, "metadata": {**p["metadata"], "name": f"{p['metadata']['generateName']}{len(out)}-{i}",
                                     "creationTimestamp": now},
                   "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                              "containerStatuses": [{"name": "main", "state": {"running": {}}}]}}
                  for i, p in enumerate(step.creates)]


@given(st.lists(st.booleans(), min_size=1, max_size=12), st.integers(1, 4))
@settings(max_examples=60, deadline=None)
def test_suspending_and_resuming_any_number_of_times_never_costs_a_retry(flips, parallelism):
    job = a_job(parallelism=parallelism, completions=parallelism, backoffLimit=0)
    pods: list = []
    for second, suspend in enumerate([*flips, False]):
        job["spec"]["suspend"] = suspend
        step = reconcile(job, pods, at(second))
        job["status"] = step.status
        pods = _kubelet_and_api(pods, step, f"2026-01-01T00:00:{second:02d}Z")
        assert job["status"]["failed"] == 0
        assert "FailureTarget" not in conditions(step)
    assert len([p for p in pods if not p["metadata"].get("deletionTimestamp")]) == parallelism
