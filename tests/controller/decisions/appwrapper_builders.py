"""Builders for AppWrapper lifecycle tests: an AppWrapper in any phase, and what was observed.

    an_aw().running(since=0).with_condition("Unhealthy", "True", "FoundFailedPods", at=30).build()
    seen(pods=PodCounts(failed=1, present=2))

Times are seconds after T0; a condition's lastTransitionTime is what grace periods count from.
"""

from __future__ import annotations

import copy
import datetime as _dt
from dataclasses import replace
from typing import Any

from batchgate import keys
from batchgate.kinds import APPWRAPPER
from batchgate.clock import format_time
from batchgate.policy import FaultTolerance
from controller.decisions.appwrapper.pods import PodCounts
from controller.decisions.appwrapper.timing import Timing, timing_for
from controller.decisions.appwrapper.transition import ComponentState, Observed

T0 = _dt.datetime(2026, 1, 1, tzinfo=_dt.timezone.utc)
DEFAULT_TIMING = timing_for({}, FaultTolerance())


def at(seconds: float) -> _dt.datetime:
    return T0 + _dt.timedelta(seconds=seconds)


def timing(**changes: Any) -> Timing:
    """Default timing with some fields changed; durations may be given in seconds."""
    return replace(DEFAULT_TIMING, **{k: _dt.timedelta(seconds=v) if isinstance(v, (int, float)) and k != "retry_limit"
                                      else v for k, v in changes.items()})


def a_job_template(name: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"parallelism": replicas, "completions": replicas, "template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}}}


class AppWrapperBuilder:
    def __init__(self, name: str = "aw", replicas: tuple[int, ...] = (2,)) -> None:
        self.obj: dict[str, Any] = {
            "apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper",
            "metadata": {"name": name, "namespace": "team-a", "uid": f"uid-{name}", "finalizers": []},
            "spec": {"suspend": False, "components": [
                {"template": a_job_template(f"{name}-{i}", n)} for i, n in enumerate(replicas)]},
            "status": {},
        }
        self.replicas = replicas

    def in_phase(self, phase: str) -> "AppWrapperBuilder":
        self.obj["status"]["phase"] = phase
        if phase != keys.PHASE_EMPTY:
            self.obj["status"].setdefault("componentStatus", [
                {"name": f"{self.obj['metadata']['name']}-{i}", "kind": "Job", "apiVersion": "batch/v1",
                 "podSets": [{"replicas": n, "path": "template.spec.template"}]}
                for i, n in enumerate(self.replicas)])
        return self

    def suspended(self, value: bool = True) -> "AppWrapperBuilder":
        self.obj["spec"]["suspend"] = value
        return self

    def with_condition(self, type_: str, status: str, reason: str = "Test", at: float = 0,
                       message: str = "") -> "AppWrapperBuilder":
        conds = [c for c in self.obj["status"].setdefault("conditions", []) if c["type"] != type_]
        conds.append({"type": type_, "status": status, "reason": reason, "message": message,
                      "lastTransitionTime": format_time(T0 + _dt.timedelta(seconds=at))})
        self.obj["status"]["conditions"] = conds
        return self

    def with_finalizer(self) -> "AppWrapperBuilder":
        self.obj["metadata"]["finalizers"] = [keys.APPWRAPPER_FINALIZER]
        return self

    def components_deployed(self, status: str = "True", at: float = 0) -> "AppWrapperBuilder":
        for component in self.obj["status"]["componentStatus"]:
            component["conditions"] = [{"type": keys.COND_RESOURCES_DEPLOYED, "status": status, "reason": "Test",
                                        "message": "", "lastTransitionTime": format_time(T0 + _dt.timedelta(seconds=at))}]
        return self

    def deployed(self, phase: str = keys.PHASE_RUNNING, at: float = 0) -> "AppWrapperBuilder":
        """In `phase` with quota and components deployed since `at` (what Resuming leaves behind)."""
        return (self.with_finalizer().in_phase(phase).components_deployed(at=at)
                .with_condition(keys.COND_QUOTA_RESERVED, "True", keys.PHASE_RESUMING, at)
                .with_condition(keys.COND_RESOURCES_DEPLOYED, "True", keys.PHASE_RESUMING, at)
                .with_condition(keys.COND_PODS_READY, "False", keys.PHASE_RESUMING, at)
                .with_condition(keys.COND_UNHEALTHY, "False", keys.PHASE_RESUMING, at))

    def undeployed(self, phase: str, at: float = 0) -> "AppWrapperBuilder":
        """In `phase` after its components were deleted (ResourcesDeployed False)."""
        return (self.with_finalizer().in_phase(phase).components_deployed("False", at)
                .with_condition(keys.COND_QUOTA_RESERVED, "False", phase, at)
                .with_condition(keys.COND_RESOURCES_DEPLOYED, "False", phase, at))

    def resets(self, count: int) -> "AppWrapperBuilder":
        self.obj["status"]["resettingCount"] = count
        return self

    def annotated(self, key: str, value: str) -> "AppWrapperBuilder":
        self.obj["metadata"].setdefault("annotations", {})[key] = value
        return self

    def managed_by(self, controller: str) -> "AppWrapperBuilder":
        self.obj["spec"]["managedBy"] = controller
        return self

    def being_deleted(self, at: float = 0) -> "AppWrapperBuilder":
        self.obj["metadata"]["deletionTimestamp"] = format_time(T0 + _dt.timedelta(seconds=at))
        return self

    def build(self) -> dict[str, Any]:
        return copy.deepcopy(self.obj)


def an_aw(name: str = "aw", replicas: tuple[int, ...] = (2,)) -> AppWrapperBuilder:
    return AppWrapperBuilder(name, replicas)


def seen(components: int | dict[int, ComponentState] = 1, **pods: Any) -> Observed:
    """Every one of `components` components present (or the given states), and these pod counts."""
    states = components if isinstance(components, dict) else {i: ComponentState(True) for i in range(components)}
    counts = PodCounts(**pods)
    if "present" not in pods:
        counts = replace(counts, present=counts.pending + counts.running + counts.succeeded + counts.failed)
    return Observed(states, counts)


GONE = seen({0: ComponentState(False)})
