"""The controller runs a cycle only when the quota state is not settled, and recalls a nomination
while nothing it reads has changed (issue 29): neither may change a decision. Over generated
histories (submissions, finishes, deletions, ClusterQueue edits, flavors tried one after another,
stops and ticks), a loop that cycles at every tick and nominates every head afresh, one that skips
the ticks finding the state settled, and one that also recalls nominations admit and preempt the
same workloads, at the same ticks and in the same order, and leave the same pending reasons; with
parked workloads asked back at once or after a requeue batch period alike, and with equivalent
workloads parked together or not."""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from dataclasses import replace
from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st

from batchgate.clock import FakeClock
from batchgate.policy import DEFAULT_POLICY, Admission, FairSharing
from controller.adapters.queue_status import wanted_statuses
from controller.decisions.quota.kueue_metrics import cluster_queue_figures
from controller.decisions.quota.queue_status import cluster_queue_status
from controller.simulation import Simulation
from controller.state.cache import ObjectKey
from tests.controller.decisions.quota.test_invariants import CQS, delete, finish, queue_specs
from tests.controller.decisions.trace_builders import T0, basic, flavor, local_queue, wl_key, workload

FLAVORS = ("on-demand", "spot")
QUEUES = CQS[:2]  # where workloads go: two queues with small requests beside their quotas fill, park and free up
submit = st.tuples(st.just("submit"), st.sampled_from(QUEUES), st.integers(1, 6), st.integers(0, 1),
                   st.just(1), st.integers(0, 3))
edit = st.tuples(st.just("edit"), st.sampled_from(QUEUES))
stop = st.tuples(st.just("stop"), st.sampled_from(QUEUES), st.sampled_from(["Hold", "HoldAndDrain", "None", "None"]))
# each event followed by 0-4 ticks of the loop
pause = st.tuples(st.just("pause"))  # a second passes with no event: a requeue period may end meanwhile
histories = st.lists(st.tuples(st.one_of(submit, submit, submit, finish, finish, delete, edit, stop, pause),
                               st.integers(0, 4)),
                     min_size=10, max_size=60)


class Loop:
    """The simulation driven as the controller's loop is: one cycle per tick, or (`gated`) one
    per tick that finds the state unsettled or evictions to complete; nominations recalled
    between cycles (`recall`) or forgotten before each."""

    def __init__(self, fair: bool, batch: int, *, gated: bool, recall: bool = True, hashing: bool = False) -> None:
        policy = replace(DEFAULT_POLICY, fair_sharing=FairSharing(enable=fair),
                         admission=Admission(requeue_batch_period=_dt.timedelta(seconds=batch),
                                             scheduling_equivalence_hashing=hashing))
        self.sim = Simulation(FakeClock(T0), policy)
        self.gated, self.recall = gated, recall
        self.ticks = self.cycles = 0
        self.decided: list[tuple[int, str, Any]] = []  # admissions, preemptions, drains: at which tick
        self.asked_back = 0  # parked workloads moved back when a requeue period ended

    def parked(self) -> int:
        return sum(queue.parked_count for queue in self.sim.state.pending.queues.values())

    def tick(self) -> None:
        self.ticks += 1
        parked = self.parked()
        self.sim.state.requeue_due(self.sim.clock.now())  # as the admission loop, before it looks
        self.asked_back += parked - self.parked()
        if self.gated and self.sim.state.settled and not self.sim.evicting:
            return
        self.cycles += 1
        if not self.recall:
            self.sim.state.nominations.clear()
        effects = self.sim.cycle()
        self.decided += [(self.ticks, "admit", (a.admit.workload, a.admit.cluster_queue, a.admit.assignment.flavors))
                         for a in effects.admitted]
        self.decided += [(self.ticks, "preempt", (p.target.workload, p.preemptor)) for p in effects.preempted]
        self.decided += [(self.ticks, "drain", d.workload) for d in effects.drained]
        if self.recall:
            self.views_are_current()

    def views_are_current(self) -> None:
        """What the queue status writer and the gauges recall equals what they would compute now."""
        state = self.sim.state
        recalled = wanted_statuses(state)
        for name in state.cluster_queues:
            assert recalled[ObjectKey("ClusterQueue", "", name)] == cluster_queue_status(state, name)
            figures = partial(cluster_queue_figures, state, name)  # as the admission loop's gauges recall them
            assert state.queue_views.one(("figures", name), state.queue_version(name), figures) == figures()
        waiting = Counter((state.workloads[key].namespace, state.workloads[key].queue_name)
                          for key in state.workloads if state.is_pending(key))
        for namespace, name in state.local_queues:  # the counts kept as workloads move, against a walk
            assert recalled[ObjectKey("LocalQueue", namespace, name)]["pendingWorkloads"] == waiting[(namespace, name)]
        assert all(state.pending_in(*queue) == count for queue, count in waiting.items())  # LocalQueues gone too

    def reasons(self) -> dict[ObjectKey, tuple[str, str]]:
        state = self.sim.state
        return {key: state.pending_reason(key) for key in state.workloads if state.is_pending(key)}


def play(loop: Loop, objects: list[dict], history: list[tuple]) -> None:
    """Feed `history` to `loop`; `objects` are the ClusterQueue edits drawn for it, in order."""
    sim = loop.sim
    for obj in [*(flavor(name) for name in FLAVORS), *objects[:len(CQS)],
                *(local_queue(f"lq-{name}", name) for name in CQS)]:
        sim.apply(obj)
    edits = iter(objects[len(CQS):])
    submitted: list[str] = []
    for n, (op, ticks) in enumerate(history):
        sim.clock.advance(_dt.timedelta(seconds=1))
        kind = op[0]
        if kind == "submit":
            _, cq, cpu, gpu, count, priority = op
            sim.apply(workload(f"w{n}", queue=f"lq-{cq}", cpu=cpu, gpu=gpu, count=count, priority=priority, created=n))
            submitted.append(f"ns/w{n}")
        elif kind == "finish" and sim.state.admitted:
            sim.finish(sorted(sim.state.admitted)[op[1] % len(sim.state.admitted)].namespaced_name)
        elif kind == "delete" and submitted:
            key = submitted[op[1] % len(submitted)]
            if wl_key(key) in sim.state.workloads:
                sim.delete(key)
        elif kind == "edit":
            sim.apply(next(edits))
        elif kind == "stop":
            spec = next(edits)
            sim.apply({**spec, "spec": {**spec["spec"], "stopPolicy": op[2]}})
        for _ in range(ticks):
            loop.tick()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories, fair=st.booleans(), batch=st.sampled_from([0, 0, 1, 2]), hashing=st.booleans(),
       data=st.data())
def test_skipping_settled_cycles_and_recalling_nominations_change_no_decision(history: list[tuple], fair: bool,
                                                                                batch: int, hashing: bool,
                                                                                data: st.DataObject) -> None:
    named = [*CQS, *(op[1] for op, _ in history if op[0] in ("edit", "stop"))]
    objects = [data.draw(queue_specs(name, FLAVORS, st.integers(1, 8))) for name in named]
    every, gated, recalled = (Loop(fair, batch, gated=False, recall=False, hashing=hashing),
                              Loop(fair, batch, gated=True, recall=False, hashing=hashing),
                              Loop(fair, batch, gated=True, hashing=hashing))
    for loop in (every, gated, recalled):
        play(loop, objects, history)
    assert gated.decided == every.decided
    assert recalled.decided == every.decided
    assert gated.reasons() == every.reasons() == recalled.reasons()
    assert gated.cycles <= every.cycles
    target(float(every.cycles - gated.cycles), label="cycles skipped")
    target(float(len(every.decided)), label="decisions")
    target(float(every.asked_back), label="parked workloads asked back at a period's end")


@pytest.mark.parametrize("after", ["a finish", "a new workload", "a quota change"])
def test_a_settled_state_is_unsettled_by_what_can_make_a_head_admissible(after: str) -> None:
    sim = Simulation(FakeClock(T0))
    for obj in basic(cpu=4) + [workload("a", cpu=4, created=1), workload("b", cpu=4, created=2)]:
        sim.apply(obj)
    sim.run(None)
    assert sim.state.settled and list(sim.state.admitted) == [wl_key("ns/a")]
    sim.apply(workload("b", cpu=4, created=2))  # an echo: nothing new
    assert sim.state.settled
    if after == "a finish":
        sim.finish("ns/a")
    elif after == "a new workload":
        sim.apply(workload("c", cpu=1, priority=5, created=3))
    else:
        sim.apply(basic(cpu=8)[1])
    assert not sim.state.settled
