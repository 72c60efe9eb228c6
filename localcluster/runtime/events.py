"""Core v1 Events (what `kubectl describe` and `kubectl get events` read), written by the
simulated components under their real names (default-scheduler, kubelet, job-controller...)."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import uuid
from typing import Any, Mapping

import aiohttp

from localcluster.runtime.client import EVENTS, Api, ApiError
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
    """Best effort, as client-go's recorder: an Event that cannot be written is dropped, never
    failing (and so repeating) the work it tells of."""
    body = event_body(obj, kind_type, reason, message, component, now, host)
    try:
        await api.create(EVENTS.path(body["metadata"]["namespace"]), body)
    except (ApiError, aiohttp.ClientError, asyncio.TimeoutError) as err:
        log.debug("event %s for %s dropped: %s", reason, (obj.get("metadata") or {}).get("name"), err)
