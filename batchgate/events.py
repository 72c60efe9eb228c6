"""Kubernetes Events the product's components record, as core/v1 Event bodies.

One body for every reporter (the gateway's policy reloader, the certificate keeper): an Event
lives in the reporter's namespace, names its involved object (a cluster-scoped one too, whose
Event still goes in that namespace) and is named after what it reports, so replicas that see the
same thing make one Event between them (the second create is a 409).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from dataclasses import dataclass
from typing import Any, Literal

from batchgate.clock import format_time


@dataclass(frozen=True)
class Involved:
    """The object an Event is about."""

    api_version: str
    kind: str
    name: str
    namespace: str = ""
    """Empty for a cluster-scoped object."""
    uid: str | None = None
    resource_version: str | None = None


def event_body(namespace: str, involved: Involved, kind: Literal["Normal", "Warning"], reason: str, message: str,
               identity: str, now: _dt.datetime, component: str) -> dict[str, Any]:
    """The Event for `reason` on `involved`; `identity` is what makes two reports the same one."""
    digest = hashlib.sha256(f"{reason}\n{identity}".encode()).hexdigest()[:12]
    reference = {"apiVersion": involved.api_version, "kind": involved.kind, "name": involved.name}
    reference.update({k: v for k, v in (("namespace", involved.namespace), ("uid", involved.uid),
                                        ("resourceVersion", involved.resource_version)) if v})
    stamp = format_time(now)
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{involved.name}.{digest}", "namespace": namespace},
            "involvedObject": reference, "type": kind, "reason": reason, "message": message,
            "source": {"component": component}, "reportingComponent": component,
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1}
