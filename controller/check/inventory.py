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


Parsed = Any  # a Node, ResourceFlavor, ... model; a Namespace as (name, labels)


class ParseMemo:
    """Parsed objects by identity, for a caller that rebuilds the inventory from mostly the same
    objects (the dashboard after each change batch): only objects not seen last time are parsed."""

    def __init__(self) -> None:
        self._last: dict[int, tuple[Mapping[str, Any], Parsed | FieldError]] = {}
        self._now: dict[int, tuple[Mapping[str, Any], Parsed | FieldError]] = {}

    def parse(self, kind: str, raw: Mapping[str, Any]) -> Parsed:
        hit = self._now.get(id(raw)) or self._last.get(id(raw))
        if hit is None or hit[0] is not raw:  # the raw object is kept, so its id is not reused meanwhile
            try:
                hit = (raw, parse(kind, raw))
            except FieldError as exc:
                hit = (raw, exc)
        self._now[id(raw)] = hit
        if isinstance(hit[1], FieldError):
            raise hit[1]
        return hit[1]

    def forget_unseen(self) -> None:
        """Drop what the last build did not read (objects deleted or replaced)."""
        self._last, self._now = self._now, {}


def build_inventory(objects: Iterable[Mapping[str, Any]]) -> Inventory:
    """Parse every object of the kinds a check reads; each bad one becomes an InvalidObject error."""
    return inventory_of((str(raw.get("kind")), raw) for raw in objects)


def inventory_of(objects: Iterable[tuple[str, Mapping[str, Any]]], memo: ParseMemo | None = None) -> Inventory:
    """`build_inventory` over (kind, object) pairs: watched objects carry no kind of their own."""
    inv = Inventory()
    read = memo.parse if memo is not None else parse
    for kind, raw in objects:
        if kind not in KINDS:
            inv.ignored[kind] = inv.ignored.get(kind, 0) + 1
            continue
        try:
            _add(inv, kind, read(kind, raw))
        except FieldError as exc:
            inv.findings.append(Finding("error", INVALID_OBJECT, f"{kind} {_label(raw)}", str(exc)))
    if memo is not None:
        memo.forget_unseen()
    # A Workload's namespace that no Namespace object declares exists, unlabelled (as in simulate).
    for wl in inv.workloads.values():
        inv.namespaces.setdefault(wl.namespace, {})
    for ns, _ in inv.local_queues:
        inv.namespaces.setdefault(ns, {})
    return inv


def parse(kind: str, raw: Mapping[str, Any]) -> Parsed:
    """One object of a kind the check reads, as its model; raises FieldError naming the bad field."""
    if kind == "Node":
        return Node.from_dict(raw)
    if kind == "Namespace":
        meta = raw.get("metadata")
        if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str) or not meta["name"]:
            raise FieldError("metadata.name", "is required")
        return meta["name"], string_map(meta.get("labels"), "metadata.labels")
    if kind == "ResourceFlavor":
        return ResourceFlavor.from_dict(raw)
    if kind == "WorkloadPriorityClass":
        return WorkloadPriorityClass.from_dict(raw)
    if kind == "ClusterQueue":
        return ClusterQueue.from_dict(raw)
    if kind == "LocalQueue":
        return LocalQueue.from_dict(raw)
    return Workload.from_dict(raw)


def _add(inv: Inventory, kind: str, parsed: Parsed) -> None:
    if kind == "Node":
        inv.nodes[parsed.name] = parsed
    elif kind == "Namespace":
        inv.namespaces[parsed[0]] = parsed[1]
    elif kind == "ResourceFlavor":
        inv.flavors[parsed.name] = parsed
    elif kind == "WorkloadPriorityClass":
        inv.priority_classes[parsed.name] = parsed
    elif kind == "ClusterQueue":
        inv.cluster_queues[parsed.name] = parsed
    elif kind == "LocalQueue":
        inv.local_queues[(parsed.namespace, parsed.name)] = parsed
    else:
        inv.workloads[workload_key(parsed.namespace, parsed.name)] = parsed


def _label(raw: Mapping[str, Any]) -> str:
    meta = raw.get("metadata")
    if not isinstance(meta, Mapping):
        return "(no metadata)"
    name = meta.get("name")
    namespace = meta.get("namespace")
    name = name if isinstance(name, str) and name else "(no name)"
    return f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name
