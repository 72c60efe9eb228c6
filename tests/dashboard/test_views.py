"""The dashboard's pure view models: paging, GPU allocation, audit lines, admission order."""

from __future__ import annotations

from typing import Any

import pytest

from batchgate.api.node import Node
from dashboard.views.appwrappers import appwrapper_detail
from dashboard.views.audit import audit_view
from dashboard.views.digest import digest
from dashboard.views.nodes import node_rows
from dashboard.views.paging import page_of
from tests.controller.check.builders import node
from tests.controller.decisions.trace_builders import T0
from tests.dashboard.states import appwrapper, audit_line, event, observed, pod, team_queues


@pytest.mark.parametrize("items, number, size, rows, pages, previous, next_", [
    pytest.param(list(range(250)), 1, 100, (0, 99), 3, None, 2, id="the first page has no previous page"),
    pytest.param(list(range(250)), 3, 100, (200, 249), 3, 2, None, id="the last page holds the remainder"),
    pytest.param(list(range(250)), 99, 100, (200, 249), 3, 2, None, id="a page past the end shows the last page"),
    pytest.param(list(range(250)), 0, 100, (0, 99), 3, None, 2, id="page zero shows the first page"),
    pytest.param([], 1, 100, None, 1, None, None, id="an empty list is one empty page"),
])
def test_paging(items: list[int], number: int, size: int, rows: Any, pages: int, previous: Any, next_: Any) -> None:
    page = page_of(items, number, size)
    assert (page.rows[0], page.rows[-1]) == rows if rows else page.rows == ()
    assert (page.pages, page.previous, page.next, page.total) == (pages, previous, next_, len(items))


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


def test_audit_view_shows_newest_first_and_counts_lines_that_are_not_records() -> None:
    lines = [audit_line("alice", "one", True, patch=True), "not json", '{"msg": "log line"}',
             audit_line("bob", "two", False, code=403), ""]
    view = audit_view(lines)
    assert [(r.user, r.object, r.verdict) for r in view.rows] == [("bob", "ns/two", "denied 403"),
                                                                   ("alice", "ns/one", "allowed, patched")]
    assert view.unreadable_lines == 2


def test_pending_workloads_keep_admission_order_with_positions_per_cluster_queue() -> None:
    d = digest(observed(team_queues(pending=3)), T0)
    assert [(p.position, p.name, p.local_queue) for p in d.pending] == [
        (1, "ta/w00000", "ta/lq"), (2, "ta/w00001", "ta/lq"), (3, "ta/w00002", "ta/lq")]
    assert all("cpu" in p.reason for p in d.pending)  # the check's own reason: 9 cpu cannot fit in 4 + 4


def test_appwrapper_timeline_merges_condition_transitions_and_its_own_events_in_time_order() -> None:
    aw = appwrapper("aw", phase="Running", conditions=[
        {"type": "QuotaReserved", "status": "True", "reason": "Admitted", "lastTransitionTime": "2025-01-01T00:00:05Z"}])
    events = [event("aw", "Resuming", "quota reserved", 7), event("aw", "Created", "queued", 1),
              event("other", "Created", "not mine", 2)]
    detail = appwrapper_detail(aw, [pod("aw-0", node_name="n1", appwrapper="aw"), pod("x", node_name="n2")], events)
    assert [t.what for t in detail.timeline] == ["Normal Created", "QuotaReserved=True", "Normal Resuming"]
    assert [(p.name, p.node) for p in detail.pods] == [("aw-0", "n1")]
    assert [(c.kind, c.name) for c in detail.components] == [("Job", "aw-job")]
