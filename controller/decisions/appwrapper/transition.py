"""The values one AppWrapper lifecycle step returns, and how a step becomes a `/status` patch.

A step never stamps times itself: it names the conditions it wants, and `status_patch` stamps
`lastTransitionTime = now` only on a condition whose status flips (metav1.Condition semantics).
Grace periods are measured from those stamps, so a restarted controller resumes every timer
exactly where the last one left it (docs/architecture.md, "Habits").
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Mapping, Union

from batchgate.api import conditions as cond
from batchgate.api.appwrapper_status import AppWrapperState, ComponentStatus
from batchgate.api.conditions import Condition
from controller.decisions.appwrapper.pods import PodCounts

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
    component_status: tuple[ComponentStatus, ...] | None = None  # None: unchanged
    actions: tuple[Action, ...] = ()
    events: tuple[Event, ...] = ()
    requeue_after: _dt.timedelta | None = None


@dataclass(frozen=True)
class CreateOutcome:
    """What creating one component gave: its name (generateName resolved) or the error users see.

    `forbidden`: the API server refused the controller itself (403), which no retry mends.
    """

    index: int
    name: str = ""
    error: str | None = None
    fatal: bool = False
    forbidden: bool = False


# --- writing the status -----------------------------------------------------------------------

def status_patch(aw: AppWrapperState, step: Transition, now: _dt.datetime) -> dict[str, object] | None:
    """The merge patch that writes `step` onto `aw`'s status; None when nothing changes."""
    patch: dict[str, object] = {}
    if step.phase != aw.phase:
        patch["phase"] = step.phase
    if step.resetting_count is not None and step.resetting_count != aw.resetting_count:
        patch["resettingCount"] = step.resetting_count
    conditions = cond.merge(aw.conditions, step.conditions, now)
    if conditions != aw.conditions:
        patch["conditions"] = [c.to_wire() for c in conditions]
    if step.component_status is not None and step.component_status != aw.components:
        patch["componentStatus"] = [c.to_wire() for c in step.component_status]
    return {"status": patch} if patch else None


def clear(aw: AppWrapperState, type_: str, reason: str, message: str = "") -> tuple[Condition, ...]:
    """Set a condition False only if it is True now (upstream's clearCondition)."""
    return (Condition(type_, "False", reason, message),) if aw.holds(type_, "True") else ()


@dataclass(frozen=True)
class Teardown:
    """One step of the deletion protocol (docs/appwrapper.md, "Deletion")."""

    done: bool
    conditions: tuple[Condition, ...] = ()
    component_status: tuple[ComponentStatus, ...] = ()
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

