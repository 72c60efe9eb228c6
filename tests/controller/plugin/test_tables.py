"""kueuectl's columns and kubectl's table for `kubectl batchgate list`, and ages as kubectl prints them."""

from __future__ import annotations

import datetime as _dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchgate.durations import human_duration
from controller.plugin import tables
from dashboard.views.queues import pending_rows
from tests.controller.check.builders import run_check
from tests.controller.decisions.trace_builders import T0, basic, workload


@pytest.mark.parametrize("seconds, text", [
    pytest.param(59, "59s", id="under two minutes in seconds"),
    pytest.param(150, "2m30s", id="under ten minutes with seconds"),
    pytest.param(3 * 3600 + 120, "3h2m", id="under eight hours with minutes"),
    pytest.param(30 * 3600, "30h", id="under two days in hours"),
    pytest.param(3 * 86400 + 3600, "3d1h", id="under eight days with hours"),
    pytest.param(400 * 86400, "400d", id="under two years in days"),
    pytest.param(3 * 365 * 86400 + 86400, "3y1d", id="years with days"),
    pytest.param(-5, "<invalid>", id="a time in the future"),
])
def test_ages_read_as_kubectls(seconds: int, text: str) -> None:
    assert human_duration(_dt.timedelta(seconds=seconds)) == text


def test_a_table_pads_as_kubectls_tabwriter_and_adds_namespaces_under_all() -> None:
    table = tables.Table(("Name", "Long Column Name", "Reason"), (("a", "x", "r1"), ("bbbbbbbbbbbb", "y", "r2")), wide=1)
    assert tables.render(table, wide=False) == ("NAME           LONG COLUMN NAME\n"
                                                "a              x\n"
                                                "bbbbbbbbbbbb   y\n")
    assert tables.render(table, wide=True, namespaces=["n1", "n2"]).splitlines()[0] == (
        "NAMESPACE   NAME           LONG COLUMN NAME   REASON")


WORKLOADS = [*basic(cpu=10), workload("done", admitted_to="cq", cpu=4, created=0),
             workload("first", cpu=8, created=10), workload("second", cpu=2, created=20)]


def test_workload_rows_carry_status_position_and_exec_time() -> None:
    report = run_check(WORKLOADS)
    pending = {row.name: row for row in pending_rows(report.pending)}
    now = T0 + _dt.timedelta(minutes=5)
    table = tables.workload_table([o for o in WORKLOADS if o["kind"] == "Workload"], {("ns", "lq"): "cq"}, pending, now)
    rows = {row[0]: row for row in table.rows}
    assert rows["done"][3:9] == ("lq", "cq", "ADMITTED", "", "5m", "5m")
    assert rows["first"][5:7] == ("PENDING", "1") and "insufficient unused quota for cpu" in rows["first"][-1]
    assert rows["second"][5:7] == ("PENDING", "2")


@given(st.sets(st.sampled_from(("pending", "quotareserved", "admitted", "finished")), min_size=1))
def test_a_status_filter_keeps_exactly_the_workloads_in_those_statuses(statuses: set[str]) -> None:
    kept = tables.filter_workloads([o for o in WORKLOADS if o["kind"] == "Workload"], "", "", frozenset(statuses))
    assert all(tables.workload_status(w).lower() in statuses for w in kept)
    assert len(kept) == sum(s in statuses for s in ("admitted", "pending", "pending"))
