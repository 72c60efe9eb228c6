"""The quota admission livelock Hypothesis found (test_quota_invariants, fair sharing on).

Shrunk by hand: `late` (cq-2, priority 3) is borrowing GPUs and reclaims `big` (cq-0,
priority 0) under borrowWithinCohort; once `big` is released both are heads of their queues,
fair-sharing order puts cq-0 (lower share) first, `big` is admitted again and `late` no longer
fits, so the next cycle preempted `big` again, forever. As in Kueue (kubernetes-sigs/kueue#4165),
borrowWithinCohort is ignored under fair sharing, so `late` may not take `big` against the shares.
"""

from __future__ import annotations

from batchgate.clock import FakeClock
import pytest

from controller.simulation import Simulation
from batchgate.policy import FairSharing
from tests.controller.decisions.trace_builders import (
    T0, cluster_queue, flavor, group, local_queue, quota, wl_key, workload,
)


def _queue(name: str, cpu: dict, gpu: dict, within: str, reclaim: str, borrow_within: str | None) -> dict:
    return cluster_queue(name, group({"default": {"cpu": quota(**cpu), "nvidia.com/gpu": quota(**gpu)}}),
                         cohort="c", within=within, reclaim=reclaim, borrow_within=borrow_within)


def test_a_reclaimed_workload_is_not_preempted_again_by_the_same_preemptor() -> None:
    sim = Simulation(FakeClock(T0))
    sim.state.fair_sharing = FairSharing(enable=True)
    for obj in [flavor(),
                _queue("cq-0", {"nominal": 7}, {"nominal": 9}, "Never", "LowerPriority", "Never"),
                _queue("cq-1", {"nominal": 7}, {"nominal": 10, "lend": 6}, "Never", "Never", None),
                _queue("cq-2", {"nominal": 10, "borrow": 5}, {"nominal": 1, "lend": 1}, "LowerPriority", "Any",
                       "LowerPriority"),
                local_queue("lq-0", "cq-0"), local_queue("lq-2", "cq-2"),
                workload("filler", queue="lq-0", cpu=6, gpu=6, priority=2, created=0),
                workload("small", queue="lq-2", cpu=2, gpu=2, count=2, priority=1, created=1),
                workload("big", queue="lq-0", cpu=6, gpu=6, priority=0, created=2)]:
        sim.apply(obj)
    sim.run(None)
    assert sorted(sim.state.admitted) == [wl_key("ns/big"), wl_key("ns/filler"), wl_key("ns/small")]
    sim.apply(workload("late", queue="lq-2", cpu=4, gpu=3, priority=3, created=9))
    victims = []
    for _ in range(8):
        effects = sim.cycle()
        victims += [p.target.workload.namespaced_name for p in effects.preempted]
    assert victims.count("ns/big") <= 1, f"big preempted {victims.count('ns/big')} times in 8 cycles"


# --- issue 20: the suspend/resume flapping of a 200-Job run ------------------------------------
# A preemptor waits for its victim's quota to be released; once it is, the room must go to the
# preemptor. Before, it went to another head — one that the release itself had moved back from
# the inadmissible set to the front of the preemptor's queue (Kueue#6929, #6947), or a head of
# another queue ordered first (Kueue#13797) — often the victim itself: admitted again, preempted
# again by the same preemptor, its Job suspended and resumed within a second, over and over.
# Kueue's answer, followed here: the preemptor stays its queue's head (stickyWorkload /
# preemptorWorkload, pkg/queue/cluster_queue.go) and goes first in the cycle (PrioritizePreemptorWorkloads).

def _cohort_queue(name: str, cpu: int, **preemption: str) -> dict:
    return cluster_queue(name, group({"default": {"cpu": cpu}}), cohort="c", **preemption)  # type: ignore[arg-type]


FLAPPING = [
    pytest.param(
        [_cohort_queue("cq-a", 3, reclaim="Any"), _cohort_queue("cq-b", 0),
         workload("w1", queue="lq-b", cpu=1, created=0, admitted_to="cq-b"),
         workload("w4", queue="lq-a", cpu=4, created=1), workload("w3", queue="lq-a", cpu=3, created=2)],
        "ns/w3", ["ns/w1"],
        id="a queue's never-fitting older head, moved back by the victim's release, does not take the preemptor's turn",
    ),
    pytest.param(
        [_cohort_queue("cq-a", 3, within="LowerPriority", reclaim="Any"), _cohort_queue("cq-b", 3),
         workload("a1", queue="lq-a", cpu=2, priority=5, created=0, admitted_to="cq-a"),
         workload("v", queue="lq-a", cpu=2, priority=0, created=0, admitted_to="cq-a"),
         workload("b1", queue="lq-b", cpu=1, priority=5, created=0, admitted_to="cq-b"),
         workload("x", queue="lq-b", cpu=3, priority=5, created=1), workload("p", queue="lq-a", cpu=3, priority=5, created=2)],
        "ns/p", ["ns/v"],
        id="an older head of another queue does not take the room the preemptor's victim freed",
    ),
]


@pytest.mark.parametrize(("objects", "preemptor", "victims"), FLAPPING)
def test_the_room_a_victim_frees_goes_to_its_preemptor(objects: list, preemptor: str, victims: list) -> None:
    sim = Simulation(FakeClock(T0))
    for obj in [flavor(), local_queue("lq-a", "cq-a"), local_queue("lq-b", "cq-b"), *objects]:
        sim.apply(obj)
    history = []
    for _ in range(10):  # each victim's job stops before the next cycle (the simulation's model)
        effects = sim.cycle()
        history.append(([a.admit.workload.namespaced_name for a in effects.admitted],
                        [p.target.workload.namespaced_name for p in effects.preempted]))
    preempted = [w for _, targets in history for w in targets]
    assert preempted == victims, history
    assert wl_key(preemptor) in sim.state.admitted and not any(wl_key(w) in sim.state.admitted for w in victims), history
