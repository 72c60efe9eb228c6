"""Properties that must hold whatever happens: no sequence of submissions, finishes, deletions,
ClusterQueue edits and cycles ever admits over a ClusterQueue's or a cohort's limits, admits a
workload twice, or lets the incremental usage drift from a recount; a cycle changes nothing."""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st

from batchgate.clock import FakeClock
from controller.decisions.quota.admission import run_cycle
from controller.simulation import Simulation
from batchgate.policy import FairSharing
from tests.controller.decisions.trace_builders import (
    T0, cluster_queue, flavor, group, local_queue, quota, wl_key, workload,
)

CQS = ("cq-0", "cq-1", "cq-2", "cq-3")
RESOURCES = ("cpu", "nvidia.com/gpu")


@st.composite
def queue_specs(draw: st.DrawFn, name: str, flavors: tuple[str, ...] = ("default",),
                nominals: st.SearchStrategy[int] = st.integers(0, 10)) -> dict:
    """A ClusterQueue with quota in each of `flavors` (several: flavor assignment goes on to the next)."""
    in_cohort = draw(st.booleans())
    quotas: dict[str, dict] = {}
    for name_of_flavor in flavors:
        quotas[name_of_flavor] = {}
        for res in RESOURCES:
            nominal = draw(nominals)
            borrow = draw(st.one_of(st.none(), st.integers(0, 10))) if in_cohort else None
            lend = draw(st.one_of(st.none(), st.integers(0, nominal))) if in_cohort else None
            quotas[name_of_flavor][res] = quota(nominal, borrow=borrow, lend=lend)
    reclaim = draw(st.sampled_from(["Never", "LowerPriority", "Any"])) if in_cohort else "Never"
    return cluster_queue(
        name, group(quotas), cohort="c" if in_cohort else "",
        strategy=draw(st.sampled_from(["BestEffortFIFO", "StrictFIFO"])),
        within=draw(st.sampled_from(["Never", "LowerPriority", "LowerOrNewerEqualPriority"])),
        reclaim=reclaim,
        borrow_within=draw(st.sampled_from(["Never", "LowerPriority"])) if reclaim != "Never" else None,
        when_can_borrow=draw(st.sampled_from([None, "TryNextFlavor"])) if len(flavors) > 1 else None,
        when_can_preempt=draw(st.sampled_from([None, "TryNextFlavor"])) if len(flavors) > 1 else None,
    )


submit = st.tuples(st.just("submit"), st.sampled_from(CQS), st.integers(0, 6), st.integers(0, 3),
                   st.integers(1, 2), st.integers(0, 3))
finish = st.tuples(st.just("finish"), st.integers(0, 1000))
delete = st.tuples(st.just("delete"), st.integers(0, 1000))
edit = st.tuples(st.just("edit"), st.sampled_from(CQS))
cycle = st.tuples(st.just("cycle"), st.sampled_from([1, None]))
operations = st.lists(st.one_of(submit, submit, submit, finish, delete, edit, cycle, cycle), min_size=5, max_size=50)


def over_limits(sim: Simulation) -> list[str]:
    """Every ClusterQueue or cohort whose usage is above what its quota allows."""
    book = sim.state.book
    problems = []
    for cq, usage in book.usage.items():
        for fr, used in usage.items():
            q = book.quota(cq, fr)
            cap = q.nominal if not book.cohort_of[cq] else (
                float("inf") if q.borrowing_limit is None else q.nominal + q.borrowing_limit)
            if used > cap:
                problems.append(f"{cq} {fr}: {used} > {cap}")
    for cohort, usage in book.cohort_usage.items():
        for fr, used in usage.items():
            if used > book.cohort_quota[cohort].get(fr, 0):
                problems.append(f"cohort {cohort} {fr}: {used} > {book.cohort_quota[cohort].get(fr, 0)}")
    return problems


def recount(sim: Simulation) -> dict[str, dict]:
    totals: dict[str, dict] = {cq: {} for cq in sim.state.book.usage}
    for held in sim.state.admitted.values():
        for fr, value in held.usage.items():
            totals[held.cluster_queue][fr] = totals[held.cluster_queue].get(fr, 0) + value
    return totals


def unreserved(sim: Simulation) -> dict[str, int]:
    counts: dict[str, int] = {}
    for held in sim.state.admitted.values():
        if held.reserved_at is None:
            counts[held.cluster_queue] = counts.get(held.cluster_queue, 0) + 1
    return counts


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=st.tuples(*(queue_specs(name) for name in CQS)), ops=operations, data=st.data(), fair=st.booleans())
def test_no_sequence_admits_over_limits_or_twice(specs: tuple, ops: list, data: st.DataObject, fair: bool) -> None:
    sim = Simulation(FakeClock(T0))
    sim.state.fair_sharing = FairSharing(enable=fair)
    for obj in [flavor(), *specs, *(local_queue(f"lq-{name}", name) for name in CQS)]:
        sim.apply(obj)
    submitted: list[str] = []
    admissions = 0
    for n, op in enumerate(ops + [("cycle", None)]):
        kind = op[0]
        if kind == "submit":
            _, cq, cpu, gpu, count, priority = op
            sim.apply(workload(f"w{n}", queue=f"lq-{cq}", cpu=cpu, gpu=gpu, count=count, priority=priority, created=n))
            submitted.append(f"ns/w{n}")
        elif kind in ("finish", "delete") and submitted:
            key = submitted[op[1] % len(submitted)]
            if wl_key(key) in sim.state.workloads and wl_key(key) not in sim.state.finished:
                getattr(sim, kind)(key)
        elif kind == "edit":
            sim.apply(data.draw(queue_specs(op[1])))
        elif kind == "cycle":
            within_before = not over_limits(sim)
            before = set(sim.state.admitted)
            sim.run(op[1])
            if within_before:
                assert over_limits(sim) == []
            newly = set(sim.state.admitted) - before
            assert all(key not in before for key in newly)
            admissions += len(newly)
        assert recount(sim) == {cq: {fr: v for fr, v in u.items() if v} for cq, u in sim.state.book.usage.items()}
        assert {cq: n for cq, n in sim.state.unreserved.items() if n} == unreserved(sim)
    target(float(admissions))  # steer the search towards busy histories


@settings(max_examples=30, deadline=None)
@given(specs=st.tuples(*(queue_specs(name) for name in CQS)),
       sizes=st.lists(st.tuples(st.sampled_from(CQS), st.integers(0, 8), st.integers(0, 3)), max_size=12),
       fair=st.booleans())
def test_a_cycle_changes_nothing_and_admits_each_workload_once(specs: tuple, sizes: list, fair: bool) -> None:
    sim = Simulation(FakeClock(T0))
    sim.state.fair_sharing = FairSharing(enable=fair)
    for obj in [flavor(), *specs, *(local_queue(f"lq-{name}", name) for name in CQS)]:
        sim.apply(obj)
    for n, (cq, cpu, priority) in enumerate(sizes):
        sim.apply(workload(f"w{n}", queue=f"lq-{cq}", cpu=cpu, priority=priority, created=n))
    for _ in range(5):
        heads = sim.state.pending.heads(lambda name: sim.state.inactive_reason(name) is None)
        usage = copy.deepcopy(sim.state.book.usage)
        cohort_usage = copy.deepcopy(sim.state.book.cohort_usage)
        admitted = dict(sim.state.admitted)
        result = run_cycle(sim.state, heads, sim.clock.now())
        assert sim.state.book.usage == usage and sim.state.book.cohort_usage == cohort_usage
        assert sim.state.admitted == admitted
        keys = [a.workload for a in result.admit]
        assert len(keys) == len(set(keys)) and not set(keys) & set(admitted)
        sim.cycle()
