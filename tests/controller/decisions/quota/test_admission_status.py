"""The status patches that carry admission decisions: what they write, and that a repeat writes nothing."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from batchgate.api.kueue import ClusterQueue, LocalQueue, ResourceFlavor, Workload
from controller.decisions.quota import admission_status as st
from controller.decisions.quota.queue_status import cluster_queue_status, local_queue_status
from controller.decisions.quota.outcomes import Admit, Assignment, Evict, PreemptionTarget
from controller.state.quota_state import QuotaState
from tests.controller.decisions.trace_builders import wl_key

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
STAMP = "2026-01-01T00:00:00Z"


def wl(*conditions: tuple[str, str, str], admitted: bool = False) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns", "uid": "u-w", "creationTimestamp": "2025-12-31T00:00:00Z"},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 2, "template": {"spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": "1500m", "memory": "1Gi"}}}]}}}]},
        "status": {"conditions": [{"type": t, "status": s, "reason": r, "message": f"{t} earlier",
                                   "lastTransitionTime": "2025-12-31T00:00:00Z"} for t, s, r in conditions]},
    }
    if admitted:
        obj["status"]["admission"] = {"clusterQueue": "cq", "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "3"}, "count": 2}]}
    return obj


def state_with(obj: dict[str, Any]) -> QuotaState:
    state = QuotaState()
    state.put_flavor(ResourceFlavor.from_dict({"metadata": {"name": "default"}}))
    state.put_cluster_queue(ClusterQueue.from_dict({"metadata": {"name": "cq"}, "spec": {
        "namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
            {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "4"}, {"name": "memory", "nominalQuota": "8Gi"}]}]}]}}))
    state.put_local_queue(LocalQueue.from_dict({"metadata": {"name": "lq", "namespace": "ns"}, "spec": {"clusterQueue": "cq"}}))
    state.put_workload(Workload.from_dict(obj))
    return state


ADMIT = Admit(wl_key("ns/w"), "cq", Assignment({"main": {"cpu": "default", "memory": "default"}},
                                       {("default", "cpu"): 3000, ("default", "memory"): 2 * 2**30}))


def by_type(patch: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in patch["status"]["conditions"]}


def test_an_admission_writes_the_assignment_with_per_podset_usage_and_both_conditions() -> None:
    obj = wl(("QuotaReserved", "False", "Pending"))
    info = state_with(obj).workloads[wl_key("ns/w")]
    patch = st.admission_patch(obj, ADMIT, info, NOW)
    assert patch is not None
    assert patch["status"]["admission"] == {"clusterQueue": "cq", "podSetAssignments": [
        {"name": "main", "flavors": {"cpu": "default", "memory": "default"},
         "resourceUsage": {"cpu": "3", "memory": "2Gi"}, "count": 2}]}
    conds = by_type(patch)
    assert (conds["QuotaReserved"]["status"], conds["QuotaReserved"]["message"]) == ("True", "Quota reserved in ClusterQueue cq")
    assert (conds["Admitted"]["reason"], conds["Admitted"]["lastTransitionTime"]) == ("Admitted", STAMP)


def test_readmission_marks_the_past_eviction_as_past() -> None:
    obj = wl(("Evicted", "True", "Preempted"), ("Preempted", "True", "InClusterQueue"))
    patch = st.admission_patch(obj, ADMIT, state_with(obj).workloads[wl_key("ns/w")], NOW)
    conds = by_type(patch)
    assert (conds["Evicted"]["status"], conds["Evicted"]["reason"], conds["Evicted"]["message"]) == (
        "False", "QuotaReserved", "Previously: Evicted earlier")
    assert conds["Preempted"]["status"] == "False"


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda: st.admission_patch(wl(("QuotaReserved", "True", "QuotaReserved"), admitted=True), ADMIT,
                                                state_with(wl()).workloads[wl_key("ns/w")], NOW),
                     id="an admitted workload is not admitted again"),
        pytest.param(lambda: st.preemption_patch(wl(("QuotaReserved", "True", "x"), ("Evicted", "True", "Preempted")),
                                                 PreemptionTarget(wl_key("ns/w"), "cq", "InClusterQueue"), "u", NOW),
                     id="an evicted workload is not evicted again"),
        pytest.param(lambda: st.preemption_patch(wl(), PreemptionTarget(wl_key("ns/w"), "cq", "InClusterQueue"), "u", NOW),
                     id="a workload without quota is not preempted"),
        pytest.param(lambda: st.pending_patch(wl(("QuotaReserved", "False", "Pending")), "QuotaReserved earlier", NOW),
                     id="the same pending reason is not written twice"),
        pytest.param(lambda: st.pending_patch(wl(("QuotaReserved", "False", "Pending")), "", NOW),
                     id="a released victim not tried again keeps its eviction message, as Kueue's job integration leaves it"),
        pytest.param(lambda: st.release_patch(wl(("Evicted", "True", "Preempted")), NOW),
                     id="a workload without admission has nothing to release"),
        pytest.param(lambda: st.release_patch(wl(("QuotaReserved", "True", "QuotaReserved"), admitted=True), NOW),
                     id="a workload that was never evicted keeps its quota"),
        pytest.param(lambda: st.stop_eviction_patch(wl(("QuotaReserved", "True", "x"), ("Evicted", "True", "ClusterQueueStopped")),
                                                    Evict(wl_key("ns/w"), "ClusterQueueStopped", "stopped"), NOW),
                     id="a drained workload is not evicted twice"),
    ],
)
def test_nothing_is_written_twice(build: Any) -> None:
    assert build() is None


def test_preemption_tells_who_and_why() -> None:
    patch = st.preemption_patch(wl(("QuotaReserved", "True", "QuotaReserved"), admitted=True),
                                PreemptionTarget(wl_key("ns/w"), "cq", "InCohortReclamation"), "uid-7", NOW)
    conds = by_type(patch)
    assert (conds["Evicted"]["reason"], conds["Preempted"]["reason"]) == ("Preempted", "InCohortReclamation")
    assert conds["Preempted"]["message"] == "Preempted to accommodate a workload (UID: uid-7) due to reclamation within the cohort"


def test_a_new_pending_reason_replaces_the_old_one() -> None:
    patch = st.pending_patch(wl(("QuotaReserved", "False", "Pending")), "LocalQueue lq doesn't exist", NOW)
    cond = by_type(patch)["QuotaReserved"]
    assert (cond["reason"], cond["message"]) == ("Pending", "LocalQueue lq doesn't exist")
    assert cond["lastTransitionTime"] == "2025-12-31T00:00:00Z", "the status did not flip, so the time stays"


@pytest.mark.parametrize("obj", [
    pytest.param(wl(), id="a new workload"),
    pytest.param(wl(("QuotaReserved", "False", "Pending"), ), id="a workload whose pending message is empty"),
])
def test_a_workload_no_cycle_tried_says_it_waits_where_it_says_nothing_else(obj: dict[str, Any]) -> None:
    if obj["status"]["conditions"]:
        obj["status"]["conditions"][0]["message"] = ""
    cond = by_type(st.pending_patch(obj, "", NOW))["QuotaReserved"]
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "Pending", "Workload is waiting for quota")


def test_queue_status_is_written_only_where_it_changed() -> None:
    state = state_with(wl(("QuotaReserved", "True", "QuotaReserved"), admitted=True))
    wanted = cluster_queue_status(state, "cq")
    assert (wanted["pendingWorkloads"], wanted["reservingWorkloads"], wanted["admittedWorkloads"]) == (0, 1, 1)
    first = st.status_patch({}, wanted, NOW)
    assert first is not None and first["status"]["conditions"][0]["lastTransitionTime"] == STAMP
    observed = {"status": first["status"]}
    assert st.status_patch(observed, wanted, NOW) is None, "an unchanged status is not written"
    later = NOW.replace(hour=5)
    assert st.status_patch(observed, dict(wanted, pendingWorkloads=3), later) == {"status": {"pendingWorkloads": 3}}
    stopped = dict(wanted, conditions=[{**wanted["conditions"][0], "status": "False", "reason": "Stopped"}])
    flipped = st.status_patch(observed, stopped, later)
    assert flipped["status"]["conditions"][0]["lastTransitionTime"] == "2026-01-01T05:00:00Z"


def test_local_queue_status_goes_through_the_same_patch() -> None:
    state = state_with(wl(("QuotaReserved", "True", "QuotaReserved"), admitted=True))
    wanted = local_queue_status(state, "ns", "lq")
    patch = st.status_patch({"status": {"pendingWorkloads": 0}}, wanted, NOW)
    assert patch is not None and "pendingWorkloads" not in patch["status"]
    assert patch["status"]["flavorUsage"] == [{"name": "default", "resources": [{"name": "cpu", "total": "3"}]}]


def test_an_ownerless_victim_is_evicted_and_released_in_one_write_but_a_jobs_workload_waits_for_its_pods() -> None:
    bare = wl(("QuotaReserved", "True", "QuotaReserved"), admitted=True)
    target = PreemptionTarget(wl_key("ns/w"), "cq", "InClusterQueue")
    patch = st.released_at_once(bare, st.preemption_patch(bare, target, "u", NOW), NOW)
    assert patch["status"]["admission"] is None
    conds = by_type(patch)
    assert (conds["Evicted"]["status"], conds["QuotaReserved"]["status"], conds["Requeued"]["status"]) == ("True", "False", "True")
    owned = wl(("QuotaReserved", "True", "QuotaReserved"), admitted=True)
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u", "controller": True}]
    held = st.released_at_once(owned, st.preemption_patch(owned, target, "u", NOW), NOW)
    assert "admission" not in held["status"] and by_type(held)["QuotaReserved"]["status"] == "True"
