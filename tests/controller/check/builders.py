"""Builders for checker tests: Nodes as the API serves them; Kueue objects come from trace_builders."""

from __future__ import annotations

from typing import Any

from controller.check.inventory import build_inventory, flatten
from controller.check.report import Report, check
from tests.controller.decisions.trace_builders import T0

GPU = "nvidia.com/gpu"


def node(name: str, *, cpu: str = "16", memory: str = "64Gi", gpus: int = 0, ready: bool | None = True,
         cordoned: bool = False, labels: dict[str, str] | None = None,
         taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110"}
    if gpus:
        allocatable[GPU] = str(gpus)
    spec: dict[str, Any] = {}
    if cordoned:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = taints
    status: dict[str, Any] = {"allocatable": allocatable, "capacity": dict(allocatable)}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False", "reason": "KubeletReady"}]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": spec, "status": status}


def taint(key: str, effect: str = "NoSchedule", value: str = "") -> dict[str, str]:
    out = {"key": key, "effect": effect}
    if value:
        out["value"] = value
    return out


def run_check(objects: list[dict[str, Any]]) -> Report:
    return check(build_inventory(flatten(objects)), T0)


def codes(report: Report, severity: str | None = None) -> list[str]:
    return [f.code for f in report.findings if severity is None or f.severity == severity]
