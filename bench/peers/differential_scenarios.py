"""Small seeded quota scenarios for the differential (bench/peers/differential.py), as real objects.

A scenario is 2-4 ClusterQueues in one or two cohorts (or, now and then, in none) over 1-3
flavors (CPU only), each flavor with or without nodeLabels (a zone) and a nodeTaint; random
nominal quotas, borrowing and lending limits, queueing strategy and preemption policy (every
withinClusterQueue and reclaimWithinCohort policy, borrowWithinCohort with and without a
threshold), fair sharing on or off (with a weight now and then); then a sequence of events,
each one decided before the next: a Workload arrives (queue, priority, CPUs, with or without a
zone nodeSelector or node affinity and a toleration) or an earlier one finishes. The same seed
gives the same scenario. Every name carries the scenario's prefix, so that many scenarios share
one cluster without meeting: each has its own namespace, cohorts, ClusterQueues and flavors.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from batchgate.api.kueue import ResourceQuota, Taint

KUEUE_V1BETA1 = "kueue.x-k8s.io/v1beta1"
WITHIN = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")
RECLAIM = ("Never", "LowerPriority", "Any")
PRIORITIES = (0, 10, 20)
ZONE = "zone"  # the one node label key of the flavors; "other" is a key no flavor has
TAINTS = (Taint("dedicated", "team", "NoSchedule"), Taint("dedicated", "other", "NoExecute"),
          Taint("dedicated", "team", "PreferNoSchedule"))  # the last one flavor assignment ignores
TOLERATIONS: tuple[dict[str, str], ...] = (
    {"key": "dedicated", "operator": "Exists"},
    {"key": "dedicated", "operator": "Equal", "value": "team", "effect": "NoSchedule"},
    {"key": "dedicated", "operator": "Equal", "value": "team"},
)
# nodeSelector / required node affinity of a Workload: none, a zone, a key no flavor has, zone NotIn a
PLACEMENTS: tuple[tuple[str, str], ...] = (("", ""), ("", ""), ("selector", "a"), ("selector", "b"),
                                            ("other", "x"), ("notin", "a"))


@dataclass(frozen=True)
class Flavor:
    name: str
    zone: str = ""  # nodeLabels zone=<zone>; "" without labels
    taint: Taint | None = None


@dataclass(frozen=True)
class Queue:
    name: str
    quotas: tuple[ResourceQuota, ...]  # CPU's, one per flavor, in the scenario's flavor order
    within: str = "Never"
    reclaim: str = "Never"
    borrow_within: bool = False
    threshold: int | None = None  # borrowWithinCohort's maxPriorityThreshold
    strict: bool = False  # StrictFIFO, else BestEffortFIFO
    cohort: str = ""  # "" in no cohort
    weight: str = ""  # spec.fairSharing.weight; "" unset (1)


@dataclass(frozen=True)
class Arrive:
    workload: str
    queue: str
    priority: int
    cpu: int
    placement: tuple[str, str] = ("", "")  # one of PLACEMENTS
    toleration: int = -1  # index in TOLERATIONS, -1 none


@dataclass(frozen=True)
class Finish:
    workload: str  # finished if it is admitted then, else nothing happens (on both sides alike)


Event = Arrive | Finish


@dataclass(frozen=True)
class Scenario:
    seed: int
    flavors: tuple[Flavor, ...]
    queues: tuple[Queue, ...]
    events: tuple[Event, ...]
    fair_sharing: bool = False  # Kueue's fairSharing config on both sides: a whole run's setting, see differential.py

    @property
    def prefix(self) -> str:
        return f"d{self.seed}"

    def name(self, short: str) -> str:
        """A scenario-local name (`cq-0`, `f1`, `w3`) as it is on the cluster."""
        return f"{self.prefix}-{short}"


def generate(seed: int) -> Scenario:
    """The scenario of `seed`."""
    rng = random.Random(seed)
    fair = rng.random() < 0.5
    flavors = tuple(_flavor(rng, f"f{i}") for i in range(rng.choice((1, 2, 2, 3))))
    cohorts = rng.choice((1, 1, 2))
    queues = tuple(_queue(rng, f"cq-{i}", len(flavors), cohorts, fair) for i in range(rng.choice((2, 3, 3, 4))))
    events: list[Event] = []
    arrived: list[str] = []
    for i in range(rng.randint(5, 8)):
        if arrived and rng.random() < 0.2:
            events.append(Finish(rng.choice(arrived)))
            continue
        name = f"w{i}"
        arrived.append(name)
        toleration = rng.randrange(len(TOLERATIONS)) if rng.random() < 0.35 else -1
        events.append(Arrive(name, rng.choice(queues).name, rng.choice(PRIORITIES), rng.randint(1, 4),
                             rng.choice(PLACEMENTS), toleration))
    return Scenario(seed, flavors, queues, tuple(events), fair)


def _flavor(rng: random.Random, name: str) -> Flavor:
    return Flavor(name, rng.choice(("", "", "a", "b")), rng.choice(TAINTS) if rng.random() < 0.3 else None)


def _queue(rng: random.Random, name: str, flavors: int, cohorts: int, fair: bool) -> Queue:
    cohort = "" if rng.random() < 0.15 else f"cohort-{rng.randrange(cohorts)}"
    quotas = []
    for _ in range(flavors):
        nominal = rng.choice((0, 2, 3, 4, 6))
        borrowing = rng.choice((None, None, 0, 2, 4))
        lending = rng.choice((None, None, None, 0, nominal // 2, nominal))
        if not cohort:  # Kueue refuses limits outside a cohort
            borrowing = lending = None
        quotas.append(ResourceQuota("cpu", Decimal(nominal), _amount(borrowing), _amount(lending)))
    reclaim = rng.choice(RECLAIM)
    borrow_within = reclaim != "Never" and rng.random() < 0.3  # Kueue refuses it without reclaim
    threshold = rng.choice((None, 0, 10)) if borrow_within else None
    weight = rng.choice(("", "", "2")) if fair else ""
    within, strict = rng.choice(WITHIN), rng.random() < 0.2
    if fair and not cohort:
        # Kueue v0.17.0 dereferences a nil cohort when fair sharing looks for victims of a Workload
        # of a ClusterQueue in no cohort, and exits (fairsharing/ordering.go, Iter; fixed later by
        # kubernetes-sigs/kueue#10891): under fair sharing such a ClusterQueue never preempts.
        within = "Never"
    return Queue(name, tuple(quotas), within, reclaim, borrow_within, threshold, strict, cohort, weight)


def _amount(value: int | None) -> Decimal | None:
    return None if value is None else Decimal(value)


def setup_objects(s: Scenario) -> list[dict[str, Any]]:
    """The namespace, flavors, ClusterQueues and LocalQueues (Kueue v1beta1, which both serve), in creation order."""
    out: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": s.prefix}}]
    out += [_resource_flavor(s, f) for f in s.flavors]
    for q in s.queues:
        out.append(_cluster_queue(s, q))
        out.append({"apiVersion": KUEUE_V1BETA1, "kind": "LocalQueue", "metadata": {"name": q.name, "namespace": s.prefix},
                    "spec": {"clusterQueue": s.name(q.name)}})
    return out


def _resource_flavor(s: Scenario, f: Flavor) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if f.zone:
        spec["nodeLabels"] = {ZONE: f.zone}
    if f.taint is not None:
        spec["nodeTaints"] = [{"key": f.taint.key, "value": f.taint.value, "effect": f.taint.effect}]
    return {"apiVersion": KUEUE_V1BETA1, "kind": "ResourceFlavor", "metadata": {"name": s.name(f.name)}, "spec": spec}


def _cluster_queue(s: Scenario, q: Queue) -> dict[str, Any]:
    flavors = []
    for flavor, quota in zip((f.name for f in s.flavors), q.quotas):
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
    spec: dict[str, Any] = {"namespaceSelector": {}, "preemption": preemption,
                            "queueingStrategy": "StrictFIFO" if q.strict else "BestEffortFIFO",
                            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": flavors}]}
    if q.cohort:
        spec["cohort"] = s.name(q.cohort)
    if q.weight:
        spec["fairSharing"] = {"weight": q.weight}
    return {"apiVersion": KUEUE_V1BETA1, "kind": "ClusterQueue", "metadata": {"name": s.name(q.name)}, "spec": spec}


def workload(s: Scenario, arrive: Arrive, api_version: str) -> dict[str, Any]:
    """The Workload of an arrival, in `api_version` (each side's own: see differential.py)."""
    pod: dict[str, Any] = {"restartPolicy": "Never", "containers": [
        {"name": "c", "image": "pause", "resources": {"requests": {"cpu": str(arrive.cpu)}}}]}
    kind, value = arrive.placement
    if kind == "selector":
        pod["nodeSelector"] = {ZONE: value}
    elif kind == "other":
        pod["nodeSelector"] = {"other": value}
    elif kind == "notin":
        pod["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": ZONE, "operator": "NotIn", "values": [value]}]}]}}}
    if arrive.toleration >= 0:
        pod["tolerations"] = [TOLERATIONS[arrive.toleration]]
    return {"apiVersion": api_version, "kind": "Workload", "metadata": {"name": arrive.workload, "namespace": s.prefix},
            "spec": {"queueName": arrive.queue, "priority": arrive.priority, "podSets": [{"name": "main", "count": 1,
                                                                                          "template": {"spec": pod}}]}}


def describe(s: Scenario) -> str:
    """The scenario in a few lines, for a disagreement's report."""
    flavors = ", ".join(f.name + (f" zone={f.zone}" if f.zone else "")
                        + (f" taint {f.taint.key}={f.taint.value}:{f.taint.effect}" if f.taint else "") for f in s.flavors)
    lines = [f"seed {s.seed}: fair sharing {'on' if s.fair_sharing else 'off'}; flavors {flavors}"]
    for q in s.queues:
        quotas = ", ".join(f"{f.name} {x.nominal}" + (f" borrow<={x.borrowing_limit}" if x.borrowing_limit is not None else "")
                           + (f" lend<={x.lending_limit}" if x.lending_limit is not None else "") for f, x in zip(s.flavors, q.quotas))
        borrow = f" borrowWithin(threshold {q.threshold})" if q.borrow_within else ""
        lines.append(f"  {q.name} in {q.cohort or 'no cohort'}: {quotas}; within {q.within}, reclaim {q.reclaim}{borrow}"
                     + (", StrictFIFO" if q.strict else "") + (f", weight {q.weight}" if q.weight else ""))
    for e in s.events:
        lines.append(_describe_arrival(e) if isinstance(e, Arrive) else f"  finish {e.workload}")
    return "\n".join(lines)


def _describe_arrival(e: Arrive) -> str:
    kind, value = e.placement
    placement = {"selector": f" nodeSelector zone={value}", "other": f" nodeSelector other={value}",
                 "notin": f" affinity zone NotIn {value}"}.get(kind, "")
    toleration = f" tolerates {' '.join(TOLERATIONS[e.toleration].values())}" if e.toleration >= 0 else ""
    return f"  arrive {e.workload} in {e.queue} priority {e.priority} cpu {e.cpu}{placement}{toleration}"
