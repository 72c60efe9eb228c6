"""The kept view's report after a change equals `batchgate check` over the same objects, and shows the change."""

from __future__ import annotations

from typing import Any

import pytest

from controller.check.inventory import build_inventory
from controller.check.report import Report, check
from controller.check.view import CheckView
from tests.controller.decisions.trace_builders import T0, cluster_queue, flavor, local_queue, workload

BASE = [flavor(), cluster_queue("a", cpu=4, cohort="c"), cluster_queue("b", cpu=4, cohort="c"),
        cluster_queue("d", cpu=4), local_queue("lq", "a", ns="ta"), local_queue("lq", "b", ns="tb"),
        local_queue("lq", "d", ns="td"), workload("waiting", ns="ta", cpu=3)]
FITS = "fits now in ClusterQueue a"

CHANGES = [
    pytest.param([workload("other", ns="ta", cpu=2)], [], FITS, id="a submitted Workload leaves the others' reasons"),
    pytest.param([workload("held", ns="tb", cpu=8, admitted_to="b")], [], "insufficient unused quota",
                 id="quota taken elsewhere in the cohort changes the reasons of the cohort's pending Workloads"),
    pytest.param([workload("held", ns="td", cpu=4, admitted_to="d")], [], FITS,
                 id="quota taken in another cohort leaves this cohort's reasons"),
    pytest.param([cluster_queue("a", cpu=1, cohort="c"), cluster_queue("b", cpu=1, cohort="c")], [],
                 "insufficient quota", id="a ClusterQueue's quota change is seen"),
    pytest.param([], ["waiting"], None, id="a deleted pending Workload leaves the report"),
]


def _report(view: CheckView, objects: list[dict[str, Any]]) -> Report:
    view.update((o["kind"], o) for o in objects)
    got = view.report(T0)
    assert got == check(build_inventory(objects), T0)
    return got


@pytest.mark.parametrize(("put", "delete", "reason"), CHANGES)
def test_after_a_change_the_kept_report_is_the_checks(put: list[dict[str, Any]], delete: list[str],
                                                      reason: str | None) -> None:
    view = CheckView()
    before = _report(view, BASE)
    assert FITS in before.pending[0].reason
    names = {(o["kind"], o["metadata"]["name"]) for o in put}
    after = [o for o in BASE if (o["kind"], o["metadata"]["name"]) not in names and o["metadata"]["name"] not in delete]
    got = _report(view, after + put)
    waiting = [p for p in got.pending if p.key.name == "waiting"]
    if reason is None:
        assert not waiting
    else:
        assert reason in waiting[0].reason


def test_a_held_workload_released_frees_its_cohort_for_the_pending_ones() -> None:
    view = CheckView()
    held = workload("held", ns="tb", cpu=8, admitted_to="b")
    assert "insufficient unused quota" in _report(view, [*BASE, held]).pending[0].reason
    assert FITS in _report(view, BASE).pending[0].reason
