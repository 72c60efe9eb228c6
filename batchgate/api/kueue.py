"""Kueue v1beta1 objects as frozen values, parsed once from wire dicts with field-path errors.

Only what quota admission reads is modelled. Quantities stay exact (`Decimal`); the quota
state converts them to integer units (milli-CPU, bytes) once with `to_units`, as Kueue does.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass, field
from functools import cached_property
from decimal import Decimal
from collections.abc import Mapping
from typing import Any

from batchgate import keys
from batchgate.api import kueue_fields as f
from batchgate.api.conditions import Condition, is_true
from batchgate.api.kueue_fields import FieldError
from batchgate.api.node_affinity import NodeAffinity, parse_node_affinity
from batchgate.api.pod_requests import pod_requests
from batchgate.api.selectors import LabelSelector, parse_label_selector
from batchgate.frozen import frozen

__all__ = [
    "FieldError", "LabelSelector", "ResourceQuota", "FlavorQuotas", "ResourceGroup", "Preemption",
    "FlavorFungibility", "ClusterQueue", "LocalQueue", "ResourceFlavor", "Taint",
    "WorkloadPriorityClass", "PodSet", "PodSetAssignment", "Admission", "Condition", "Workload",
    "validate_cluster_queue", "holds_quota",
]

STOP_POLICIES = ("None", "Hold", "HoldAndDrain")
QUEUEING_STRATEGIES = ("BestEffortFIFO", "StrictFIFO")
WITHIN_CQ_POLICIES = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")
RECLAIM_POLICIES = ("Never", "LowerPriority", "Any")
BORROW_WITHIN_COHORT_POLICIES = ("Never", "LowerPriority")
WHEN_CAN_BORROW = ("Borrow", "TryNextFlavor")
WHEN_CAN_PREEMPT = ("Preempt", "TryNextFlavor")
MAY_STOP_SEARCH = "MayStopSearch"  # Kueue v1beta2's spelling of both first choices
WPC_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"


def _meta(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    return f.mapping(raw.get("metadata"), "metadata", required=True)


def _name(meta: Mapping[str, Any]) -> str:
    name = f.string(meta.get("name"), "metadata.name")
    if not name:
        raise FieldError("metadata.name", "must not be empty")
    return name


@dataclass(frozen=True)
class ResourceQuota:
    name: str
    nominal: Decimal
    borrowing_limit: Decimal | None = None
    lending_limit: Decimal | None = None


@dataclass(frozen=True)
class FlavorQuotas:
    name: str
    resources: tuple[ResourceQuota, ...]


@dataclass(frozen=True)
class ResourceGroup:
    covered_resources: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


@dataclass(frozen=True)
class Preemption:
    within_cluster_queue: str = "Never"
    reclaim_within_cohort: str = "Never"
    borrow_within_cohort: str = "Never"
    max_priority_threshold: int | None = None


@dataclass(frozen=True)
class FlavorFungibility:
    when_can_borrow: str = "Borrow"
    when_can_preempt: str = "TryNextFlavor"


@dataclass(frozen=True)
class ClusterQueue:
    name: str
    resource_groups: tuple[ResourceGroup, ...] = ()
    cohort: str = ""
    queueing_strategy: str = "BestEffortFIFO"
    namespace_selector: LabelSelector | None = None  # None: no namespace is eligible
    preemption: Preemption = Preemption()
    flavor_fungibility: FlavorFungibility = FlavorFungibility()
    stop_policy: str = "None"
    fair_weight: Decimal = Decimal(1)  # spec.fairSharing.weight

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> "ClusterQueue":
        name = _name(_meta(raw))
        spec = f.mapping(raw.get("spec"), "spec")
        groups = []
        rg_path = "spec.resourceGroups"
        for i, rg in enumerate(f.sequence(spec.get("resourceGroups"), rg_path)):
            groups.append(_resource_group(f.mapping(rg, f.join(rg_path, i), required=True), f.join(rg_path, i)))
        pre = f.mapping(spec.get("preemption"), "spec.preemption")
        bwc = f.mapping(pre.get("borrowWithinCohort"), "spec.preemption.borrowWithinCohort")
        threshold = bwc.get("maxPriorityThreshold")
        fung = f.mapping(spec.get("flavorFungibility"), "spec.flavorFungibility")
        selector = spec.get("namespaceSelector")
        return cls(
            name=name,
            resource_groups=tuple(groups),
            cohort=f.string(spec.get("cohort"), "spec.cohort", default=""),
            queueing_strategy=f.choice(spec.get("queueingStrategy"), "spec.queueingStrategy",
                                       QUEUEING_STRATEGIES, "BestEffortFIFO"),
            namespace_selector=None if selector is None else parse_label_selector(selector, "spec.namespaceSelector"),
            preemption=Preemption(
                f.choice(pre.get("withinClusterQueue"), "spec.preemption.withinClusterQueue",
                         WITHIN_CQ_POLICIES, "Never"),
                f.choice(pre.get("reclaimWithinCohort"), "spec.preemption.reclaimWithinCohort",
                         RECLAIM_POLICIES, "Never"),
                f.choice(bwc.get("policy"), "spec.preemption.borrowWithinCohort.policy",
                         BORROW_WITHIN_COHORT_POLICIES, "Never"),
                None if threshold is None else f.integer(
                    threshold, "spec.preemption.borrowWithinCohort.maxPriorityThreshold"),
            ),
            flavor_fungibility=FlavorFungibility(
                _fungibility(fung.get("whenCanBorrow"), "whenCanBorrow", WHEN_CAN_BORROW, "Borrow"),
                _fungibility(fung.get("whenCanPreempt"), "whenCanPreempt", WHEN_CAN_PREEMPT, "TryNextFlavor"),
            ),
            stop_policy=f.choice(spec.get("stopPolicy"), "spec.stopPolicy", STOP_POLICIES, "None"),
            fair_weight=f.quantity(f.mapping(spec.get("fairSharing"), "spec.fairSharing").get("weight", 1),
                                   "spec.fairSharing.weight"),
        )

    @cached_property
    def flavor_names(self) -> tuple[str, ...]:
        return tuple(fq.name for rg in self.resource_groups for fq in rg.flavors)

    @cached_property
    def group_of(self) -> Mapping[str, int]:
        """Resource name -> index of the resource group covering it."""
        return {res: i for i, rg in enumerate(self.resource_groups) for res in rg.covered_resources}


def _fungibility(raw: Any, field: str, allowed: tuple[str, str], default: str) -> str:
    """Kueue v1beta2 spells `Borrow` and `Preempt` (allowed[0]) `MayStopSearch`, and its conversion
    keeps that spelling in v1beta1 (seen with Kueue v0.17): objects a migrated cluster holds."""
    value = f.choice(raw, f"spec.flavorFungibility.{field}", (*allowed, MAY_STOP_SEARCH), default)
    return allowed[0] if value == MAY_STOP_SEARCH else value


def _resource_group(rg: Mapping[str, Any], path: str) -> ResourceGroup:
    covered = tuple(f.string(r, f.join(f.join(path, "coveredResources"), j)) for j, r in
                    enumerate(f.sequence(rg.get("coveredResources"), f.join(path, "coveredResources"))))
    flavors = []
    fl_path = f.join(path, "flavors")
    for j, fl in enumerate(f.sequence(rg.get("flavors"), fl_path)):
        p = f.join(fl_path, j)
        fl = f.mapping(fl, p, required=True)
        quotas = []
        for k, rq in enumerate(f.sequence(fl.get("resources"), f.join(p, "resources"))):
            q = f.join(f.join(p, "resources"), k)
            rq = f.mapping(rq, q, required=True)
            quotas.append(ResourceQuota(
                f.string(rq.get("name"), f.join(q, "name")),
                f.quantity(rq.get("nominalQuota"), f.join(q, "nominalQuota")),
                f.optional_quantity(rq.get("borrowingLimit"), f.join(q, "borrowingLimit")),
                f.optional_quantity(rq.get("lendingLimit"), f.join(q, "lendingLimit")),
            ))
        flavors.append(FlavorQuotas(f.string(fl.get("name"), f.join(p, "name")), tuple(quotas)))
    return ResourceGroup(covered, tuple(flavors))


def validate_cluster_queue(cq: ClusterQueue) -> list[FieldError]:
    """The ClusterQueue webhook's structural rules (Kueue's CEL and Go validation)."""
    errors: list[FieldError] = []
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    for i, rg in enumerate(cq.resource_groups):
        path = f"spec.resourceGroups[{i}]"
        if not rg.covered_resources:
            errors.append(FieldError(f"{path}.coveredResources", "must list at least one resource"))
        for j, res in enumerate(rg.covered_resources):
            if res in seen_resources:
                errors.append(FieldError(f"{path}.coveredResources[{j}]", f"duplicate resource {res!r}"))
            seen_resources.add(res)
        for j, fq in enumerate(rg.flavors):
            fpath = f"{path}.flavors[{j}]"
            if fq.name in seen_flavors:
                errors.append(FieldError(f"{fpath}.name", f"duplicate flavor {fq.name!r}"))
            seen_flavors.add(fq.name)
            if tuple(r.name for r in fq.resources) != rg.covered_resources:
                errors.append(FieldError(f"{fpath}.resources",
                                         "must list exactly the coveredResources, in the same order"))
            for k, rq in enumerate(fq.resources):
                rpath = f"{fpath}.resources[{k}]"
                if rq.borrowing_limit is not None and not cq.cohort:
                    errors.append(FieldError(f"{rpath}.borrowingLimit", "must be nil when cohort is empty"))
                if rq.lending_limit is not None and not cq.cohort:
                    errors.append(FieldError(f"{rpath}.lendingLimit", "must be nil when cohort is empty"))
                if rq.lending_limit is not None and rq.lending_limit > rq.nominal:
                    errors.append(FieldError(f"{rpath}.lendingLimit",
                                             "must be less than or equal to the nominalQuota"))
    pre = cq.preemption
    if pre.reclaim_within_cohort == "Never" and pre.borrow_within_cohort != "Never":
        errors.append(FieldError("spec.preemption",
                                 "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"))
    return errors


@dataclass(frozen=True)
class LocalQueue:
    namespace: str
    name: str
    cluster_queue: str
    stop_policy: str = "None"

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> "LocalQueue":
        meta = _meta(raw)
        spec = f.mapping(raw.get("spec"), "spec", required=True)
        return cls(
            f.string(meta.get("namespace"), "metadata.namespace", default="default"),
            _name(meta),
            f.string(spec.get("clusterQueue"), "spec.clusterQueue"),
            f.choice(spec.get("stopPolicy"), "spec.stopPolicy", STOP_POLICIES, "None"),
        )


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class ResourceFlavor:
    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Mapping[str, Any], ...] = ()

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> "ResourceFlavor":
        name = _name(_meta(raw))
        spec = f.mapping(raw.get("spec"), "spec")
        taints = []
        for i, t in enumerate(f.sequence(spec.get("nodeTaints"), "spec.nodeTaints")):
            p = f"spec.nodeTaints[{i}]"
            t = f.mapping(t, p, required=True)
            taints.append(Taint(f.string(t.get("key"), f"{p}.key"), f.string(t.get("value"), f"{p}.value", default=""),
                                f.choice(t.get("effect"), f"{p}.effect",
                                         ("NoSchedule", "PreferNoSchedule", "NoExecute"), "")))
        tolerations = tuple(f.mapping(t, f"spec.tolerations[{i}]", required=True)
                            for i, t in enumerate(f.sequence(spec.get("tolerations"), "spec.tolerations")))
        return cls(name, f.string_map(spec.get("nodeLabels"), "spec.nodeLabels"), tuple(taints), tolerations)


@dataclass(frozen=True)
class WorkloadPriorityClass:
    name: str
    value: int

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> "WorkloadPriorityClass":
        return cls(_name(_meta(raw)), f.integer(raw.get("value"), "value"))


_MILLI_RESOURCES = frozenset({"cpu"})


def to_units(resource: str, value: Decimal) -> int:
    """Kueue's integer view of a quantity (resources.ResourceValue): milli-CPU, otherwise whole
    units, rounded up."""
    if resource in _MILLI_RESOURCES:
        return math.ceil(value * 1000)
    return math.ceil(value)


def from_units(resource: str, units: int) -> Decimal:
    """The quantity `to_units` gave `units` for."""
    return Decimal(units) / 1000 if resource in _MILLI_RESOURCES else Decimal(units)


@frozen
class PodSet:
    """A group of identical pods; `requests` is per pod, `tolerations` and `affinity` from the template."""

    name: str
    count: int
    requests: Mapping[str, Decimal]
    tolerations: tuple[Mapping[str, Any], ...] = ()
    affinity: NodeAffinity = NodeAffinity()
    reclaimable: int = 0
    """Pods that will not run again (status.reclaimablePods): a finished share of a Job."""

    @property
    def remaining(self) -> int:
        """The pods still to run, which is what quota counts (Kueue: count - reclaimablePods)."""
        return max(self.count - self.reclaimable, 0)

    def total(self) -> dict[str, Decimal]:
        return {name: value * self.remaining for name, value in self.requests.items()}


@frozen
class PodSetAssignment:
    name: str
    flavors: Mapping[str, str]
    resource_usage: Mapping[str, Decimal]
    count: int
    remaining: int | None = None
    """The pod set's pods still to run (spec count - reclaimablePods); None when it has no such pod set."""

    def usage(self) -> dict[str, Decimal]:
        """What the assignment holds now. Once fewer pods remain than were admitted, Kueue's
        totalRequestsFromAdmission scales it in integer units, per pod then up (so 1 CPU
        admitted for 3 pods holds 666m for 2); a partial admission's smaller count is kept."""
        if self.remaining is None or not self.count or self.remaining >= self.count:
            return dict(self.resource_usage)
        return {name: from_units(name, to_units(name, value) // self.count * self.remaining)
                for name, value in self.resource_usage.items()}


@frozen
class Admission:
    cluster_queue: str
    pod_set_assignments: tuple[PodSetAssignment, ...]


@frozen
class Workload:
    namespace: str
    name: str
    queue_name: str
    pod_sets: tuple[PodSet, ...]
    creation_timestamp: _dt.datetime | None = None
    uid: str = ""
    priority: int | None = None
    priority_class_name: str = ""
    priority_class_source: str = ""
    active: bool = True
    admission: Admission | None = None
    conditions: tuple[Condition, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)

    def is_true(self, type_: str) -> bool:
        cond = self.condition(type_)
        return cond is not None and cond.status == "True"

    @property
    def holds_quota(self) -> bool:
        return self.admission is not None and self.is_true(keys.COND_QUOTA_RESERVED)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> "Workload":
        meta = _meta(raw)
        spec = f.mapping(raw.get("spec"), "spec", required=True)
        status = f.mapping(raw.get("status"), "status")
        pod_sets = []
        ps_path = "spec.podSets"
        raw_sets = f.sequence(spec.get("podSets"), ps_path)
        if not 1 <= len(raw_sets) <= 8:
            raise FieldError(ps_path, f"must have 1 to 8 pod sets, got {len(raw_sets)}")
        reclaimable = _reclaimable(status.get("reclaimablePods"), "status.reclaimablePods")
        for i, ps in enumerate(raw_sets):
            p = f.join(ps_path, i)
            pod_sets.append(_pod_set(f.mapping(ps, p, required=True), p, reclaimable))
        names = [ps.name for ps in pod_sets]
        if len(set(names)) != len(names):
            raise FieldError(ps_path, f"pod set names must be unique, got {names}")
        priority = spec.get("priority")
        return cls(
            namespace=f.string(meta.get("namespace"), "metadata.namespace", default="default"),
            name=_name(meta),
            queue_name=f.string(spec.get("queueName"), "spec.queueName", default=""),
            pod_sets=tuple(pod_sets),
            creation_timestamp=f.timestamp(meta.get("creationTimestamp"), "metadata.creationTimestamp"),
            uid=f.string(meta.get("uid"), "metadata.uid", default=""),
            priority=None if priority is None else f.integer(priority, "spec.priority"),
            priority_class_name=f.string(spec.get("priorityClassName"), "spec.priorityClassName", default=""),
            priority_class_source=f.string(spec.get("priorityClassSource"), "spec.priorityClassSource", default=""),
            active=_boolean(spec.get("active"), "spec.active", True),
            admission=_admission(status.get("admission"), "status.admission",
                                 {ps.name: ps for ps in pod_sets}),
            conditions=_conditions(status.get("conditions"), "status.conditions"),
        )


def holds_quota(raw: Mapping[str, Any]) -> bool:
    """`Workload.holds_quota` read straight off a wire dict, for checks too hot or too early to parse."""
    return bool((raw.get("status") or {}).get("admission")) and is_true(raw, keys.COND_QUOTA_RESERVED)


def _boolean(raw: Any, path: str, default: bool) -> bool:
    if raw is None:
        return default
    if not isinstance(raw, bool):
        raise FieldError(path, f"must be true or false, got {raw!r}")
    return raw


def _pod_set(ps: Mapping[str, Any], path: str, reclaimable: Mapping[str, int]) -> PodSet:
    """`reclaimable`: status.reclaimablePods by pod set name."""
    name = f.string(ps.get("name"), f.join(path, "name"), default="main")
    template = f.mapping(ps.get("template"), f.join(path, "template"))
    spec_path = f.join(path, "template", "spec")
    pod_spec = f.mapping(template.get("spec"), spec_path)
    tolerations = tuple(f.mapping(t, f.join(spec_path, "tolerations", i), required=True)
                        for i, t in enumerate(f.sequence(pod_spec.get("tolerations"), f.join(spec_path, "tolerations"))))
    return PodSet(
        name=name,
        count=f.integer(ps.get("count"), f.join(path, "count"), default=1, minimum=0),
        requests=pod_requests(pod_spec, spec_path),
        tolerations=tolerations,
        affinity=parse_node_affinity(pod_spec, spec_path),
        reclaimable=reclaimable.get(name, 0),
    )


def _reclaimable(raw: Any, path: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for i, entry in enumerate(f.sequence(raw, path)):
        p = f.join(path, i)
        entry = f.mapping(entry, p, required=True)
        out[f.string(entry.get("name"), f.join(p, "name"))] = f.integer(entry.get("count"), f.join(p, "count"), minimum=0)
    return out


def _admission(raw: Any, path: str, pod_sets: Mapping[str, PodSet]) -> Admission | None:
    """An assignment without a count stands for its whole pod set (Kueue: ptr.Deref(psa.Count, spec count))."""
    if raw is None:
        return None
    data = f.mapping(raw, path)
    assignments = []
    pa_path = f.join(path, "podSetAssignments")
    for i, psa in enumerate(f.sequence(data.get("podSetAssignments"), pa_path)):
        p = f.join(pa_path, i)
        psa = f.mapping(psa, p, required=True)
        name = f.string(psa.get("name"), f.join(p, "name"), default="main")
        assignments.append(PodSetAssignment(
            name=name,
            flavors=f.string_map(psa.get("flavors"), f.join(p, "flavors")),
            resource_usage=f.resources(psa.get("resourceUsage"), f.join(p, "resourceUsage")),
            count=f.integer(psa.get("count"), f.join(p, "count"),
                            default=pod_sets[name].count if name in pod_sets else 0, minimum=0),
            remaining=pod_sets[name].remaining if name in pod_sets else None,
        ))
    return Admission(f.string(data.get("clusterQueue"), f.join(path, "clusterQueue")), tuple(assignments))


def _conditions(raw: Any, path: str) -> tuple[Condition, ...]:
    out = []
    for i, c in enumerate(f.sequence(raw, path)):
        p = f.join(path, i)
        c = f.mapping(c, p, required=True)
        out.append(Condition(
            type=f.string(c.get("type"), f.join(p, "type")),
            status=f.choice(c.get("status"), f.join(p, "status"), ("True", "False", "Unknown"), ""),
            reason=f.string(c.get("reason"), f.join(p, "reason"), default=""),
            message=f.string(c.get("message"), f.join(p, "message"), default=""),
            last_transition_time=f.timestamp(c.get("lastTransitionTime"), f.join(p, "lastTransitionTime")),
        ))
    return tuple(out)
