"""The `meta.k8s.io/v1` Table form kubectl asks for, with the columns a real cluster prints.

Column sets follow kubernetes' printers for the built-in kinds users look at most; custom
resources use their CRD's additionalPrinterColumns (JSONPath subset) and every other kind
falls back to NAME / CREATED AT like the server's default convertor.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Callable
from typing import Any

from localcluster.clock import parse_time
from localcluster.resources import ResourceType

Column = tuple[str, str, int]  # name, type, priority (1 = only with -o wide)
Row = Callable[[dict[str, Any], _dt.datetime], list[Any]]


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration."""
    if seconds < -1:
        return "<invalid>"
    s = max(int(seconds), 0)
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if h < 24 * 8:
        return f"{h // 24}d{h % 24}h" if h % 24 else f"{h // 24}d"
    if h < 24 * 365 * 2:
        return f"{h // 24}d"
    if h < 24 * 365 * 8:
        days = (h // 24) % 365
        return f"{h // 24 // 365}y{days}d" if days else f"{h // 24 // 365}y"
    return f"{h // 24 // 365}y"


def age(timestamp: Any, now: _dt.datetime) -> str:
    if not timestamp:
        return "<unknown>"
    try:
        return human_duration((now - parse_time(str(timestamp))).total_seconds())
    except ValueError:
        return "<unknown>"


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _pod_row(pod: dict[str, Any], now: _dt.datetime) -> list[Any]:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    total = len(spec.get("containers") or [])
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    reason = status.get("reason") or status.get("phase") or "Unknown"
    for c in statuses:
        state = c.get("state") or {}
        if state.get("waiting", {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif state.get("terminated"):
            term = state["terminated"]
            reason = term.get("reason") or (f"ExitCode:{term.get('exitCode')}" if term.get("exitCode") is not None else reason)
    if _meta(pod).get("deletionTimestamp"):
        reason = "Terminating"
    gates = spec.get("readinessGates") or []
    return [_meta(pod).get("name"), f"{ready}/{total}", reason, str(restarts), age(_meta(pod).get("creationTimestamp"), now),
            status.get("podIP") or "<none>", spec.get("nodeName") or "<none>",
            status.get("nominatedNodeName") or "<none>", f"{len(gates)}" if gates else "<none>"]


def _node_row(node: dict[str, Any], now: _dt.datetime) -> list[Any]:
    conditions = {c.get("type"): c.get("status") for c in (node.get("status") or {}).get("conditions") or []}
    state = "Ready" if conditions.get("Ready") == "True" else "NotReady" if "Ready" in conditions else "Unknown"
    if (node.get("spec") or {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    labels = _meta(node).get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/")) or ["<none>"]
    info = (node.get("status") or {}).get("nodeInfo") or {}
    addresses = {a.get("type"): a.get("address") for a in (node.get("status") or {}).get("addresses") or []}
    return [_meta(node).get("name"), state, ",".join(roles), age(_meta(node).get("creationTimestamp"), now),
            info.get("kubeletVersion", ""), addresses.get("InternalIP", "<none>"), addresses.get("ExternalIP", "<none>"),
            info.get("osImage", "<unknown>"), info.get("kernelVersion", "<unknown>"), info.get("containerRuntimeVersion", "<unknown>")]


def _containers_images(template: dict[str, Any]) -> tuple[str, str]:
    containers = ((template or {}).get("spec") or {}).get("containers") or []
    return ",".join(str(c.get("name", "")) for c in containers), ",".join(str(c.get("image", "")) for c in containers)


def _selector_text(selector: dict[str, Any] | None) -> str:
    if not selector:
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        parts.append(f"{expr.get('key')} {str(expr.get('operator', '')).lower()} ({','.join(expr.get('values') or [])})")
    return ",".join(parts) or "<none>"


def _job_row(job: dict[str, Any], now: _dt.datetime) -> list[Any]:
    spec, status = job.get("spec") or {}, job.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    if conditions.get("Complete") == "True":
        state = "Complete"
    elif conditions.get("Failed") == "True":
        state = "Failed"
    elif conditions.get("FailureTarget") == "True":
        state = "FailureTarget"
    elif conditions.get("SuccessCriteriaMet") == "True":
        state = "SuccessCriteriaMet"
    elif conditions.get("Suspended") == "True" or spec.get("suspend"):
        state = "Suspended"
    else:
        state = "Running"
    completions = spec.get("completions")
    done = f"{status.get('succeeded', 0)}/{completions}" if completions is not None else f"{status.get('succeeded', 0)}/1 of {spec.get('parallelism', 1)}"
    duration = ""
    if status.get("startTime"):
        end = parse_time(status["completionTime"]) if status.get("completionTime") else now
        duration = human_duration((end - parse_time(status["startTime"])).total_seconds())
    names, images = _containers_images(spec.get("template") or {})
    return [_meta(job).get("name"), state, done, duration, age(_meta(job).get("creationTimestamp"), now),
            names, images, _selector_text(spec.get("selector"))]


def _deployment_row(obj: dict[str, Any], now: _dt.datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    names, images = _containers_images(spec.get("template") or {})
    return [_meta(obj).get("name"), f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}",
            status.get("updatedReplicas", 0), status.get("availableReplicas", 0),
            age(_meta(obj).get("creationTimestamp"), now), names, images, _selector_text(spec.get("selector"))]


def _service_row(svc: dict[str, Any], now: _dt.datetime) -> list[Any]:
    spec = svc.get("spec") or {}
    ports = ",".join(f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in spec.get("ports") or []) or "<none>"
    selector = ",".join(f"{k}={v}" for k, v in sorted((spec.get("selector") or {}).items())) or "<none>"
    return [_meta(svc).get("name"), spec.get("type", "ClusterIP"), spec.get("clusterIP", "<none>"), "<none>", ports,
            age(_meta(svc).get("creationTimestamp"), now), selector]


def _event_row(ev: dict[str, Any], now: _dt.datetime) -> list[Any]:
    involved = ev.get("involvedObject") or ev.get("regarding") or {}
    last = ev.get("lastTimestamp") or ev.get("eventTime") or _meta(ev).get("creationTimestamp")
    first = ev.get("firstTimestamp") or ev.get("eventTime") or _meta(ev).get("creationTimestamp")
    source = (ev.get("source") or {}).get("component") or ev.get("reportingComponent") or ev.get("reportingController") or ""
    obj = f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"
    return [age(last, now), ev.get("type", ""), ev.get("reason", ""), obj, involved.get("fieldPath", ""), source,
            ev.get("message") or ev.get("note") or "", age(first, now), ev.get("count", 1), _meta(ev).get("name")]


NAME: Column = ("Name", "string", 0)
AGE: Column = ("Age", "string", 0)

BUILTIN_TABLES: dict[tuple[str, str], tuple[tuple[Column, ...], Row]] = {
    ("", "pods"): ((NAME, ("Ready", "string", 0), ("Status", "string", 0), ("Restarts", "string", 0), AGE,
                    ("IP", "string", 1), ("Node", "string", 1), ("Nominated Node", "string", 1),
                    ("Readiness Gates", "string", 1)), _pod_row),
    ("", "nodes"): ((NAME, ("Status", "string", 0), ("Roles", "string", 0), AGE, ("Version", "string", 0),
                     ("Internal-IP", "string", 1), ("External-IP", "string", 1), ("OS-Image", "string", 1),
                     ("Kernel-Version", "string", 1), ("Container-Runtime", "string", 1)), _node_row),
    ("batch", "jobs"): ((NAME, ("Status", "string", 0), ("Completions", "string", 0), ("Duration", "string", 0), AGE,
                         ("Containers", "string", 1), ("Images", "string", 1), ("Selector", "string", 1)), _job_row),
    ("apps", "deployments"): ((NAME, ("Ready", "string", 0), ("Up-to-date", "integer", 0), ("Available", "integer", 0),
                               AGE, ("Containers", "string", 1), ("Images", "string", 1), ("Selector", "string", 1)),
                              _deployment_row),
    ("", "namespaces"): ((NAME, ("Status", "string", 0), AGE),
                         lambda o, now: [_meta(o).get("name"), (o.get("status") or {}).get("phase", ""),
                                         age(_meta(o).get("creationTimestamp"), now)]),
    ("", "configmaps"): ((NAME, ("Data", "integer", 0), AGE),
                         lambda o, now: [_meta(o).get("name"), len(o.get("data") or {}) + len(o.get("binaryData") or {}),
                                         age(_meta(o).get("creationTimestamp"), now)]),
    ("", "secrets"): ((NAME, ("Type", "string", 0), ("Data", "integer", 0), AGE),
                      lambda o, now: [_meta(o).get("name"), o.get("type", "Opaque"), len(o.get("data") or {}),
                                      age(_meta(o).get("creationTimestamp"), now)]),
    ("", "services"): ((NAME, ("Type", "string", 0), ("Cluster-IP", "string", 0), ("External-IP", "string", 0),
                        ("Port(s)", "string", 0), AGE, ("Selector", "string", 1)), _service_row),
    ("", "events"): ((("Last Seen", "string", 0), ("Type", "string", 0), ("Reason", "string", 0), ("Object", "string", 0),
                      ("Subobject", "string", 1), ("Source", "string", 1), ("Message", "string", 0),
                      ("First Seen", "string", 1), ("Count", "string", 1), ("Name", "string", 1)), _event_row),
    ("events.k8s.io", "events"): ((("Last Seen", "string", 0), ("Type", "string", 0), ("Reason", "string", 0),
                                   ("Object", "string", 0), ("Subobject", "string", 1), ("Source", "string", 1),
                                   ("Message", "string", 0), ("First Seen", "string", 1), ("Count", "string", 1),
                                   ("Name", "string", 1)), _event_row),
    ("coordination.k8s.io", "leases"): ((NAME, ("Holder", "string", 0), AGE),
                                        lambda o, now: [_meta(o).get("name"), (o.get("spec") or {}).get("holderIdentity", ""),
                                                        age(_meta(o).get("creationTimestamp"), now)]),
    ("apiextensions.k8s.io", "customresourcedefinitions"): ((NAME, ("Created At", "date", 0)),
                                                            lambda o, now: [_meta(o).get("name"), _meta(o).get("creationTimestamp")]),
}

# JSONPath subset of CRD printer columns: .a.b, [n], [*], [?(@.k=="v")]
_STEP = re.compile(r"\.([A-Za-z0-9_\-]+)|\[(\d+|\*)\]|\[\?\(@\.([A-Za-z0-9_.\-]+)\s*==\s*[\"']([^\"']*)[\"']\)\]")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def json_path(obj: Any, path: str) -> list[Any]:
    values, pos = [obj], 0
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    while pos < len(path):
        match = _STEP.match(path, pos)
        if match is None:
            return []
        pos = match.end()
        field_name, index, filter_key, filter_value = match.groups()
        nxt: list[Any] = []
        for value in values:
            if field_name is not None and isinstance(value, dict) and field_name in value:
                nxt.append(value[field_name])
            elif index is not None and isinstance(value, list):
                if index == "*":
                    nxt.extend(value)
                elif int(index) < len(value):
                    nxt.append(value[int(index)])
            elif filter_key is not None and isinstance(value, list):
                for item in value:
                    got = json_path(item, "." + filter_key)
                    if got and _text(got[0]) == filter_value:
                        nxt.append(item)
        values = nxt
    return values


def _custom_cell(obj: dict[str, Any], column: dict[str, Any], now: _dt.datetime) -> Any:
    found = json_path(obj, str(column.get("jsonPath", "")))
    if not found:
        return None
    value = found[0]
    if column.get("type") == "date":
        return age(value, now)
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return value


def columns_and_row(rt: ResourceType) -> tuple[tuple[Column, ...], Row]:
    if not rt.builtin:
        custom = list(rt.printer_columns) or [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
        columns = (NAME,) + tuple((str(c.get("name")), "string" if c.get("type") == "date" else str(c.get("type", "string")),
                                   int(c.get("priority", 0))) for c in custom)
        return columns, lambda o, now: [_meta(o).get("name")] + [_custom_cell(o, c, now) for c in custom]
    found = BUILTIN_TABLES.get(rt.group_resource)
    if found is not None:
        return found
    return (NAME, ("Created At", "date", 0)), lambda o, now: [_meta(o).get("name"), _meta(o).get("creationTimestamp")]


def _cells(row: Row, obj: dict[str, Any], now: _dt.datetime, width: int) -> list[Any]:
    """A row's cells; a status a typed server could never hold (written through /status as
    arbitrary JSON) prints as <invalid> rather than failing the whole list."""
    try:
        return row(obj, now)
    except (AttributeError, TypeError, ValueError, KeyError):
        return [_meta(obj).get("name")] + ["<invalid>"] * (width - 1)


def partial_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata") or {}}


def table(rt: ResourceType, objects: list[dict[str, Any]], now: _dt.datetime, resource_version: str,
          include: str = "Metadata", headers: bool = True) -> dict[str, Any]:
    columns, row = columns_and_row(rt)
    out: dict[str, Any] = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": resource_version}}
    if headers:
        out["columnDefinitions"] = [{"name": name, "type": kind, "format": "name" if name == "Name" and i == 0 else "",
                                     "description": name, "priority": priority}
                                    for i, (name, kind, priority) in enumerate(columns)]
    rows = []
    for obj in objects:
        entry: dict[str, Any] = {"cells": _cells(row, obj, now, len(columns))}
        if include == "Object":
            entry["object"] = obj
        elif include != "None":
            entry["object"] = partial_metadata(obj)
        rows.append(entry)
    out["rows"] = rows
    return out
