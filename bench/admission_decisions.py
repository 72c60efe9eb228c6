"""The cost of quota admission decisions alone, on Kueue's performance scenarios.

Kueue's `test/performance/scheduler` configs (baseline: 5 cohorts x 6 ClusterQueues, 15,000
workloads; large-scale: 10 cohorts x 100 ClusterQueues, 50,000 workloads) are replayed through
the same simulation `batchgate simulate` runs, on a FakeClock: workloads arrive on Kueue's
schedule, each finishes its runtime after admission, and cycles run until idle at every event.
No API server is involved, so the figures are the decision cost (CPU time in the cycle and its
bookkeeping) plus the admission outcome in simulated time (usage, time to admission per class).

    python bench/admission_decisions.py [baseline|large-scale|all] [--fair-sharing] [--requeue-batch SECONDS]
        [--equivalence-hashing]

`--requeue-batch` is the policy's `admission.requeueBatchPeriod` (Kueue v0.17's one-second batch is
1): parked workloads go back when the period a freeing event starts is over, and the bench wakes
then as the controller's loop does.
"""

from __future__ import annotations

import argparse
import datetime as _dt
from decimal import Decimal
import heapq
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from batchgate.api.kueue import ClusterQueue, LocalQueue, PodSet, ResourceFlavor, Workload  # noqa: E402
from bench.machine_info import machine  # noqa: E402
from batchgate.clock import FakeClock  # noqa: E402
from controller.simulation import Simulation  # noqa: E402
from controller.state.cache import ObjectKey  # noqa: E402
from controller.state.quota_state import workload_key  # noqa: E402
from batchgate.policy import Admission, FairSharing  # noqa: E402


@dataclass(frozen=True)
class WorkloadClass:
    name: str
    count: int
    interval_ms: int
    runtime_ms: int
    priority: int
    cpu: int


@dataclass(frozen=True)
class Config:
    name: str
    cohorts: int
    queues: int
    classes: tuple[WorkloadClass, ...]
    nominal: int = 20
    borrowing_limit: int = 100


CONFIGS = {
    "baseline": Config("baseline", 5, 6, (
        WorkloadClass("small", 350, 100, 200, 50, 1),
        WorkloadClass("medium", 100, 500, 500, 100, 5),
        WorkloadClass("large", 50, 1200, 1000, 200, 20))),
    "large-scale": Config("large-scale", 10, 100, (
        WorkloadClass("small", 35, 60, 150, 50, 1),
        WorkloadClass("medium", 11, 300, 350, 100, 5),
        WorkloadClass("large", 4, 700, 700, 200, 20))),
}
T0 = _dt.datetime(2025, 1, 1, tzinfo=_dt.timezone.utc)


def cluster_queue(name: str, cohort: str, config: Config) -> ClusterQueue:
    return ClusterQueue.from_dict({"metadata": {"name": name}, "spec": {
        "cohort": cohort, "namespaceSelector": {},
        "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [
            {"name": "cpu", "nominalQuota": config.nominal, "borrowingLimit": config.borrowing_limit}]}]}]}})


def run(config: Config, fair_sharing: bool = False, requeue_batch_ms: int = 0,
        equivalence_hashing: bool = Admission().scheduling_equivalence_hashing) -> dict[str, object]:
    clock = FakeClock(T0)
    sim = Simulation(clock)
    sim.state.fair_sharing = FairSharing(enable=fair_sharing)
    sim.state.set_requeue_batch(_dt.timedelta(milliseconds=requeue_batch_ms))
    sim.state.set_equivalence_hashing(equivalence_hashing)
    sim.state.put_flavor(ResourceFlavor("default"))
    arrivals: list[tuple[int, int, Workload, WorkloadClass]] = []
    seq = 0
    for c in range(config.cohorts):
        for q in range(config.queues):
            cq = f"cohort-{c}-cq-{q}"
            sim.state.put_cluster_queue(cluster_queue(cq, f"cohort-{c}", config))
            sim.state.put_local_queue(LocalQueue(cq, "lq", cq))
            for wc in config.classes:
                for i in range(wc.count):
                    at_ms = i * wc.interval_ms
                    wl = Workload(namespace=cq, name=f"{wc.name}-{i}", queue_name="lq",
                                  pod_sets=(PodSet("main", 1, {"cpu": Decimal(wc.cpu)}),),
                                  creation_timestamp=T0 + _dt.timedelta(milliseconds=at_ms), priority=wc.priority)
                    arrivals.append((at_ms, seq, wl, wc))
                    seq += 1
    arrivals.sort(key=lambda a: (a[0], a[1]))
    total_nominal = config.cohorts * config.queues * config.nominal * 1000
    classes = {workload_key(a[2].namespace, a[2].name): a[3] for a in arrivals}
    created_ms = {workload_key(a[2].namespace, a[2].name): a[0] for a in arrivals}
    admitted_ms: dict[ObjectKey, int] = {}
    generation: dict[ObjectKey, int] = {}
    finishes: list[tuple[int, int, ObjectKey, int]] = []  # (at, seq, key, generation)
    next_arrival = 0
    cpu = 0.0
    cycles_before = sim.cycles
    usage_ms = 0.0  # integral of total usage over time, milli-CPU x ms
    now_ms = 0
    done = 0
    total = len(arrivals)
    wall = time.perf_counter()
    while done < total:
        candidates = []
        if next_arrival < total:
            candidates.append(arrivals[next_arrival][0])
        if finishes:
            candidates.append(finishes[0][0])
        if (requeue := sim.state.next_requeue) is not None:
            candidates.append((requeue - T0) // _dt.timedelta(milliseconds=1))
        if not candidates:
            raise RuntimeError(f"stuck with {total - done} workloads unfinished")
        event_ms = min(candidates)
        usage_ms += sum(sum(u.values()) for u in sim.state.book.usage.values()) * (event_ms - now_ms)
        now_ms = event_ms
        clock.set(T0 + _dt.timedelta(milliseconds=now_ms))
        while next_arrival < total and arrivals[next_arrival][0] == now_ms:
            sim.state.put_workload(arrivals[next_arrival][2])
            next_arrival += 1
        while finishes and finishes[0][0] == now_ms:
            _, _, key, gen = heapq.heappop(finishes)
            if generation.get(key) == gen and key in sim.state.admitted and not sim.state.admitted[key].evicted:
                sim.state.finish(key)
                done += 1
        before = set(sim.state.admitted)
        started = time.process_time()
        sim.run(None)
        cpu += time.process_time() - started
        for key in set(sim.state.admitted) - before:
            generation[key] = generation.get(key, 0) + 1
            admitted_ms[key] = now_ms
            heapq.heappush(finishes, (now_ms + classes[key].runtime_ms, seq, key, generation[key]))
            seq += 1
    wall = time.perf_counter() - wall
    per_class: dict[str, list[int]] = {}
    for key, at in admitted_ms.items():
        per_class.setdefault(classes[key].name, []).append(at - created_ms[key])
    return {
        "config": config.name, "fairSharing": fair_sharing, "requeueBatchMs": requeue_batch_ms,
        "equivalenceHashing": equivalence_hashing, "clusterQueues": config.cohorts * config.queues, "workloads": total,
        "cycles": sim.cycles - cycles_before, "preemptions": sim.preemptions, "decisionCpuSeconds": round(cpu, 2),
        "admissionsPerCpuSecond": round(total / cpu) if cpu else None,
        "benchWallSeconds": round(wall, 2), "simulatedSeconds": round(now_ms / 1000, 1),
        "meanClusterQueueUsagePercent": round(100 * usage_ms / (total_nominal * now_ms), 1),
        "meanTimeToAdmissionSeconds": {name: round(sum(v) / len(v) / 1000, 2) for name, v in sorted(per_class.items())},
        "peakRssMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="*", metavar="CONFIG",
                        help=f"one of {', '.join(CONFIGS)} or all (default: baseline)")
    parser.add_argument("--fair-sharing", action="store_true")
    parser.add_argument("--requeue-batch", type=float, default=0.0, metavar="SECONDS",
                        help="admission.requeueBatchPeriod (default 0: parked workloads go back at once)")
    parser.add_argument("--equivalence-hashing", action=argparse.BooleanOptionalAction,
                        default=Admission().scheduling_equivalence_hashing,
                        help="admission.schedulingEquivalenceHashing: a head that finds no room parks its class "
                             "(default: the policy's, on)")
    args = parser.parse_args(argv)
    if unknown := [c for c in args.configs if c not in CONFIGS and c != "all"]:
        parser.error(f"unknown config {', '.join(unknown)}: choose from {', '.join(CONFIGS)} or all")
    if args.requeue_batch < 0:
        parser.error("--requeue-batch must not be negative")
    names = list(CONFIGS) if "all" in args.configs else args.configs or ["baseline"]
    print(f"machine: {machine()}")
    for name in names:
        result = run(CONFIGS[name], args.fair_sharing, round(args.requeue_batch * 1000), args.equivalence_hashing)
        print(" ".join(f"{k}={v}" for k, v in result.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
