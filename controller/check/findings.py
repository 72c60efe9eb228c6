"""What the checker found, as values: a severity, a stable code, the object it is about, and why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning", "info"]
SEVERITY_ORDER: dict[str, int] = {"error": 0, "warning": 1, "info": 2}

# Codes, so scripts can match findings without parsing prose.
INVALID_OBJECT = "InvalidObject"
INVALID_CLUSTER_QUEUE = "InvalidClusterQueue"
OVER_COMMITTED = "OverCommitted"
UNQUOTED_CAPACITY = "UnquotedCapacity"
NODE_NOT_COUNTED = "NodeNotCounted"
MISSING_FLAVOR = "MissingFlavor"
STOPPED_QUEUE = "StoppedQueue"
NO_NAMESPACE_SELECTOR = "NoNamespaceSelector"
NAMESPACE_NOT_SELECTED = "NamespaceNotSelected"
MISSING_CLUSTER_QUEUE = "MissingClusterQueue"
MISSING_LOCAL_QUEUE = "MissingLocalQueue"
UNCOVERED_RESOURCE = "UncoveredResource"
NO_LOCAL_QUEUE = "NoLocalQueue"
ORPHANED_ADMISSION = "OrphanedAdmission"
EVICTION_IN_PROGRESS = "EvictionInProgress"
NO_NODES = "NoNodes"
IGNORED_OBJECTS = "IgnoredObjects"


@dataclass(frozen=True)
class Finding:
    severity: Severity
    code: str
    subject: str  # "ClusterQueue team-a", "Workload ns/wl", "resource nvidia.com/gpu"
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"severity": self.severity, "code": self.code, "subject": self.subject, "reason": self.reason}


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Errors first, then warnings, then info; stable within a severity."""
    return sorted(findings, key=lambda x: SEVERITY_ORDER[x.severity])
