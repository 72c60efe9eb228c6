"""Parked workloads asked back in batches (policy `admission.requeueBatchPeriod`, Kueue v0.17's
requeuer, kubernetes-sigs/kueue#9232): an event that may let them in starts a period for its
cohort (or its ClusterQueue outside any cohort), later events in the period join it, and the
cohort's parked workloads return to their heaps at the first cycle after it ends. `0s` keeps
Kueue v0.10's requeue at once."""

from __future__ import annotations

import datetime as _dt
from typing import Any, Callable

import pytest

from batchgate.api.kueue import ClusterQueue, ResourceFlavor
from batchgate.clock import FakeClock
from controller.simulation import Simulation, run_trace
from tests.controller.decisions.trace_builders import (
    T0, cluster_queue, flavor, group, local_queue, quota, trace, wl_key, workload,
)

SECOND = _dt.timedelta(seconds=1)


def batched(period: _dt.timedelta = SECOND) -> Simulation:
    """Cohort c: cq-a and cq-b, 4 CPUs each, both full, each with a parked 4-CPU workload; cq-solo
    (no cohort) likewise. From then on parked workloads are asked back after `period`."""
    sim = Simulation(FakeClock(T0))
    objects: list[dict[str, Any]] = [flavor()]
    for name, cohort in (("cq-a", "c"), ("cq-b", "c"), ("cq-solo", "")):
        objects += [cluster_queue(name, cpu=4, cohort=cohort), local_queue(f"lq-{name}", name),
                    workload(f"running-{name}", queue=f"lq-{name}", cpu=4, admitted_to=name),
                    workload(f"waiting-{name}", queue=f"lq-{name}", cpu=4, created=1)]
    for obj in objects:
        sim.apply(obj)
    sim.run(None)
    assert parked(sim) == {"cq-a", "cq-b", "cq-solo"}
    sim.state.set_requeue_batch(period)  # set up at once, then batched
    return sim


def parked(sim: Simulation) -> set[str]:
    """The ClusterQueues whose waiting workload is parked."""
    return {name for name in ("cq-a", "cq-b", "cq-solo")
            if sim.state.pending.state_of(wl_key(f"ns/waiting-{name}")) == "inadmissible"}


def at(sim: Simulation, seconds: float) -> None:
    """Move the clock to T0 + `seconds` and run what a cycle then runs."""
    sim.clock.advance(T0 + _dt.timedelta(seconds=seconds) - sim.clock.now())
    sim.run(None)


def finish(name: str) -> Callable[[Simulation], None]:
    return lambda sim: sim.finish(f"ns/running-{name}")


def quota_of(name: str, cpu: int, cohort: str) -> Callable[[Simulation], None]:
    return lambda sim: sim.apply(cluster_queue(name, cpu=cpu, cohort=cohort))


@pytest.mark.parametrize("event, back", [
    pytest.param(finish("cq-a"), {"cq-a", "cq-b"}, id="a finish in a cohort asks back the whole cohort's parked workloads"),
    pytest.param(finish("cq-solo"), {"cq-solo"}, id="a finish in a queue outside any cohort asks back its own only"),
    pytest.param(quota_of("cq-b", 8, "c"), {"cq-a", "cq-b"}, id="a quota change asks back its cohort"),
    pytest.param(quota_of("cq-b", 4, "other"), {"cq-a", "cq-b"},
                 id="a queue moved to another cohort asks back the old cohort and the new"),
    pytest.param(lambda sim: sim.apply(flavor(labels={"zone": "a"})), {"cq-a", "cq-b", "cq-solo"},
                 id="a flavor change asks back every queue"),
])
def test_an_event_brings_parked_workloads_back_only_after_the_period(
        event: Callable[[Simulation], None], back: set[str]) -> None:
    sim = batched()
    event(sim)
    sim.run(None)  # the first cycle after the event starts the period
    assert parked(sim) == {"cq-a", "cq-b", "cq-solo"}
    assert sim.state.next_requeue == T0 + SECOND
    at(sim, 0.999)
    assert parked(sim) == {"cq-a", "cq-b", "cq-solo"}
    sim.state.requeue_due(T0 + SECOND)  # what the first cycle at the end of the period starts with
    assert parked(sim) == {"cq-a", "cq-b", "cq-solo"} - back
    assert sim.state.next_requeue is None


def test_a_finished_workload_frees_quota_at_once_but_its_cohort_waits_for_the_period() -> None:
    sim = batched()
    sim.finish("ns/running-cq-a")
    sim.run(None)
    assert list(sim.state.book.usage["cq-a"].values()) == [0]
    assert wl_key("ns/waiting-cq-a") not in sim.state.admitted
    at(sim, 1)
    assert wl_key("ns/waiting-cq-a") in sim.state.admitted


def test_later_events_in_a_period_join_it_and_do_not_extend_it() -> None:
    sim = batched()
    sim.finish("ns/running-cq-a")
    sim.run(None)
    at(sim, 0.5)
    sim.finish("ns/running-cq-b")
    at(sim, 0.6)
    assert sim.state.next_requeue == T0 + SECOND
    at(sim, 1)
    assert {wl_key("ns/waiting-cq-a"), wl_key("ns/waiting-cq-b")} <= set(sim.state.admitted)


def test_an_event_after_the_period_starts_a_new_one() -> None:
    sim = batched()
    sim.finish("ns/running-cq-a")
    sim.run(None)
    at(sim, 1)
    assert wl_key("ns/waiting-cq-a") in sim.state.admitted
    sim.finish("ns/running-cq-b")
    at(sim, 1.5)
    assert sim.state.next_requeue == T0 + 2.5 * SECOND
    assert wl_key("ns/waiting-cq-b") not in sim.state.admitted
    at(sim, 2.5)
    assert wl_key("ns/waiting-cq-b") in sim.state.admitted


def test_without_a_period_parked_workloads_come_back_at_once() -> None:
    sim = batched(_dt.timedelta(0))
    sim.finish("ns/running-cq-a")
    assert sim.state.next_requeue is None
    assert parked(sim) == {"cq-solo"}


def test_turning_the_period_off_carries_out_the_waiting_requests() -> None:
    sim = batched()
    sim.finish("ns/running-cq-a")
    sim.run(None)
    sim.state.set_requeue_batch(_dt.timedelta(0))
    assert parked(sim) == {"cq-solo"}
    assert sim.state.next_requeue is None and not sim.state.settled


def test_a_period_asking_back_nothing_leaves_the_state_settled() -> None:
    sim = batched()
    sim.state.put_flavor(ResourceFlavor.from_dict(flavor(labels={"zone": "b"})))  # asks every scope back
    for name in ("cq-a", "cq-b", "cq-solo"):  # and every parked workload is gone before the period ends
        sim.delete(f"ns/waiting-{name}")
    sim.run(None)
    assert sim.state.settled
    sim.state.requeue_due(T0 + SECOND)
    assert sim.state.settled and sim.state.next_requeue is None


def test_echoes_ask_nothing_back() -> None:
    sim = batched()
    sim.state.put_cluster_queue(ClusterQueue.from_dict(cluster_queue("cq-a", cpu=4, cohort="c")))
    sim.state.put_flavor(ResourceFlavor.from_dict(flavor()))
    sim.state.requeue_due(T0)
    assert sim.state.next_requeue is None


BATCHED_TRACE = {
    **trace([flavor(), cluster_queue("cq", cpu=4), local_queue("lq", "cq"),
             workload("first", cpu=4, created=0), workload("second", cpu=4, created=1)],
            {},
            {"finish": ["ns/first"]},
            {"advance": "500ms"},
            {"advance": "500ms"}),
    "admission": {"requeueBatchPeriod": "1s"},
}


def test_a_trace_sets_the_period_and_time_brings_the_parked_workload_back() -> None:
    reports = run_trace(BATCHED_TRACE)
    assert [[a["name"] for a in r.admitted] for r in reports] == [["ns/first"], [], [], ["ns/second"]]
    assert [r.counts["pendingInadmissible"] for r in reports] == [1, 1, 1, 0]


def victim_and_parked_neighbour(period: str) -> dict[str, Any]:
    """The differential's seeds 145 and 3 made small. Cohort c: cq-a (4 CPUs, lends at most 2) runs
    `victim` (4 CPUs); cq-b (2 CPUs, lends none) has `neighbour` (4 CPUs) parked, since cq-a lends
    nothing while it uses all 4. Then `preemptor` (priority 20, 2 CPUs) arrives in cq-a and preempts
    `victim`, whose release frees quota in the cohort; then a second passes with no event."""
    objects = [flavor(),
               cluster_queue("cq-a", group({"default": {"cpu": quota(4, lend=2)}}), cohort="c", within="LowerPriority"),
               cluster_queue("cq-b", group({"default": {"cpu": quota(2, lend=0)}}), cohort="c"),
               local_queue("lq-a", "cq-a"), local_queue("lq-b", "cq-b"),
               workload("victim", queue="lq-a", cpu=4, priority=0, admitted_to="cq-a"),
               workload("neighbour", queue="lq-b", cpu=4, priority=0, created=1)]
    return {**trace(objects,
                    {},
                    {"apply": [workload("preemptor", queue="lq-a", cpu=2, priority=20, created=2)]},
                    {"advance": "1s"}),
            "admission": {"requeueBatchPeriod": period}}


def more_needed(report: Any, name: str) -> str:
    (reason,) = [p["reason"] for p in report.pending if p["name"] == f"ns/{name}"]
    return reason.rsplit(", ", 1)[-1]


@pytest.mark.parametrize("period, admitted, victim", [
    # Kueue v0.17 (its requeuer, one second per root cohort): the victim, queued again by its own
    # release, is tried once the preemptor is admitted, while the neighbour is still parked: 2 of
    # cq-a's 4 CPUs are free. The neighbour comes back a second later and takes them by borrowing;
    # nothing asks the victim back after that, so it keeps that attempt's message.
    pytest.param("1s", [[], ["preemptor"], ["neighbour"]], "2 more needed",
                 id="batched as Kueue v0.17: the victim is tried before the neighbour returns"),
    # Kueue v0.10 (batchgate's default): the release asks the neighbour back at once, the preemptor
    # and the neighbour are admitted in one cycle, and the victim is tried after both.
    pytest.param("0s", [[], ["neighbour", "preemptor"], []], "4 more needed",
                 id="at once as Kueue v0.10: the victim is tried after the neighbour took quota"),
])
def test_a_victim_s_message_depends_on_when_its_cohort_s_parked_workloads_return(
        period: str, admitted: list[list[str]], victim: str) -> None:
    reports = run_trace(victim_and_parked_neighbour(period))
    assert more_needed(reports[0], "neighbour") == "2 more needed"
    assert [sorted(a["name"] for a in r.admitted) for r in reports] == [[f"ns/{n}" for n in step] for step in admitted]
    assert [p["name"] for p in reports[1].preempted] == ["ns/victim"]
    assert more_needed(reports[-1], "victim") == victim
    assert more_needed(reports[1], "victim") == victim  # the message of its one attempt after its release
