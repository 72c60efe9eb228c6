"""Status conditions, owner references, Events and the pod states the workload controllers read."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from localcluster.sim.units import format_time

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Event:
    """An Event a reconcile step asks its controller to record on the object."""

    type: str
    reason: str
    message: str


def find(conditions: Sequence[Obj] | None, kind: str) -> Obj | None:
    return next((c for c in conditions or [] if c.get("type") == kind), None)


def is_true(conditions: Sequence[Obj] | None, kind: str) -> bool:
    found = find(conditions, kind)
    return bool(found and found.get("status") == "True")


def deleting(obj: Obj) -> bool:
    """Its deletion has begun (a deletionTimestamp is set)."""
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def ended(pod: Obj) -> bool:
    """The pod has reached a terminal phase (Succeeded or Failed)."""
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def pod_ready(pod: Obj) -> bool:
    """Its Ready condition is True."""
    return is_true((pod.get("status") or {}).get("conditions"), "Ready")


def running_and_ready(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and pod_ready(pod)


def set_condition(
    conditions: Sequence[Obj] | None,
    kind: str,
    status: bool,
    reason: str,
    message: str,
    now: dt.datetime,
    *,
    probe: bool = False,
) -> list[dict[str, Any]]:
    """A new list with `kind` set; lastTransitionTime moves only when the status flips."""
    value = "True" if status else "False"
    out: list[dict[str, Any]] = []
    replaced = False
    for cond in conditions or []:
        if cond.get("type") != kind:
            out.append(dict(cond))
            continue
        replaced = True
        updated = {**cond, "status": value, "reason": reason, "message": message}
        if cond.get("status") != value:
            updated["lastTransitionTime"] = format_time(now)
        if probe:
            updated["lastProbeTime"] = format_time(now)
        out.append(updated)
    if not replaced:
        new: dict[str, Any] = {"type": kind, "status": value, "reason": reason, "message": message,
                               "lastTransitionTime": format_time(now)}
        if probe:
            new["lastProbeTime"] = format_time(now)
        out.append(new)
    return out


def controller_ref(owner: Obj) -> dict[str, Any]:
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controlled_by(obj: Obj, owner_uid: str) -> bool:
    return any(
        ref.get("controller") and ref.get("uid") == owner_uid
        for ref in (obj.get("metadata") or {}).get("ownerReferences") or []
    )
