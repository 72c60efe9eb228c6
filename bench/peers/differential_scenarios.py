"""Small seeded quota scenarios for the differential (bench/peers/differential.py), as real objects.

A scenario is one cohort of 2-3 ClusterQueues over 1-2 flavors (CPU only), with random nominal
quotas, borrowing and lending limits, queueing strategy and preemption policy (every
withinClusterQueue and reclaimWithinCohort policy, borrowWithinCohort with and without a
threshold), then a sequence of events, each one decided before the next: a Workload arrives
(queue, priority, CPUs) or an earlier one finishes. The same seed gives the same scenario.
Every name carries the scenario's prefix, so that many scenarios share one cluster without
meeting: each has its own namespace, cohort, ClusterQueues and flavors.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from batchgate.api.kueue import ResourceQuota

KUEUE_V1BETA1 = "kueue.x-k8s.io/v1beta1"
WITHIN = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")
RECLAIM = ("Never", "LowerPriority", "Any")
PRIORITIES = (0, 10, 20)


@dataclass(frozen=True)
class Queue:
    name: str
    quotas: tuple[ResourceQuota, ...]  # CPU's, one per flavor, in the scenario's flavor order
    within: str = "Never"
    reclaim: str = "Never"
    borrow_within: bool = False
    threshold: int | None = None  # borrowWithinCohort's maxPriorityThreshold
    strict: bool = False  # StrictFIFO, else BestEffortFIFO


@dataclass(frozen=True)
class Arrive:
    workload: str
    queue: str
    priority: int
    cpu: int


@dataclass(frozen=True)
class Finish:
    workload: str  # finished if it is admitted then, else nothing happens (on both sides alike)


Event = Arrive | Finish


@dataclass(frozen=True)
class Scenario:
    seed: int
    flavors: tuple[str, ...]
    queues: tuple[Queue, ...]
    events: tuple[Event, ...]

    @property
    def prefix(self) -> str:
        return f"d{self.seed}"

    def name(self, short: str) -> str:
        """A scenario-local name (`cq-0`, `f1`, `w3`) as it is on the cluster."""
        return f"{self.prefix}-{short}"


def generate(seed: int) -> Scenario:
    """The scenario of `seed`."""
    rng = random.Random(seed)
    flavors = tuple(f"f{i}" for i in range(rng.choice((1, 1, 2))))
    queues = tuple(_queue(rng, f"cq-{i}", len(flavors)) for i in range(rng.choice((2, 3))))
    events: list[Event] = []
    arrived: list[str] = []
    for i in range(rng.randint(5, 8)):
        if arrived and rng.random() < 0.2:
            events.append(Finish(rng.choice(arrived)))
            continue
        name = f"w{i}"
        arrived.append(name)
        events.append(Arrive(name, rng.choice(queues).name, rng.choice(PRIORITIES), rng.randint(1, 4)))
    return Scenario(seed, flavors, queues, tuple(events))


def _queue(rng: random.Random, name: str, flavors: int) -> Queue:
    quotas = []
    for _ in range(flavors):
        nominal = rng.choice((0, 2, 3, 4, 6))
        borrowing = rng.choice((None, None, 0, 2, 4))
        lending = rng.choice((None, None, None, 0, nominal // 2, nominal))
        quotas.append(ResourceQuota("cpu", Decimal(nominal), _amount(borrowing), _amount(lending)))
    reclaim = rng.choice(RECLAIM)
    borrow_within = reclaim != "Never" and rng.random() < 0.3  # Kueue refuses it without reclaim
    threshold = rng.choice((None, 0, 10)) if borrow_within else None
    return Queue(name, tuple(quotas), rng.choice(WITHIN), reclaim, borrow_within, threshold, rng.random() < 0.2)


def _amount(value: int | None) -> Decimal | None:
    return None if value is None else Decimal(value)


def setup_objects(s: Scenario) -> list[dict[str, Any]]:
    """The namespace, flavors, ClusterQueues and LocalQueues (Kueue v1beta1, which both serve), in creation order."""
    out: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": s.prefix}}]
    out += [{"apiVersion": KUEUE_V1BETA1, "kind": "ResourceFlavor", "metadata": {"name": s.name(f)}} for f in s.flavors]
    for q in s.queues:
        out.append(_cluster_queue(s, q))
        out.append({"apiVersion": KUEUE_V1BETA1, "kind": "LocalQueue", "metadata": {"name": q.name, "namespace": s.prefix},
                    "spec": {"clusterQueue": s.name(q.name)}})
    return out


def _cluster_queue(s: Scenario, q: Queue) -> dict[str, Any]:
    flavors = []
    for flavor, quota in zip(s.flavors, q.quotas):
        resource: dict[str, Any] = {"name": "cpu", "nominalQuota": str(quota.nominal)}
        if quota.borrowing_limit is not None:
            resource["borrowingLimit"] = str(quota.borrowing_limit)
        if quota.lending_limit is not None:
            resource["lendingLimit"] = str(quota.lending_limit)
        flavors.append({"name": s.name(flavor), "resources": [resource]})
    preemption: dict[str, Any] = {"withinClusterQueue": q.within, "reclaimWithinCohort": q.reclaim}
    if q.borrow_within:
        preemption["borrowWithinCohort"] = {"policy": "LowerPriority"}
        if q.threshold is not None:
            preemption["borrowWithinCohort"]["maxPriorityThreshold"] = q.threshold
    return {"apiVersion": KUEUE_V1BETA1, "kind": "ClusterQueue", "metadata": {"name": s.name(q.name)}, "spec": {
        "cohort": s.name("cohort"), "namespaceSelector": {}, "preemption": preemption,
        "queueingStrategy": "StrictFIFO" if q.strict else "BestEffortFIFO",
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": flavors}]}}


def workload(s: Scenario, arrive: Arrive, api_version: str) -> dict[str, Any]:
    """The Workload of an arrival, in `api_version` (each side's own: see differential.py)."""
    return {"apiVersion": api_version, "kind": "Workload", "metadata": {"name": arrive.workload, "namespace": s.prefix},
            "spec": {"queueName": arrive.queue, "priority": arrive.priority, "podSets": [{"name": "main", "count": 1, "template": {
                "spec": {"restartPolicy": "Never", "containers": [
                    {"name": "c", "image": "pause", "resources": {"requests": {"cpu": str(arrive.cpu)}}}]}}}]}}


def describe(s: Scenario) -> str:
    """The scenario in a few lines, for a disagreement's report."""
    lines = [f"seed {s.seed}: flavors {', '.join(s.flavors)}"]
    for q in s.queues:
        quotas = ", ".join(f"{f} {x.nominal}" + (f" borrow<={x.borrowing_limit}" if x.borrowing_limit is not None else "")
                           + (f" lend<={x.lending_limit}" if x.lending_limit is not None else "") for f, x in zip(s.flavors, q.quotas))
        borrow = f" borrowWithin(threshold {q.threshold})" if q.borrow_within else ""
        lines.append(f"  {q.name}: {quotas}; within {q.within}, reclaim {q.reclaim}{borrow}"
                     + (", StrictFIFO" if q.strict else ""))
    for e in s.events:
        lines.append(f"  arrive {e.workload} in {e.queue} priority {e.priority} cpu {e.cpu}" if isinstance(e, Arrive)
                     else f"  finish {e.workload}")
    return "\n".join(lines)
