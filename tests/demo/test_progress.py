"""The demo's live lines, from Workload and ClusterQueue status as the controller writes them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from demo.progress import JobState, job_state, job_states, queue_table, transitions


def condition(kind: str, status: str, reason: str, message: str = "") -> dict[str, str]:
    return {"type": kind, "status": status, "reason": reason, "message": message}


def workload(job: str, *conditions: dict[str, str], cq: str = "", uid: str = "") -> dict[str, Any]:
    namespace, name = job.split("/")
    status: dict[str, Any] = {"conditions": list(conditions)}
    if cq:
        status["admission"] = {"clusterQueue": cq}
    return {"metadata": {"name": f"job-{name}-abcde", "namespace": namespace, "uid": uid or f"uid-{name}",
                         "ownerReferences": [{"kind": "Job", "name": name, "controller": True}]},
            "status": status}


RESERVED = condition("QuotaReserved", "True", "QuotaReserved")
WAITING = condition("QuotaReserved", "False", "Pending", "insufficient unused quota for nvidia.com/gpu, 8 more needed")
EVICTED = condition("Evicted", "True", "Preempted")
RECLAIMED = condition("Preempted", "True", "InCohortReclamation",
                      "Preempted to accommodate a workload (UID: uid-bob-1, JobUID: j) due to reclamation within the cohort")
FINISHED = condition("Finished", "True", "Succeeded")


@pytest.mark.parametrize(
    ("wl", "state", "reason"),
    [
        pytest.param(workload("a/j"), "pending", "", id="a workload without conditions is pending"),
        pytest.param(workload("a/j", WAITING), "pending", "Pending", id="quota not reserved is pending"),
        pytest.param(workload("a/j", RESERVED, cq="cq"), "admitted", "QuotaReserved", id="reserved quota is admitted"),
        pytest.param(workload("a/j", RESERVED, EVICTED, RECLAIMED, cq="cq"), "evicting", "InCohortReclamation",
                     id="evicted while still holding quota is evicting, by the preemption reason"),
        pytest.param(workload("a/j", WAITING, EVICTED, RECLAIMED), "pending", "InCohortReclamation",
                     id="a preempted workload that gave its quota back is pending, by the preemption reason"),
        pytest.param(workload("a/j", RESERVED, FINISHED, cq="cq"), "finished", "Succeeded",
                     id="finished wins over everything"),
    ],
)
def test_a_workload_state_comes_from_its_conditions(wl: dict[str, Any], state: str, reason: str) -> None:
    got = job_state(wl)
    assert (got.job, got.state, got.reason) == ("a/j", state, reason)


def test_the_job_is_named_by_its_controlling_owner() -> None:
    wl = workload("team-a/alice-1")
    wl["metadata"]["ownerReferences"].insert(0, {"kind": "Other", "name": "not-me"})
    assert job_state(wl).job == "team-a/alice-1"


def test_a_workload_without_owner_is_named_itself() -> None:
    assert job_state({"metadata": {"name": "wl", "namespace": "ns"}}).job == "ns/wl"


def borrowing(name: str, gpus: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"resourceGroups": [{"flavors": [{"resources": [
        {"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]},
        "status": {"admittedWorkloads": 2, "pendingWorkloads": 1, "flavorsReservation": [{"resources": [
            {"name": "cpu", "total": "4", "borrowed": "0"}, {"name": "nvidia.com/gpu", "total": "16", "borrowed": gpus}]}]}}


def states(*wls: dict[str, Any]) -> dict[str, JobState]:
    return job_states(list(wls))


@pytest.mark.parametrize(
    ("before", "after", "lines"),
    [
        pytest.param(states(), states(workload("a/j", RESERVED, cq="a-cq")),
                     ["admitted   a/j into a-cq",
                      "borrowing  a-cq now holds 8 GPUs beyond its nominal quota, lent by its cohort"],
                     id="an admission into a borrowing queue is followed by how much the queue borrows"),
        pytest.param(states(), states(workload("a/j", RESERVED, cq="a-cq"), workload("a/k", RESERVED, cq="a-cq")),
                     ["admitted   a/j into a-cq", "admitted   a/k into a-cq",
                      "borrowing  a-cq now holds 8 GPUs beyond its nominal quota, lent by its cohort"],
                     id="several admissions into one queue are followed by one borrowing line"),
        pytest.param(states(), states(workload("b/k", RESERVED, cq="b-cq")), ["admitted   b/k into b-cq"],
                     id="an admission within nominal quota says nothing of borrowing"),
        pytest.param(states(), states(workload("a/j", WAITING)),
                     ["pending    a/j: insufficient unused quota for nvidia.com/gpu, 8 more needed"],
                     id="a new pending job says why in Kueue's words"),
        pytest.param(states(workload("a/j", WAITING)), states(workload("a/j", WAITING)), [],
                     id="nothing changed, nothing said"),
        pytest.param(states(), states(workload("a/j")), [],
                     id="a workload not yet considered by the controller is not announced"),
        pytest.param(states(workload("a/j")), states(workload("a/j", WAITING)),
                     ["pending    a/j: insufficient unused quota for nvidia.com/gpu, 8 more needed"],
                     id="it is announced once the controller says why it waits"),
        pytest.param(states(workload("a/j", RESERVED, cq="a-cq"), workload("b/bob-1", uid="uid-bob-1")),
                     states(workload("a/j", RESERVED, EVICTED, RECLAIMED, cq="a-cq"),
                            workload("b/bob-1", uid="uid-bob-1")),
                     ["preempted  a/j: InCohortReclamation (to make room for b/bob-1)"],
                     id="a preemption names its reason and the job it made room for"),
        pytest.param(states(workload("a/j", RESERVED, cq="a-cq")), states(workload("a/j", WAITING, EVICTED, RECLAIMED)),
                     ["preempted  a/j: InCohortReclamation"],
                     id="a preemption seen only after the quota was freed is still reported"),
        pytest.param(states(workload("a/j", RESERVED, EVICTED, RECLAIMED, cq="a-cq")),
                     states(workload("a/j", WAITING, EVICTED, RECLAIMED)),
                     ["requeued   a/j: its pods are gone, its quota is free, it waits again"],
                     id="an eviction that completes is a requeue"),
        pytest.param(states(workload("a/j", RESERVED, cq="a-cq")), states(workload("a/j", RESERVED, FINISHED, cq="a-cq")),
                     ["finished   a/j: Succeeded"], id="a finished job says how it ended"),
    ],
)
def test_transitions_between_snapshots(before: dict[str, JobState], after: dict[str, JobState], lines: list[str]) -> None:
    queues = {"a-cq": borrowing("a-cq", "8"), "b-cq": borrowing("b-cq", "0")}
    assert transitions(before, after, queues, queues) == lines


@pytest.mark.parametrize(("was", "now", "lines"), [
    pytest.param("0", "24", ["borrowing  a-cq now holds 24 GPUs beyond its nominal quota, lent by its cohort"],
                 id="borrowing that shows a poll after the admissions is reported then"),
    pytest.param("8", "16", ["borrowing  a-cq now holds 16 GPUs beyond its nominal quota, lent by its cohort"],
                 id="borrowing that grows is reported"),
    pytest.param("24", "16", [], id="borrowing that shrinks (a reclaim) is told by its preemption, not again"),
    pytest.param("16", "16", [], id="borrowing that stays says nothing"),
])
def test_a_queues_borrowing_that_grows_without_an_admission_in_the_same_poll(was: str, now: str,
                                                                             lines: list[str]) -> None:
    jobs = states(workload("a/j", RESERVED, cq="a-cq"))
    assert transitions(jobs, jobs, {"a-cq": borrowing("a-cq", now)}, {"a-cq": borrowing("a-cq", was)}) == lines


def test_the_queue_table_shows_reserved_over_nominal_gpus_borrowing_and_counts() -> None:
    assert queue_table([borrowing("team-a-cq", "8"), {"metadata": {"name": "empty"}}]) == [
        "CLUSTERQUEUE  GPUS  BORROWED  ADMITTED  PENDING",
        "team-a-cq     16/8  8         2         1",
        "empty         0/0   0         0         0",
    ]


CONDITIONS = [RESERVED, WAITING, EVICTED, RECLAIMED, FINISHED, condition("Admitted", "True", "Admitted")]
snapshots = st.lists(
    st.tuples(st.sampled_from(["a/j1", "a/j2", "b/k1"]), st.lists(st.sampled_from(CONDITIONS), max_size=4, unique_by=id),
              st.sampled_from(["", "a-cq", "b-cq"])),
    max_size=5, unique_by=lambda t: t[0],
).map(lambda items: states(*(workload(job, *conds, cq=cq) for job, conds, cq in items)))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots)
def test_a_snapshot_compared_with_itself_says_nothing(snapshot: dict[str, JobState]) -> None:
    queues = {"a-cq": borrowing("a-cq", "8")}
    assert transitions(snapshot, dict(snapshot), queues, queues) == []


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots, snapshots)
def test_every_line_is_about_one_job_of_the_later_snapshot_or_a_borrowing_queue(before: dict[str, JobState],
                                                           after: dict[str, JobState]) -> None:
    lines = transitions(before, after, {"a-cq": borrowing("a-cq", "8")}, {"a-cq": borrowing("a-cq", "0")})
    jobs = [line for line in lines if not line.startswith("borrowing ")]
    assert len(jobs) <= len(after)
    assert all(line.split()[1].rstrip(":") in after for line in jobs)
    assert all(line.split()[1] == "a-cq" for line in lines if line.startswith("borrowing "))
