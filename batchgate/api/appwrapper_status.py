"""An AppWrapper as its lifecycle reads it: identity, the spec's switches, and a typed status.

Parsed once per reconcile by the adapter (`read_appwrapper_state`), so the phase functions read
fields instead of walking wire dicts. Reading is tolerant: the status is written by controllers,
and a malformed entry is treated as absent rather than stopping the reconcile. The spec itself
stays in `wire`: components are built from it, and `batchgate.api.appwrapper` parses it where
needed (the gateway validated it on the way in).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Mapping

from batchgate import keys
from batchgate.api import conditions as cond
from batchgate.api.appwrapper import DeclaredPodSet
from batchgate.api.conditions import Condition
from batchgate.api.objects import as_list, as_mapping

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True)
class ComponentStatus:
    """One entry of `status.componentStatus`: what was created for a component, and its podSets."""

    name: str
    kind: str
    api_version: str
    pod_sets: tuple[DeclaredPodSet, ...] = ()
    conditions: tuple[Condition, ...] = ()

    @property
    def deployed(self) -> str | None:
        """Status of its ResourcesDeployed condition, None if it has none."""
        found = cond.find(self.conditions, keys.COND_RESOURCES_DEPLOYED)
        return None if found is None else found.status

    @property
    def expected_pods(self) -> int:
        return sum(p.count for p in self.pod_sets)

    def with_deployed(self, status: str, reason: str, now: _dt.datetime, name: str | None = None) -> ComponentStatus:
        """This entry with ResourcesDeployed set (moved last, as upstream rewrites it) and its name refreshed."""
        others = tuple(c for c in self.conditions if c.type != keys.COND_RESOURCES_DEPLOYED)
        stamped = cond.merge(self.conditions, (Condition(keys.COND_RESOURCES_DEPLOYED, status, reason),), now)
        deployed = cond.find(stamped, keys.COND_RESOURCES_DEPLOYED)
        assert deployed is not None
        return replace(self, name=name or self.name, conditions=others + (deployed,))

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "apiVersion": self.api_version,
                               "podSets": [_pod_set_wire(p) for p in self.pod_sets]}
        if self.conditions:
            out["conditions"] = [c.to_wire() for c in self.conditions]
        return out


@dataclass(frozen=True)
class AppWrapperState:
    name: str
    namespace: str
    uid: str = ""
    suspend: bool = False
    managed_by: str | None = None
    deleting: bool = False
    finalizers: tuple[str, ...] = ()
    annotations: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    phase: str = keys.PHASE_EMPTY
    resetting_count: int = 0
    conditions: tuple[Condition, ...] = ()
    components: tuple[ComponentStatus, ...] = ()
    wire: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False, repr=False)

    @property
    def finalized(self) -> bool:
        """Whether our finalizer is on it, so its deletion goes through our teardown."""
        return keys.APPWRAPPER_FINALIZER in self.finalizers

    def holds(self, type_: str, status: str) -> bool:
        return cond.holds(self.conditions, type_, status)

    def since(self, type_: str, status: str, now: _dt.datetime) -> _dt.datetime:
        """When the condition took `status`; `now` if it does not hold it (this step sets it)."""
        found = cond.find(self.conditions, type_)
        if found is None or found.status != status or found.last_transition_time is None:
            return now
        return found.last_transition_time

    def component_name(self, index: int) -> str:
        return self.components[index].name if 0 <= index < len(self.components) else ""

    @property
    def expected_pods(self) -> int:
        """Sum of podSet replicas over the recorded components (a podSet without replicas is one pod)."""
        return sum(c.expected_pods for c in self.components)


def read_appwrapper_state(obj: Mapping[str, Any]) -> AppWrapperState:
    meta = as_mapping(obj.get("metadata"))
    spec = as_mapping(obj.get("spec"))
    status = as_mapping(obj.get("status"))
    count = status.get("resettingCount")
    managed_by = spec.get("managedBy")
    return AppWrapperState(
        name=_text(meta.get("name")),
        namespace=_text(meta.get("namespace")),
        uid=_text(meta.get("uid")),
        suspend=bool(spec.get("suspend")),
        managed_by=managed_by if isinstance(managed_by, str) else None,
        deleting=bool(meta.get("deletionTimestamp")),
        finalizers=tuple(f for f in as_list(meta.get("finalizers")) if isinstance(f, str)),
        annotations={k: v for k, v in as_mapping(meta.get("annotations")).items() if isinstance(v, str)},
        phase=_text(status.get("phase")) or keys.PHASE_EMPTY,
        resetting_count=count if isinstance(count, int) and not isinstance(count, bool) else 0,
        conditions=cond.read_conditions(status.get("conditions")),
        components=tuple(_component(c) for c in as_list(status.get("componentStatus")) if isinstance(c, Mapping)),
        wire=obj,
    )


def _component(raw: Mapping[str, Any]) -> ComponentStatus:
    return ComponentStatus(
        name=_text(raw.get("name")), kind=_text(raw.get("kind")), api_version=_text(raw.get("apiVersion")),
        pod_sets=tuple(_pod_set(p) for p in as_list(raw.get("podSets")) if isinstance(p, Mapping)),
        conditions=cond.read_conditions(raw.get("conditions")),
    )


def _pod_set(raw: Mapping[str, Any]) -> DeclaredPodSet:
    replicas = raw.get("replicas")
    annotations = as_mapping(raw.get("annotations"))
    return DeclaredPodSet(
        path=_text(raw.get("path")),
        replicas=replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else None,
        annotations=MappingProxyType({k: v for k, v in annotations.items() if isinstance(v, str)}),
    )


def _pod_set_wire(pod_set: DeclaredPodSet) -> dict[str, Any]:
    out: dict[str, Any] = {"path": pod_set.path}
    if pod_set.replicas is not None:
        out["replicas"] = pod_set.replicas
    if pod_set.annotations:
        out["annotations"] = dict(pod_set.annotations)
    return out


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
