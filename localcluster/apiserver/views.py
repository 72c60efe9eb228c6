"""Where a resource is stored and how a stored object looks through each served version.

Two cases differ from "store as sent": the versions of one CRD share storage and differ only
in apiVersion (conversion strategy None), and events.k8s.io/v1 Events are the core v1 Events
seen through renamed fields, so `kubectl describe` sees what a controller records either way.
"""

from __future__ import annotations

from typing import Any

from localcluster.resources import ResourceType

CORE_EVENTS = ("", "events")
NEW_EVENTS = ("events.k8s.io", "events")

# events.k8s.io/v1 field -> core v1 field
_EVENT_RENAMES = {
    "regarding": "involvedObject",
    "note": "message",
    "deprecatedCount": "count",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedSource": "source",
}
_EVENT_SHARED = ("metadata", "eventTime", "series", "related", "action", "reason", "type", "reportingInstance")


def storage_key(rt: ResourceType) -> tuple[str, str]:
    if rt.group_resource == NEW_EVENTS:
        return CORE_EVENTS
    return rt.group_resource


def is_plain(rt: ResourceType) -> bool:
    """Stored bytes can be served as they are (no conversion needed for this version)."""
    return rt.group_resource != NEW_EVENTS and (rt.builtin or rt.version == rt.storage_version)


def to_storage(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    if rt.group_resource == NEW_EVENTS:
        core: dict[str, Any] = {"apiVersion": "v1", "kind": "Event"}
        for key in _EVENT_SHARED:
            if key in obj:
                core[key] = obj[key]
        for new, old in _EVENT_RENAMES.items():
            if new in obj:
                core[old] = obj[new]
        if obj.get("reportingController"):
            core["reportingComponent"] = obj["reportingController"]
            core.setdefault("source", {"component": obj["reportingController"]})
        return core
    if not rt.builtin and rt.storage_version and rt.version != rt.storage_version:
        obj = dict(obj)
        obj["apiVersion"] = f"{rt.group}/{rt.storage_version}"
    return obj


def from_storage(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    if rt.group_resource == NEW_EVENTS:
        out: dict[str, Any] = {"apiVersion": "events.k8s.io/v1", "kind": "Event"}
        for key in _EVENT_SHARED:
            if key in obj:
                out[key] = obj[key]
        for new, old in _EVENT_RENAMES.items():
            if old in obj:
                out[new] = obj[old]
        controller = obj.get("reportingComponent") or (obj.get("source") or {}).get("component")
        if controller:
            out["reportingController"] = controller
        if "eventTime" not in out:
            out["eventTime"] = None
        return out
    if not rt.builtin and obj.get("apiVersion") != rt.api_version:
        obj = dict(obj)
        obj["apiVersion"] = rt.api_version
    return obj
