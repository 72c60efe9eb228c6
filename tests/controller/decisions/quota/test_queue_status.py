"""Status values for ClusterQueues, LocalQueues and Workloads, with Kueue's reasons and messages."""

from __future__ import annotations

import datetime as _dt

import pytest

from batchgate.api.conditions import to_wire
from controller.decisions.quota.queue_status import (
    admitted_conditions, cluster_queue_status, local_queue_status, pending_conditions,
    preempted_conditions, released_conditions,
)
from tests.controller.decisions.trace_builders import T0, cluster_queue, flavor, group, local_queue, simulation, workload

LATER = T0 + _dt.timedelta(minutes=5)


def test_cluster_queue_status_counts_and_reports_borrowing() -> None:
    sim = simulation(flavor(), cluster_queue("cq", group({"default": {"cpu": 4, "memory": "1Gi"}}), cohort="c"),
                     cluster_queue("lender", cpu=10, cohort="c"), local_queue("lq", "cq"),
                     workload("running", cpu=6, admitted_to="cq"), workload("waiting", cpu=1, created=1))
    status = cluster_queue_status(sim.state, "cq")
    assert (status["pendingWorkloads"], status["reservingWorkloads"], status["admittedWorkloads"]) == (1, 1, 1)
    assert status["flavorsReservation"] == [{"name": "default", "resources": [
        {"name": "cpu", "total": "6", "borrowed": "2"}, {"name": "memory", "total": "0", "borrowed": "0"}]}]
    assert status["conditions"] == [{"type": "Active", "status": "True", "reason": "Ready",
                                     "message": "Can admit new workloads"}]


@pytest.mark.parametrize(("objects", "reason", "message"), [
    pytest.param([cluster_queue("cq", cpu=1, stop="Hold")], "Stopped", "Can't admit new workloads: is stopped.",
                 id="a stopped ClusterQueue says so"),
    pytest.param([cluster_queue("cq", group({"default": {"cpu": 1}, "spot": {"cpu": 1}}))], "FlavorNotFound",
                 "Can't admit new workloads: references missing ResourceFlavor(s): [spot].",
                 id="a ClusterQueue naming a missing flavor lists it"),
])
def test_an_inactive_cluster_queue_explains_itself(objects: list, reason: str, message: str) -> None:
    sim = simulation(flavor(), *objects)
    assert cluster_queue_status(sim.state, "cq")["conditions"] == [
        {"type": "Active", "status": "False", "reason": reason, "message": message}]


@pytest.mark.parametrize(("objects", "active"), [
    pytest.param([cluster_queue("cq", cpu=10), local_queue("lq", "cq")],
                 ("True", "Ready", "Can submit new workloads to clusterQueue"), id="a LocalQueue of a working queue"),
    pytest.param([local_queue("lq", "ghost")],
                 ("False", "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue"),
                 id="a LocalQueue of a missing ClusterQueue"),
    pytest.param([cluster_queue("cq", cpu=10), local_queue("lq", "cq", stop="Hold")],
                 ("False", "Stopped", "LocalQueue is stopped"), id="a stopped LocalQueue"),
])
def test_local_queue_status(objects: list, active: tuple) -> None:
    target = objects[-1]["spec"]["clusterQueue"]
    sim = simulation(flavor(), *objects, workload("a", cpu=2, admitted_to=target), workload("b", cpu=1, created=1))
    status = local_queue_status(sim.state, "ns", "lq")
    assert (status["pendingWorkloads"], status["reservingWorkloads"]) == (1, 1)
    assert status["flavorUsage"] == [{"name": "default", "resources": [{"name": "cpu", "total": "2"}]}]
    assert [(c["status"], c["reason"], c["message"]) for c in status["conditions"]] == [active]


def test_a_workload_story_pending_admitted_preempted_released_readmitted() -> None:
    conds = pending_conditions((), "couldn't assign flavors to pod set main: ...", T0)
    conds = pending_conditions(conds, "another message", LATER)
    assert to_wire(conds) == [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                                       "message": "another message", "lastTransitionTime": "2025-01-01T00:00:00Z"}]
    conds = admitted_conditions(conds, "cq", LATER)
    assert [(c.type, c.status, c.reason, c.message) for c in conds] == [
        ("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq"),
        ("Admitted", "True", "Admitted", "The workload is admitted")]
    conds = preempted_conditions(conds, "InCohortReclamation", "uid-1", LATER)
    message = "Preempted to accommodate a workload (UID: uid-1) due to reclamation within the cohort"
    assert {(c.type, c.reason, c.message) for c in conds if c.status == "True"} >= {
        ("Evicted", "Preempted", message), ("Preempted", "InCohortReclamation", message)}
    conds = released_conditions(conds, LATER)
    assert {c.type: (c.status, c.reason) for c in conds} == {
        "QuotaReserved": ("False", "Pending"), "Admitted": ("False", "NoReservation"),
        "Evicted": ("True", "Preempted"), "Preempted": ("True", "InCohortReclamation"),
        "Requeued": ("True", "Preempted")}
    conds = admitted_conditions(conds, "cq", LATER)
    assert {c.type: (c.status, c.message) for c in conds}["Evicted"] == ("False", f"Previously: {message}")
