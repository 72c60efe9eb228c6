"""Core v1 Events (what `kubectl describe` and `kubectl get events` read), written by the
simulated components under their real names (default-scheduler, kubelet, job-controller...)."""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from typing import Any, Mapping

from localcluster.runtime.client import EVENTS, Api, ApiError, ignore_gone
from localcluster.sim.units import format_time

log = logging.getLogger(__name__)


def event_body(obj: Mapping[str, Any], kind_type: str, reason: str, message: str, component: str,
               now: dt.datetime, host: str = "") -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    source = {"component": component, **({"host": host} if host else {})}
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{meta.get('name', 'object')}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
        "involvedObject": {
            "apiVersion": obj.get("apiVersion", ""),
            "kind": obj.get("kind", ""),
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace", ""),
            "uid": meta.get("uid", ""),
            "resourceVersion": meta.get("resourceVersion", ""),
        },
        "reason": reason,
        "message": message[:1024],
        "type": kind_type,
        "source": source,
        "firstTimestamp": format_time(now),
        "lastTimestamp": format_time(now),
        "count": 1,
        "reportingComponent": component,
        "reportingInstance": host or component,
    }


async def record(api: Api, obj: Mapping[str, Any], kind_type: str, reason: str, message: str, component: str,
                 now: dt.datetime, host: str = "") -> None:
    """Write an Event; one the server forbids (its namespace is being terminated) is dropped, as
    client-go's recorder drops what the server rejects, so a component's own work never fails on it."""
    body = event_body(obj, kind_type, reason, message, component, now, host)
    try:
        await ignore_gone(api.create(EVENTS.path(body["metadata"]["namespace"]), body))
    except ApiError as err:
        if err.status != 403:
            raise
        log.info("server rejected event %s %s (will not retry): %s", reason, body["metadata"]["name"], err)
