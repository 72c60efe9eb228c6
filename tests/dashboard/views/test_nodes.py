"""Node rows: GPU allocation per node and the condition a node shows."""

from __future__ import annotations

from typing import Any

import pytest

from batchgate.api.node import Node
from dashboard.views.nodes import node_rows
from tests.controller.check.builders import node
from tests.dashboard.states import pod


@pytest.mark.parametrize("pods, expected", [
    pytest.param([pod("p1", node_name="n1", gpus=4), pod("p2", node_name="n1", gpus=2)], {"n1": (6, 75, 2), "n2": (0, 0, 0)},
                 id="the GPUs of the pods bound to a node add up"),
    pytest.param([pod("p1", node_name="n1", gpus=4, phase="Succeeded")], {"n1": (0, 0, 0), "n2": (0, 0, 0)},
                 id="finished pods hold no GPUs"),
    pytest.param([pod("p1", gpus=4, phase="Pending")], {"n1": (0, 0, 0), "n2": (0, 0, 0)},
                 id="an unscheduled pod counts on no node"),
])
def test_gpu_allocation_per_node(pods: list[dict[str, Any]], expected: dict[str, tuple[int, int, int]]) -> None:
    nodes = [Node.from_dict(node("n1", gpus=8)), Node.from_dict(node("n2", gpus=8))]
    assert {r.name: (r.gpus_used, r.used_pct, r.pods) for r in node_rows(nodes, pods)} == expected


@pytest.mark.parametrize("raw, condition", [
    pytest.param(node("n", gpus=8), "schedulable", id="a ready uncordoned node is schedulable"),
    pytest.param(node("n", gpus=8, cordoned=True), "cordoned (spec.unschedulable)", id="a cordoned node says so"),
    pytest.param(node("n", gpus=8, ready=False), "not Ready", id="a node that is not Ready says so"),
    pytest.param(node("n", gpus=8, labels={"autopilot.ibm.com/gpuhealth": "EVICT"}),
                 "labelled autopilot.ibm.com/gpuhealth=EVICT", id="a GPU-unhealthy node says why"),
])
def test_node_condition(raw: dict[str, Any], condition: str) -> None:
    assert node_rows([Node.from_dict(raw)], [])[0].condition == condition
