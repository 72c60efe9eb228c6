"""Which pending reasons a flush writes: the marked Workloads' current messages, once each, and
none for a Workload that stopped pending before its turn came."""

from __future__ import annotations

from batchgate.clock import FakeClock
from controller.simulation import Simulation
from controller.state.pending_reasons import PendingReasons
from tests.controller.decisions.trace_builders import T0, basic, wl_key, workload

MORE = "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 5 more needed"


def full_queue() -> Simulation:
    sim = Simulation(FakeClock(T0))
    for obj in basic(cpu=10) + [workload("running", cpu=8, admitted_to="cq"), workload("waiting", cpu=7, created=1)]:
        sim.apply(obj)
    return sim


def drain(reasons: PendingReasons, sim: Simulation) -> list[tuple[str, str]]:
    out = []
    while (due := reasons.next_due(sim.state)) is not None:
        out.append(due)
    return out


def test_a_workload_no_cycle_looked_at_is_noted_without_a_message() -> None:
    sim, reasons = full_queue(), PendingReasons()
    reasons.mark([wl_key("ns/waiting")])
    reasons.note(sim.state)
    assert drain(reasons, sim) == [(wl_key("ns/waiting"), "")]


def test_a_requeued_head_is_written_once_with_the_cycles_message() -> None:
    sim, reasons = full_queue(), PendingReasons()
    reasons.mark(sim.cycle().requeued)
    reasons.note(sim.state)
    assert drain(reasons, sim) == [(wl_key("ns/waiting"), MORE)]
    reasons.note(sim.state)
    assert drain(reasons, sim) == []


def test_marking_everything_notes_every_pending_workload_and_no_admitted_one() -> None:
    sim, reasons = full_queue(), PendingReasons()
    reasons.mark_everything()
    reasons.note(sim.state)
    assert drain(reasons, sim) == [(wl_key("ns/waiting"), "")]


def test_a_workload_that_stopped_pending_before_its_turn_is_skipped() -> None:
    sim, reasons = full_queue(), PendingReasons()
    reasons.mark([wl_key("ns/waiting")])
    reasons.note(sim.state)
    sim.finish("ns/running")
    sim.cycle()
    assert drain(reasons, sim) == []


def test_the_workloads_a_head_parks_with_its_class_are_written_with_its_message_once() -> None:
    sim, reasons = full_queue(), PendingReasons()
    sim.apply(workload("twin", cpu=7, created=2))
    reasons.mark(sim.cycle().requeued)  # waiting does not fit: twin, of its class, is parked with it
    reasons.note(sim.state)
    assert sorted(drain(reasons, sim)) == [(wl_key("ns/twin"), MORE), (wl_key("ns/waiting"), MORE)]
    reasons.note(sim.state)
    assert drain(reasons, sim) == []


def test_a_parked_class_is_listed_when_its_turn_comes_each_member_once() -> None:
    sim, reasons = full_queue(), PendingReasons()
    sim.apply(workload("twin", cpu=7, created=2))
    reasons.mark(sim.cycle().requeued)  # waiting does not fit: twin, of its class, is parked with it
    reasons.note(sim.state)  # a flush without spare capacity: nothing is written
    sim.apply(workload("triplet", cpu=7, created=3))  # arrives parked with its class
    reasons.mark([wl_key("ns/twin")])  # and twin was observed again meanwhile
    reasons.note(sim.state)
    assert sorted(drain(reasons, sim)) == [(wl_key("ns/triplet"), MORE), (wl_key("ns/twin"), MORE),
                                           (wl_key("ns/waiting"), MORE)]
