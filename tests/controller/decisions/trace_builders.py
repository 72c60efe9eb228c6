"""Builders for simulation traces: real Kueue objects (docs/simulate.md), written compactly.

`workload("a", cpu=5, priority=10, created=3)` is a Workload created 3 s after T0 asking for
5 CPUs in one pod; `admitted_to="cq"` makes it one that already holds quota.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from batchgate.clock import FakeClock, format_time
from batchgate.quantity import format_quantity, parse_quantity
from controller.simulation import Simulation
from controller.state.cache import ObjectKey
from controller.state.quota_state import workload_key

ALIASES = {"gpu": "nvidia.com/gpu"}  # keyword arguments cannot contain dots
T0 = _dt.datetime(2025, 1, 1, tzinfo=_dt.timezone.utc)


def wl_key(ref: str) -> ObjectKey:
    """The key of the Workload `namespace/name` (as traces and reports name it)."""
    namespace, _, name = ref.partition("/")
    return workload_key(namespace, name)


def at(seconds: float) -> str:
    return format_time(T0 + _dt.timedelta(seconds=seconds))


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def flavor(name: str = "default", *, labels: dict[str, str] | None = None,
           taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if labels:
        spec["nodeLabels"] = labels
    if taints:
        spec["nodeTaints"] = taints
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": name},
            "spec": spec}


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value}


def quota(nominal: Any, borrow: Any = None, lend: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"nominalQuota": nominal}
    if borrow is not None:
        out["borrowingLimit"] = borrow
    if lend is not None:
        out["lendingLimit"] = lend
    return out


def group(flavors: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """{"flavor": {"cpu": 10 or quota(10, borrow=5)}} -> a resourceGroup."""
    covered = list(next(iter(flavors.values())))
    return {"coveredResources": covered, "flavors": [
        {"name": name, "resources": [
            {"name": res, **(q if isinstance(q, dict) else {"nominalQuota": q})} for res, q in res_quotas.items()]}
        for name, res_quotas in flavors.items()]}


def cluster_queue(name: str, *groups: dict[str, Any], cohort: str = "", strategy: str | None = None,
                  selector: Any = "all", within: str | None = None, reclaim: str | None = None,
                  borrow_within: str | None = None, threshold: int | None = None, stop: str | None = None,
                  when_can_borrow: str | None = None, when_can_preempt: str | None = None,
                  cpu: Any = None) -> dict[str, Any]:
    groups = groups or (group({"default": {"cpu": cpu}}),)
    spec: dict[str, Any] = {"resourceGroups": list(groups)}
    if selector == "all":
        spec["namespaceSelector"] = {}
    elif selector is not None:
        spec["namespaceSelector"] = selector
    if cohort:
        spec["cohort"] = cohort
    if strategy:
        spec["queueingStrategy"] = strategy
    preemption: dict[str, Any] = {}
    if within:
        preemption["withinClusterQueue"] = within
    if reclaim:
        preemption["reclaimWithinCohort"] = reclaim
    if borrow_within:
        preemption["borrowWithinCohort"] = {"policy": borrow_within}
        if threshold is not None:
            preemption["borrowWithinCohort"]["maxPriorityThreshold"] = threshold
    if preemption:
        spec["preemption"] = preemption
    if stop:
        spec["stopPolicy"] = stop
    fungibility = {k: v for k, v in (("whenCanBorrow", when_can_borrow), ("whenCanPreempt", when_can_preempt)) if v}
    if fungibility:
        spec["flavorFungibility"] = fungibility
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def local_queue(name: str, cq: str, ns: str = "ns", stop: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"clusterQueue": cq}
    if stop:
        spec["stopPolicy"] = stop
    return {"kind": "LocalQueue", "metadata": {"namespace": ns, "name": name}, "spec": spec}


def pod_set(name: str = "main", count: int = 1, tolerations: list[dict[str, str]] | None = None,
            node_selector: dict[str, str] | None = None, required: list[list[tuple[str, str, list[str]]]] | None = None,
            **requests: Any) -> dict[str, Any]:
    """`required`: node affinity terms, each a list of (key, operator, values) expressions."""
    reqs = {ALIASES.get(k, k): v for k, v in requests.items()}
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": reqs}}]}
    if tolerations:
        spec["tolerations"] = tolerations
    if node_selector:
        spec["nodeSelector"] = node_selector
    if required is not None:
        terms = [{"matchExpressions": [{"key": k, "operator": op, "values": values} for k, op, values in term]}
                 for term in required]
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    return {"name": name, "count": count, "template": {"spec": spec}}


def workload(name: str, *, ns: str = "ns", queue: str = "lq", created: float = 0, priority: int | None = None,
             priority_class: str | None = None, pod_sets: list[dict[str, Any]] | None = None,
             admitted_to: str | None = None, flavors: dict[str, str] | None = None, reserved: float | None = None,
             evicted: bool = False, count: int = 1, reclaimable: dict[str, int] | None = None,
             admitted_count: int | None = None, **requests: Any) -> dict[str, Any]:
    """`reclaimable`: status.reclaimablePods per pod set; `admitted_count`: the admission's pod
    count (and usage) when it differs from the pod set's."""
    pod_sets = pod_sets or [pod_set(count=count, **requests)]
    spec: dict[str, Any] = {"queueName": queue, "podSets": pod_sets}
    if priority is not None:
        spec["priority"] = priority
    if priority_class:
        spec["priorityClassName"] = priority_class
        spec["priorityClassSource"] = "kueue.x-k8s.io/workloadpriorityclass"
    obj: dict[str, Any] = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
                           "metadata": {"namespace": ns, "name": name, "creationTimestamp": at(created)},
                           "spec": spec}
    if admitted_to:
        when = at(created if reserved is None else reserved)
        assignments = []
        for ps in pod_sets:
            per_pod = ps["template"]["spec"]["containers"][0]["resources"]["requests"]
            n = ps["count"] if admitted_count is None else admitted_count
            usage = {res: _times(v, n) for res, v in per_pod.items()}
            assignments.append({"name": ps["name"], "count": n,
                                "flavors": {res: (flavors or {}).get(res, "default") for res in per_pod},
                                "resourceUsage": usage})
        conditions = [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "lastTransitionTime": when},
                      {"type": "Admitted", "status": "True", "reason": "Admitted", "lastTransitionTime": when}]
        if evicted:
            conditions.append({"type": "Evicted", "status": "True", "reason": "Preempted", "lastTransitionTime": when})
        obj["status"] = {"admission": {"clusterQueue": admitted_to, "podSetAssignments": assignments},
                         "conditions": conditions}
    if reclaimable:
        obj.setdefault("status", {})["reclaimablePods"] = [{"name": n, "count": c} for n, c in reclaimable.items()]
    return obj


def _times(value: Any, count: int) -> str:
    return format_quantity(parse_quantity(value) * count)


def trace(objects: list[dict[str, Any]], *steps: dict[str, Any]) -> dict[str, Any]:
    return {"objects": objects, "steps": list(steps) or [{}]}


def basic(cq_name: str = "cq", cpu: Any = 10, **cq_options: Any) -> list[dict[str, Any]]:
    """One flavor `default`, one ClusterQueue with `cpu` quota, LocalQueue ns/lq pointing at it."""
    return [flavor(), cluster_queue(cq_name, cpu=cpu, **cq_options), local_queue("lq", cq_name)]


def simulation(*objects: dict[str, Any]) -> Simulation:
    """A simulation at T0 with `objects` applied in order."""
    sim = Simulation(FakeClock(T0))
    for obj in objects:
        sim.apply(obj)
    return sim
