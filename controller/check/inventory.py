"""The objects a check reads, parsed once; a malformed object becomes a finding, not a crash.

The same inventory is built from a live cluster (lists through the API) or from a file of
YAML documents, so everything after parsing is the same code for both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from batchgate.api.kueue import (
    ClusterQueue, FieldError, LocalQueue, ResourceFlavor, Workload, WorkloadPriorityClass,
)
from batchgate.api.kueue_fields import string_map
from batchgate.api.node import Node
from controller.check.findings import INVALID_OBJECT, Finding
from controller.state.cache import ObjectKey
from controller.state.quota_state import workload_key

KINDS = ("Node", "Namespace", "ResourceFlavor", "WorkloadPriorityClass", "ClusterQueue", "LocalQueue", "Workload")


class InventoryError(ValueError):
    """Input that is not a list of Kubernetes objects at all (as opposed to one bad object)."""


@dataclass
class Inventory:
    nodes: dict[str, Node] = field(default_factory=dict)  # by name: a repeated object replaces the earlier one
    namespaces: dict[str, Mapping[str, str]] = field(default_factory=dict)
    flavors: dict[str, ResourceFlavor] = field(default_factory=dict)
    priority_classes: dict[str, WorkloadPriorityClass] = field(default_factory=dict)
    cluster_queues: dict[str, ClusterQueue] = field(default_factory=dict)
    local_queues: dict[tuple[str, str], LocalQueue] = field(default_factory=dict)
    workloads: dict[ObjectKey, Workload] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)  # objects that could not be parsed
    ignored: dict[str, int] = field(default_factory=dict)  # kinds the check does not read -> count


def flatten(documents: Iterable[Any], where: str = "input") -> list[Mapping[str, Any]]:
    """Objects from documents that may be `List`s (kubectl get -o yaml) or empty (`---` at the end)."""
    out: list[Mapping[str, Any]] = []
    for i, doc in enumerate(documents):
        if doc is None:
            continue
        if not isinstance(doc, Mapping):
            raise InventoryError(f"{where}: document {i + 1} is not a Kubernetes object (got {type(doc).__name__})")
        kind = doc.get("kind")
        if not isinstance(kind, str) or not kind:
            raise InventoryError(f"{where}: document {i + 1} has no kind")
        if kind.endswith("List") and isinstance(doc.get("items"), list):
            out.extend(flatten(doc["items"], f"{where}: document {i + 1} ({kind})"))
        else:
            out.append(doc)
    return out


def build_inventory(objects: Iterable[Mapping[str, Any]]) -> Inventory:
    """Parse every object of the kinds a check reads; each bad one becomes an InvalidObject error."""
    inv = Inventory()
    for raw in objects:
        kind = str(raw.get("kind"))
        if kind not in KINDS:
            inv.ignored[kind] = inv.ignored.get(kind, 0) + 1
            continue
        try:
            _add(inv, kind, raw)
        except FieldError as exc:
            inv.findings.append(Finding("error", INVALID_OBJECT, f"{kind} {_label(raw)}", str(exc)))
    # A Workload's namespace that no Namespace object declares exists, unlabelled (as in simulate).
    for wl in inv.workloads.values():
        inv.namespaces.setdefault(wl.namespace, {})
    for ns, _ in inv.local_queues:
        inv.namespaces.setdefault(ns, {})
    return inv


def _add(inv: Inventory, kind: str, raw: Mapping[str, Any]) -> None:
    if kind == "Node":
        n = Node.from_dict(raw)
        inv.nodes[n.name] = n
    elif kind == "Namespace":
        meta = raw.get("metadata")
        if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str) or not meta["name"]:
            raise FieldError("metadata.name", "is required")
        inv.namespaces[meta["name"]] = string_map(meta.get("labels"), "metadata.labels")
    elif kind == "ResourceFlavor":
        rf = ResourceFlavor.from_dict(raw)
        inv.flavors[rf.name] = rf
    elif kind == "WorkloadPriorityClass":
        wpc = WorkloadPriorityClass.from_dict(raw)
        inv.priority_classes[wpc.name] = wpc
    elif kind == "ClusterQueue":
        cq = ClusterQueue.from_dict(raw)
        inv.cluster_queues[cq.name] = cq
    elif kind == "LocalQueue":
        lq = LocalQueue.from_dict(raw)
        inv.local_queues[(lq.namespace, lq.name)] = lq
    else:
        wl = Workload.from_dict(raw)
        inv.workloads[workload_key(wl.namespace, wl.name)] = wl


def _label(raw: Mapping[str, Any]) -> str:
    meta = raw.get("metadata")
    if not isinstance(meta, Mapping):
        return "(no metadata)"
    name = meta.get("name")
    namespace = meta.get("namespace")
    name = name if isinstance(name, str) and name else "(no name)"
    return f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name
