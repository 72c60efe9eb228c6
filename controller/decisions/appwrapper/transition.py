"""The values one AppWrapper lifecycle step returns, and how a step becomes a `/status` patch.

A step never stamps times itself: it names the conditions it wants, and `status_patch` stamps
`lastTransitionTime = now` only on a condition whose status flips (metav1.Condition semantics).
Grace periods are measured from those stamps, so a restarted controller resumes every timer
exactly where the last one left it (DESIGN 3.3).
"""

from __future__ import annotations

import copy
import datetime as _dt
from dataclasses import dataclass
from typing import Any, Mapping, Union

from batchgate import keys
from batchgate.clock import format_time, parse_time
from controller.decisions.appwrapper.pods import PodCounts
from controller.decisions.conditions import condition

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Condition:
    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str
    message: str = ""


@dataclass(frozen=True)
class AddFinalizer:
    """Before anything is deployed, so deleting the AppWrapper always goes through our teardown."""


@dataclass(frozen=True)
class RemoveFinalizer:
    """Teardown finished: the API server may now delete the AppWrapper."""


@dataclass(frozen=True)
class CreateComponents:
    """Create these components, in order, stopping at the first error; then call `after_create`."""

    indices: tuple[int, ...]


@dataclass(frozen=True)
class DeleteComponents:
    """Delete these components with propagationPolicy Background; `forced` adds gracePeriodSeconds 0."""

    indices: tuple[int, ...]
    forced: bool = False


@dataclass(frozen=True)
class DeletePods:
    """Force-delete (gracePeriodSeconds 0) every pod labelled with this AppWrapper's name."""


@dataclass(frozen=True)
class Event:
    reason: str
    message: str
    type: str = "Normal"


Action = Union[AddFinalizer, RemoveFinalizer, CreateComponents, DeleteComponents, DeletePods]


@dataclass(frozen=True)
class Transition:
    """Where one step leaves the AppWrapper, what must happen to get there, and why."""

    phase: str
    why: str
    conditions: tuple[Condition, ...] = ()
    resetting_count: int | None = None  # None: unchanged
    component_status: tuple[Mapping[str, Any], ...] | None = None  # None: unchanged
    actions: tuple[Action, ...] = ()
    events: tuple[Event, ...] = ()
    requeue_after: _dt.timedelta | None = None


@dataclass(frozen=True)
class CreateOutcome:
    """What creating one component gave: its name (generateName resolved) or the error users see."""

    index: int
    name: str = ""
    error: str | None = None
    fatal: bool = False


# --- reading the AppWrapper -------------------------------------------------------------------

def phase_of(aw: Obj) -> str:
    return str((aw.get("status") or {}).get("phase") or keys.PHASE_EMPTY)


def resetting_count_of(aw: Obj) -> int:
    value = (aw.get("status") or {}).get("resettingCount")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def suspended(aw: Obj) -> bool:
    return bool((aw.get("spec") or {}).get("suspend"))


def has_status(aw: Obj, type_: str, status: str) -> bool:
    cond = condition(aw, type_)
    return cond is not None and cond.get("status") == status


def since(aw: Obj, type_: str, status: str, now: _dt.datetime) -> _dt.datetime:
    """When the condition took `status`; `now` if it does not hold it yet (this step sets it)."""
    cond = condition(aw, type_)
    if cond is None or cond.get("status") != status:
        return now
    try:
        return parse_time(str(cond.get("lastTransitionTime")))
    except ValueError:
        return now


def component_statuses(aw: Obj) -> list[dict[str, Any]]:
    return [dict(c) for c in (aw.get("status") or {}).get("componentStatus") or [] if isinstance(c, Mapping)]


def deployed_status(component: Mapping[str, Any]) -> str | None:
    """Status of a componentStatus entry's ResourcesDeployed condition, None if it has none."""
    cond = condition({"status": component}, keys.COND_RESOURCES_DEPLOYED)
    return None if cond is None else str(cond.get("status"))


def with_deployed(component: Mapping[str, Any], status: str, reason: str, now: _dt.datetime,
                  name: str | None = None) -> dict[str, Any]:
    """A componentStatus entry with its ResourcesDeployed condition set (and its name refreshed)."""
    out = copy.deepcopy(dict(component))
    if name:
        out["name"] = name
    conds = [c for c in out.get("conditions") or [] if c.get("type") != keys.COND_RESOURCES_DEPLOYED]
    old = condition({"status": component}, keys.COND_RESOURCES_DEPLOYED)
    stamp = old.get("lastTransitionTime") if old and old.get("status") == status else None
    conds.append({"type": keys.COND_RESOURCES_DEPLOYED, "status": status, "reason": reason, "message": "",
                  "lastTransitionTime": stamp or format_time(now)})
    out["conditions"] = conds
    return out


# --- writing the status -----------------------------------------------------------------------

def merged_conditions(aw: Obj, wanted: tuple[Condition, ...], now: _dt.datetime) -> list[dict[str, Any]]:
    """The AppWrapper's conditions with `wanted` applied (a later entry of one type wins)."""
    current = [dict(c) for c in (aw.get("status") or {}).get("conditions") or [] if isinstance(c, Mapping)]
    last = {want.type: want for want in wanted}  # only the final word on a type is compared with the stored one
    for want in last.values():
        old = next((c for c in current if c.get("type") == want.type), None)
        new = {"type": want.type, "status": want.status, "reason": want.reason, "message": want.message,
               "lastTransitionTime": format_time(now)}
        if old is not None and old.get("status") == want.status and old.get("lastTransitionTime"):
            new["lastTransitionTime"] = old["lastTransitionTime"]
        if old is None:
            current.append(new)
        else:
            current[current.index(old)] = new
    return current


def status_patch(aw: Obj, step: Transition, now: _dt.datetime) -> dict[str, Any] | None:
    """The merge patch that writes `step` onto `aw`'s status; None when nothing changes."""
    status = aw.get("status") or {}
    patch: dict[str, Any] = {}
    if step.phase != phase_of(aw):
        patch["phase"] = step.phase
    if step.resetting_count is not None and step.resetting_count != resetting_count_of(aw):
        patch["resettingCount"] = step.resetting_count
    conditions = merged_conditions(aw, step.conditions, now)
    if conditions != list(status.get("conditions") or []):
        patch["conditions"] = conditions
    if step.component_status is not None and list(step.component_status) != list(status.get("componentStatus") or []):
        patch["componentStatus"] = [dict(c) for c in step.component_status]
    return {"status": patch} if patch else None


def clear(aw: Obj, type_: str, reason: str, message: str = "") -> tuple[Condition, ...]:
    """Set a condition False only if it is True now (upstream's clearCondition)."""
    return (Condition(type_, "False", reason, message),) if has_status(aw, type_, "True") else ()


@dataclass(frozen=True)
class Teardown:
    """One step of the deletion protocol (research 3.2)."""

    done: bool
    conditions: tuple[Condition, ...] = ()
    component_status: tuple[Mapping[str, Any], ...] = ()
    actions: tuple[Action, ...] = ()
    requeue_after: _dt.timedelta | None = None


@dataclass(frozen=True)
class ComponentState:
    """A wrapped object as the API showed it this reconcile."""

    exists: bool
    deleting: bool = False
    failure: tuple[str, str] | None = None  # (reason, message) of its Failed=True condition


@dataclass(frozen=True)
class Observed:
    """What the adapter saw: each named component (by index) and the AppWrapper's labelled pods."""

    components: Mapping[int, ComponentState]
    pods: PodCounts
    failed_components: tuple[int, ...] = ()  # components owning a Failed pod (appwrapper_owners)

