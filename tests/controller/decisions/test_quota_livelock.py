"""The quota admission livelock Hypothesis found (test_quota_invariants, fair sharing on).

Shrunk by hand: `late` (cq-2, priority 3) is borrowing GPUs and reclaims `big` (cq-0,
priority 0) under borrowWithinCohort; once `big` is released both are heads of their queues,
fair-sharing order puts cq-0 (lower share) first, `big` is admitted again and `late` no longer
fits, so the next cycle preempted `big` again, forever. As in Kueue (kubernetes-sigs/kueue#4165),
borrowWithinCohort is ignored under fair sharing, so `late` may not take `big` against the shares.
"""

from __future__ import annotations

from batchgate.clock import FakeClock
from controller.simulation import Simulation
from batchgate.policy import FairSharing
from tests.controller.decisions.trace_builders import T0, cluster_queue, flavor, group, local_queue, quota, workload


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
    assert sorted(sim.state.admitted) == ["ns/big", "ns/filler", "ns/small"]
    sim.apply(workload("late", queue="lq-2", cpu=4, gpu=3, priority=3, created=9))
    victims = []
    for _ in range(8):
        effects = sim.cycle()
        victims += [p.target.workload for p in effects.preempted]
    assert victims.count("ns/big") <= 1, f"big preempted {victims.count('ns/big')} times in 8 cycles"
