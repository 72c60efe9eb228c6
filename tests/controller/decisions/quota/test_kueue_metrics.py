"""The values of Kueue's metrics, computed from the quota state (Kueue v0.10.2 pkg/metrics/metrics.go)."""

from __future__ import annotations

import datetime as _dt
from dataclasses import replace

import pytest

from batchgate.clock import FakeClock
from controller.decisions.quota.kueue_metrics import (
    ResourceFigures, attempt_result, cluster_queue_figures, preemptions, queued_wait_seconds, wait_buckets,
)
from controller.simulation import Simulation
from batchgate.policy import DEFAULT_POLICY, FairSharing
from tests.controller.decisions.trace_builders import (
    T0, at, cluster_queue, flavor, group, local_queue, quota, simulation, workload,
)


def test_wait_buckets_are_kueues_exponential_buckets() -> None:
    # generateExponentialBuckets(14): 1, then prometheus.ExponentialBuckets(2.5, 2, 13)
    assert wait_buckets(14) == (1, 2.5, 5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5120, 10240)


def test_quota_and_usage_per_flavor_and_resource_in_kueues_units() -> None:
    sim = simulation(flavor(), cluster_queue("cq", group({"default": {"cpu": quota(4, borrow=2, lend=1),
                                                                      "memory": quota("1Gi")}}), cohort="team"),
                     local_queue("lq", "cq"), workload("running", cpu="1500m", memory="256Mi", admitted_to="cq"))
    figures = cluster_queue_figures(sim.state, "cq")
    assert (figures.cohort, figures.reserving, figures.admitted) == ("team", 1, 1)
    assert figures.resources == {
        ("default", "cpu"): ResourceFigures(nominal=4.0, borrowing_limit=2.0, lending_limit=1.0,
                                            reservation=1.5, usage=1.5),
        ("default", "memory"): ResourceFigures(nominal=2.0 ** 30, borrowing_limit=0.0, lending_limit=0.0,
                                               reservation=2.0 ** 28, usage=2.0 ** 28),
    }


@pytest.mark.parametrize(("fair_sharing", "shares"), [
    pytest.param(True, (250, 0), id="with fair sharing the borrower's share is what it borrows of what the cohort lends"),
    pytest.param(False, (None, None), id="without fair sharing no share is reported, as in Kueue"),
])
def test_weighted_share(fair_sharing: bool, shares: tuple) -> None:
    sim = Simulation(FakeClock(T0), replace(DEFAULT_POLICY, fair_sharing=FairSharing(enable=fair_sharing)))
    for obj in (flavor(), cluster_queue("borrower", cpu=4, cohort="c"), cluster_queue("lender", cpu=4, cohort="c"),
                local_queue("lq", "borrower"), workload("big", cpu=6, admitted_to="borrower")):
        sim.apply(obj)
    assert tuple(cluster_queue_figures(sim.state, name).weighted_share for name in ("borrower", "lender")) == shares


def test_pending_workloads_are_counted_active_until_a_cycle_finds_them_inadmissible() -> None:
    sim = simulation(flavor(), cluster_queue("cq", cpu=2), local_queue("lq", "cq"),
                     workload("fits", cpu=2, created=0), workload("too-big", cpu=3, created=1),
                     workload("waits", cpu=1, created=2))
    before = cluster_queue_figures(sim.state, "cq")
    assert (before.pending_active, before.pending_inadmissible, before.admitted) == (3, 0, 0)
    sim.run(None)
    after = cluster_queue_figures(sim.state, "cq")
    assert (after.pending_active, after.pending_inadmissible, after.admitted) == (0, 2, 1)


@pytest.mark.parametrize(("queue", "status"), [
    pytest.param(cluster_queue("cq", cpu=1), "active", id="a working ClusterQueue is active"),
    pytest.param(cluster_queue("cq", cpu=1, stop="Hold"), "pending", id="a stopped ClusterQueue is pending"),
    pytest.param(cluster_queue("cq", group({"default": {"cpu": 1}, "spot": {"cpu": 1}})), "pending",
                 id="a ClusterQueue naming a missing flavor is pending"),
])
def test_cluster_queue_status_is_kueues(queue: dict, status: str) -> None:
    assert cluster_queue_figures(simulation(flavor(), queue).state, "cq").status == status


def test_preemptions_are_counted_per_preempting_queue_and_reason_and_attempts_by_result() -> None:
    sim = simulation(flavor(), cluster_queue("cq", cpu=2, within="LowerPriority"), local_queue("lq", "cq"),
                     workload("low", cpu=2, priority=1, admitted_to="cq"), workload("high", cpu=2, priority=10))
    effects = sim.cycle()
    assert preemptions(sim.state, effects) == {("cq", "InClusterQueue"): 1}
    assert attempt_result(effects) == "inadmissible"
    effects = sim.cycle()  # the victim's pods are gone: the preemptor is admitted
    assert preemptions(sim.state, effects) == {}
    assert attempt_result(effects) == "success"


@pytest.mark.parametrize(("conditions", "seconds"), [
    pytest.param([], 90.0, id="a workload never requeued waited since its creation"),
    pytest.param([{"type": "Requeued", "status": "True", "reason": "Preempted", "lastTransitionTime": at(60)}],
                 30.0, id="a requeued workload waited since its requeue"),
    pytest.param([{"type": "Requeued", "status": "False", "reason": "", "lastTransitionTime": at(80)}],
                 10.0, id="any change of Requeued restarts the wait, as Kueue v0.10 counts it"),
])
def test_queued_wait_time(conditions: list, seconds: float) -> None:
    raw = workload("w", cpu=1, created=0)
    raw["status"] = {"conditions": conditions}
    assert queued_wait_seconds(raw, T0 + _dt.timedelta(seconds=90)) == seconds


@pytest.mark.parametrize(("raw", "seconds"), [
    pytest.param({"status": {"conditions": [{"type": "Requeued", "status": "True", "lastTransitionTime": "soon"}]},
                  "metadata": {"creationTimestamp": at(0)}}, 90.0, id="a Requeued time that is not a time: since creation"),
    pytest.param({"metadata": {"creationTimestamp": 7}, "status": "garbage"}, 0.0, id="no time to count from: zero"),
    pytest.param({"metadata": "garbage"}, 0.0, id="metadata that is not a mapping: zero"),
])
def test_queued_wait_time_of_a_malformed_workload(raw: dict, seconds: float) -> None:
    assert queued_wait_seconds(raw, T0 + _dt.timedelta(seconds=90)) == seconds


def test_queued_wait_time_of_a_creation_time_that_is_not_a_time_is_refused() -> None:
    """The admission loop logs it and records no wait (`AdmissionLoop._write_admission`)."""
    with pytest.raises(ValueError):
        queued_wait_seconds({"metadata": {"creationTimestamp": "yesterday"}}, T0)


def test_a_cycle_with_no_head_is_not_an_admission_attempt() -> None:
    sim = simulation(flavor(), cluster_queue("cq", cpu=1), local_queue("lq", "cq"))
    assert attempt_result(sim.cycle()) is None
