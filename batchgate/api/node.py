"""Nodes as the cluster checker sees them: labels, cordon, readiness, taints and allocatable.

Parsed once from the wire dict with field-path errors, like the Kueue models beside it, so a
malformed Node becomes one finding instead of a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Mapping

from batchgate.api import kueue_fields as f
from batchgate.api.kueue import Taint

__all__ = ["Node", "tolerates"]

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@dataclass(frozen=True)
class Node:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    unschedulable: bool = False
    ready: bool = True
    taints: tuple[Taint, ...] = ()
    allocatable: Mapping[str, Decimal] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> "Node":
        meta = f.mapping(raw.get("metadata"), "metadata", required=True)
        name = f.string(meta.get("name"), "metadata.name")
        if not name:
            raise f.FieldError("metadata.name", "must not be empty")
        spec = f.mapping(raw.get("spec"), "spec")
        status = f.mapping(raw.get("status"), "status")
        unschedulable = spec.get("unschedulable", False)
        if not isinstance(unschedulable, bool):
            raise f.FieldError("spec.unschedulable", f"must be true or false, got {unschedulable!r}")
        taints = []
        for i, t in enumerate(f.sequence(spec.get("taints"), "spec.taints")):
            p = f"spec.taints[{i}]"
            t = f.mapping(t, p, required=True)
            taints.append(Taint(f.string(t.get("key"), f"{p}.key"), f.string(t.get("value"), f"{p}.value", default=""),
                                f.choice(t.get("effect"), f"{p}.effect", TAINT_EFFECTS, "")))
        ready = False  # a node that never reported Ready is not counted, as the scheduler would not use it
        for i, c in enumerate(f.sequence(status.get("conditions"), "status.conditions")):
            c = f.mapping(c, f"status.conditions[{i}]", required=True)
            if c.get("type") == "Ready":
                ready = c.get("status") == "True"
        return cls(name, f.string_map(meta.get("labels"), "metadata.labels"), unschedulable, ready, tuple(taints),
                   f.resources(status.get("allocatable"), "status.allocatable"))


def tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    """Kubernetes' ToleratesTaint: an empty key with Exists tolerates every taint."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.effect:
        return False
    key = toleration.get("key") or ""
    if key and key != taint.key:
        return False
    if (toleration.get("operator") or "Equal") == "Exists":
        return True
    return bool(key) and (toleration.get("value") or "") == taint.value
