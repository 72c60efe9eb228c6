"""Nodes: GPU allocation per node (packing shows as full and empty nodes), cordoned and unhealthy ones."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Iterable

from batchgate import keys
from batchgate.api.errors import FieldError
from batchgate.api.node import Node
from batchgate.api.pod_requests import pod_requests
from controller.check.capacity import node_exclusion
from dashboard.views.observed import Obj

TERMINAL_POD_PHASES = ("Succeeded", "Failed")


@dataclass(frozen=True)
class NodeRow:
    name: str
    gpus: int  # allocatable nvidia.com/gpu
    gpus_used: int  # requested by the non-terminal pods bound to it
    used_pct: int
    pods: int
    condition: str  # "schedulable", or why no admitted work can run there (cordoned, not Ready, GPU unhealthy)


def gpus_by_node(pods: Iterable[Obj]) -> tuple[dict[str, int], dict[str, int]]:
    """GPUs requested and pod counts per node, over non-terminal bound pods; an unparsable pod counts 0 GPUs."""
    gpus: dict[str, int] = {}
    count: dict[str, int] = {}
    for pod in pods:
        spec = pod.get("spec") or {}
        node = spec.get("nodeName")
        if not node or (pod.get("status") or {}).get("phase") in TERMINAL_POD_PHASES:
            continue
        count[node] = count.get(node, 0) + 1
        try:
            wanted = pod_requests(spec, "spec").get(keys.GPU_RESOURCE, Decimal(0))
        except FieldError:
            wanted = Decimal(0)
        gpus[node] = gpus.get(node, 0) + int(wanted)
    return gpus, count


def node_rows(nodes: Iterable[Node], pods: Iterable[Obj]) -> tuple[NodeRow, ...]:
    gpus, count = gpus_by_node(pods)
    out = []
    for node in sorted(nodes, key=lambda n: n.name):
        total = int(node.allocatable.get(keys.GPU_RESOURCE, Decimal(0)))
        used = gpus.get(node.name, 0)
        out.append(NodeRow(node.name, total, used, min(100, used * 100 // total) if total else 0,
                           count.get(node.name, 0), node_exclusion(node) or "schedulable"))
    return tuple(out)
