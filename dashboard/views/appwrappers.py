"""AppWrappers: phase, conditions, resets, and the story of each one (transitions and Events)."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from batchgate import keys
from batchgate.api.appwrapper_status import read_appwrapper_state
from batchgate.clock import format_time, parse_time
from dashboard.views.observed import Obj


@dataclass(frozen=True)
class AppWrapperRow:
    namespace: str
    name: str
    phase: str
    resetting_count: int
    queue: str
    quota_reserved: str  # status of the QuotaReserved condition, "" when absent
    created: str


@dataclass(frozen=True)
class ConditionRow:
    type: str
    status: str
    reason: str
    message: str
    since: str


@dataclass(frozen=True)
class TimelineEntry:
    at: str  # RFC 3339, "" when the source gave no time
    source: str  # "condition" or "event"
    what: str  # "Unhealthy=True" or the Event's type and reason
    detail: str


@dataclass(frozen=True)
class PodRow:
    name: str
    phase: str
    node: str  # "" while unscheduled


@dataclass(frozen=True)
class ComponentRow:
    kind: str
    name: str
    deployed: str  # status of ResourcesDeployed, "" when not yet created


@dataclass(frozen=True)
class AppWrapperDetail:
    row: AppWrapperRow
    conditions: tuple[ConditionRow, ...]
    timeline: tuple[TimelineEntry, ...]
    components: tuple[ComponentRow, ...]
    pods: tuple[PodRow, ...]


def _meta(obj: Obj) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def appwrapper_row(obj: Obj) -> AppWrapperRow:
    state = read_appwrapper_state(obj)
    labels = _meta(obj).get("labels")
    queue = labels.get(keys.QUEUE_NAME_LABEL, "") if isinstance(labels, Mapping) else ""
    reserved = next((c.status for c in state.conditions if c.type == keys.COND_QUOTA_RESERVED), "")
    created = _meta(obj).get("creationTimestamp")
    return AppWrapperRow(state.namespace, state.name, state.phase or "(none yet)", state.resetting_count,
                         queue if isinstance(queue, str) else "", reserved, created if isinstance(created, str) else "")


def appwrapper_rows(objects: Iterable[Obj]) -> tuple[AppWrapperRow, ...]:
    return tuple(sorted((appwrapper_row(o) for o in objects), key=lambda r: (r.namespace, r.name)))


def appwrapper_detail(obj: Obj, pods: Iterable[Obj], events: Iterable[Obj]) -> AppWrapperDetail:
    """`pods` and `events` may be every one observed: the ones of this AppWrapper are picked here."""
    state = read_appwrapper_state(obj)
    conditions = tuple(ConditionRow(c.type, c.status, c.reason, c.message,
                                    format_time(c.last_transition_time) if c.last_transition_time else "")
                       for c in state.conditions)
    timeline = [TimelineEntry(c.since, "condition", f"{c.type}={c.status}", f"{c.reason}: {c.message}".strip(": "))
                for c in conditions]
    for e in events:
        involved = e.get("involvedObject") or e.get("regarding") or {}
        if (involved.get("kind") == "AppWrapper" and involved.get("name") == state.name
                and _meta(e).get("namespace") == state.namespace):
            timeline.append(TimelineEntry(_event_time(e), "event", f"{e.get('type', '')} {e.get('reason', '')}".strip(),
                                          str(e.get("message") or e.get("note") or "")))
    timeline.sort(key=lambda t: (_sortable(t.at), t.source))
    components = tuple(ComponentRow(c.kind, c.name, c.deployed or "") for c in state.components) or _declared(obj)
    mine = [p for p in pods if _meta(p).get("namespace") == state.namespace
            and (_meta(p).get("labels") or {}).get(keys.APPWRAPPER_LABEL) == state.name]
    pod_rows = tuple(sorted((PodRow(str(_meta(p).get("name", "")), str((p.get("status") or {}).get("phase", "")),
                                    str((p.get("spec") or {}).get("nodeName") or "")) for p in mine),
                            key=lambda r: r.name))
    return AppWrapperDetail(appwrapper_row(obj), conditions, tuple(timeline), components, pod_rows)


def _declared(obj: Obj) -> tuple[ComponentRow, ...]:
    """Before the controller records componentStatus: the components as the spec declares them."""
    out = []
    for c in (obj.get("spec") or {}).get("components") or []:
        template = c.get("template") if isinstance(c, Mapping) else None
        if isinstance(template, Mapping):
            out.append(ComponentRow(str(template.get("kind", "")), str(_meta(template).get("name", "")), ""))
    return tuple(out)


def _event_time(event: Obj) -> str:
    for key in ("lastTimestamp", "eventTime", "firstTimestamp"):
        value = event.get(key)
        if isinstance(value, str) and value:
            return value
    created = _meta(event).get("creationTimestamp")
    return created if isinstance(created, str) else ""


def _sortable(at: str) -> _dt.datetime:
    try:
        return parse_time(at)
    except (TypeError, ValueError):
        return _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)
