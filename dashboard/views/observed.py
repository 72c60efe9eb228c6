"""What the dashboard has observed: raw objects per kind, and why a kind could not be read."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Mapping

Obj = Mapping[str, Any]

KINDS = ("Node", "Namespace", "ResourceFlavor", "WorkloadPriorityClass", "ClusterQueue", "LocalQueue", "Workload",
         "AppWrapper", "Pod", "Event")
"""Every kind the dashboard watches; one watch each, shared by all viewers."""

PANEL_KINDS: Mapping[str, tuple[str, ...]] = {
    "queues": ("ClusterQueue", "LocalQueue", "Workload", "ResourceFlavor"),
    "workloads": ("LocalQueue", "Workload"),
    "appwrappers": ("AppWrapper", "Pod", "Event"),
    "nodes": ("Node", "Pod"),
}
"""The kinds each panel reads, so a kind the viewer may not list blanks only the panels that need it."""


@dataclass(frozen=True)
class Observed:
    objects: Mapping[str, tuple[Obj, ...]]  # kind -> objects
    problems: Mapping[str, str] = field(default_factory=dict)  # kind -> why it cannot be read (e.g. forbidden)
    stale_since: _dt.datetime | None = None  # the API server stopped answering at this time
    audit_lines: tuple[str, ...] | None = None  # None: no audit log configured or readable
    audit_problem: str = ""
    fair_sharing: bool = False
    reading: tuple[str, ...] = ()  # kinds whose first list has not finished: their panels are not yet complete

    def of(self, kind: str) -> tuple[Obj, ...]:
        return self.objects.get(kind, ())

    def panel_problems(self, panel: str) -> list[str]:
        """One sentence per kind the panel needs and cannot read."""
        return [f"{kind}: {self.problems[kind]}" for kind in PANEL_KINDS.get(panel, ()) if kind in self.problems]
