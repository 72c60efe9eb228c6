"""Recalled nominations (issue 29): a head of the same shape as one nominated before, in a cohort
where nothing has changed since, gets the same entry without the work; anything a nomination
reads that differs between the two heads, or has changed in between, makes it work afresh.
Each scenario is decided with recall and with every nomination made afresh, and the decisions
must be the ones written here."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import pytest

from batchgate.policy import FairSharing
from controller.decisions.quota.cycle import admission_cycle
from controller.simulation import Simulation
from controller.state.recall import MAX_KEPT, Recall
from tests.controller.decisions.trace_builders import (
    basic, cluster_queue, flavor, local_queue, namespace, simulation, workload,
)

HELD_LOW = workload("held", cpu=4, priority=0, created=10, admitted_to="cq")
SELECTIVE = [namespace("in", team="x"), namespace("out"), flavor(),
             cluster_queue("cq", cpu=4, selector={"matchLabels": {"team": "x"}}),
             local_queue("lq", "cq", ns="in"), local_queue("lq", "cq", ns="out")]

# (id, objects, steps: a Workload to apply, "finish NAME" or "cycle"; what each cycle admitted and preempted)
SCENARIOS: list[tuple[str, list[dict[str, Any]], list[Any], list[tuple[list[str], list[str]]]]] = [
    ("a higher-priority head of the same requests is not answered with a lower one's nomination",
     basic(cpu=4, within="LowerPriority") + [HELD_LOW],
     [workload("a", cpu=4, priority=0, created=20), "cycle", workload("b", cpu=4, priority=5, created=21), "cycle"],
     [([], []), ([], ["ns/held by ns/b"])]),
    ("under LowerOrNewerEqualPriority an older head of equal priority may take what a newer one may not",
     basic(cpu=4, within="LowerOrNewerEqualPriority") + [workload("held", cpu=4, priority=1, created=10, admitted_to="cq")],
     [workload("a", cpu=4, priority=1, created=20), "cycle", workload("b", cpu=4, priority=1, created=5), "cycle"],
     [([], []), ([], ["ns/held by ns/b"])]),
    ("a head from a namespace the queue selects is not answered with one from a namespace it does not",
     SELECTIVE,
     [workload("a", ns="out", cpu=1, created=1), "cycle", workload("b", ns="in", cpu=1, created=2), "cycle"],
     [([], []), (["in/b"], [])]),
    ("a head that fits is not answered with a larger one's nomination",
     basic(cpu=4),
     [workload("a", cpu=8, created=1), "cycle", workload("b", cpu=2, created=2), "cycle"],
     [([], []), (["ns/b"], [])]),
    ("a head of the same shape is decided again once quota is freed",
     basic(cpu=4) + [workload("held", cpu=4, created=0, admitted_to="cq")],
     [workload("a", cpu=4, created=1), "cycle", "finish ns/held", "cycle"],
     [([], []), (["ns/a"], [])]),
]


def decide(objects: list[dict[str, Any]], steps: list[Any], recall: bool) -> list[tuple[list[str], list[str]]]:
    sim = untied(simulation(*objects))
    out = []
    for step in steps:
        if isinstance(step, str) and step.startswith("finish "):
            sim.finish(step.removeprefix("finish "))
        if step != "cycle":
            if isinstance(step, dict):
                sim.apply(step)
            continue
        if not recall:
            sim.state.nominations.clear()
        effects = admission_cycle(sim.state, sim.clock.now())
        out.append(([a.admit.workload.namespaced_name for a in effects.admitted],
                    [f"{p.target.workload.namespaced_name} by {p.preemptor.namespaced_name}" for p in effects.preempted]))
    return out


def untied(sim: Simulation) -> Simulation:
    """Equivalence hashing off: heads of one shape are each tried, which is where recall serves."""
    sim.state.set_equivalence_hashing(False)
    return sim


@pytest.mark.parametrize("objects, steps, expected", [s[1:] for s in SCENARIOS], ids=[s[0] for s in SCENARIOS])
def test_a_recalled_nomination_decides_as_a_fresh_one(objects: list[dict[str, Any]], steps: list[Any],
                                                      expected: list[tuple[list[str], list[str]]]) -> None:
    assert decide(objects, steps, recall=False) == expected
    assert decide(objects, steps, recall=True) == expected


def test_a_head_of_a_shape_already_tried_is_recalled_not_nominated_again() -> None:
    sim = untied(simulation(*basic(cpu=4), workload("held", cpu=4, created=0, admitted_to="cq"),
                            workload("a", cpu=4, created=1), workload("b", cpu=4, created=2)))
    scope, version = sim.state.nomination_scope("cq")
    admission_cycle(sim.state, sim.clock.now())  # a: no room, parked; b is the next head
    kept = sim.state.nominations.kept(scope, version)
    assert len(kept.results) == 1
    admission_cycle(sim.state, sim.clock.now())
    assert sim.state.nominations.kept(scope, version) is kept and len(kept.results) == 1
    assert sim.state.messages[sim.state.workloads[next(k for k in sim.state.workloads if k.name == "b")].key] == \
        sim.state.messages[next(k for k in sim.state.workloads if k.name == "a")]


def _apply(obj: dict[str, Any]) -> Callable[[Simulation], None]:
    return lambda sim: sim.apply(obj)


def _fair(sim: Simulation) -> None:
    sim.state.fair_sharing = FairSharing(enable=True)


def _cycle(sim: Simulation) -> None:
    admission_cycle(sim.state, sim.clock.now())


COHORT = [flavor(), cluster_queue("cq", cpu=4, cohort="c"), cluster_queue("other", cpu=4, cohort="c"),
          cluster_queue("alone", cpu=4), local_queue("lq", "cq"), local_queue("lq-alone", "alone"),
          workload("held", cpu=2, created=0, admitted_to="cq"), workload("big", cpu=20, created=1)]
# (id, change, whether nominations in ClusterQueue cq must be made afresh after it)
CHANGES: list[tuple[str, Callable[[Simulation], None], bool]] = [
    ("a new pending Workload", _apply(workload("new", cpu=1, created=5)), False),
    ("a cycle that only parks its head", _cycle, False),
    ("a held Workload observed again unchanged", _apply(workload("held", cpu=2, created=0, admitted_to="cq")), False),
    ("a Workload admitted in another cohort", _apply(workload("w", queue="lq-alone", cpu=1, created=3, admitted_to="alone")), False),
    ("a Workload admitted in the cohort", _apply(workload("w", cpu=1, created=3, admitted_to="other")), True),
    ("a held Workload observed Evicted", _apply(workload("held", cpu=2, created=0, admitted_to="cq", evicted=True)), True),
    ("a held Workload's reservation time changed", _apply(workload("held", cpu=2, created=0, reserved=7, admitted_to="cq")), True),
    ("a held Workload finished", lambda sim: sim.finish("ns/held"), True),
    ("a ClusterQueue edited", _apply(cluster_queue("alone", cpu=5)), True),
    ("a flavor edited", _apply(flavor(labels={"zone": "a"})), True),
    ("a namespace relabelled", _apply(namespace("ns", team="y")), True),
    ("fair sharing switched on", _fair, True),
    ("fair-sharing preemption within nominal switched off",
     lambda sim: setattr(sim.state, "fair_sharing", FairSharing(preempt_within_nominal=False)), True),
]


@pytest.mark.parametrize("change, afresh", [c[1:] for c in CHANGES], ids=[c[0] for c in CHANGES])
def test_what_makes_nominations_be_made_afresh(change: Callable[[Simulation], None], afresh: bool) -> None:
    sim = simulation(*COHORT)
    before = sim.state.nomination_scope("cq")
    change(sim)
    assert (sim.state.nomination_scope("cq") != before) == afresh


def test_a_held_workload_without_a_reservation_time_makes_nominations_read_the_clock() -> None:
    sim = simulation(*basic(cpu=4), workload("held", cpu=2, created=0, admitted_to="cq"))
    assert not sim.state.holds_unreserved("cq")
    unreserved = workload("held", cpu=2, created=0, admitted_to="cq")
    for condition in unreserved["status"]["conditions"]:
        condition.pop("lastTransitionTime")
    sim.apply(unreserved)
    assert sim.state.holds_unreserved("cq")
    sim.apply(workload("held", cpu=2, created=0, admitted_to="cq"))  # its reservation time comes
    assert not sim.state.holds_unreserved("cq")
    sim.apply(unreserved)
    sim.finish("ns/held")
    assert not sim.state.holds_unreserved("cq")


def test_a_scope_holds_a_bounded_number_of_results() -> None:
    recall = Recall()
    kept = recall.kept("scope", 1)
    kept.results.update((n, n) for n in range(MAX_KEPT))
    assert recall.kept("scope", 1) is not kept and recall.kept("scope", 1).results == {}
    assert dataclasses.asdict(recall.kept("scope", 2)) == {"version": 2, "results": {}, "reads_now": None}
