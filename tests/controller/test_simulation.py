"""Whatever a trace contains, `run_trace` either runs it or raises TraceError (one clear line):
never another exception. Valid traces with one node replaced by junk are the input."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.simulation import TraceError, run_trace
from tests.builders import every_path
from tests.controller.decisions.trace_builders import basic, cluster_queue, group, quota, trace, workload

BASE = trace(basic(cpu=10, within="LowerPriority") + [
    cluster_queue("other", group({"default": {"cpu": quota(5, borrow=2, lend=1)}}), cohort="c"),
    workload("a", cpu=4, priority=1, admitted_to="cq"), workload("b", cpu=8, priority=5, created=1)],
    {"cycles": 1, "advance": "1s"}, {"finish": ["ns/a"]})

junk = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 10**12), st.floats(allow_nan=True), st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=6)


ALL_PATHS = every_path(BASE)[1:]


@settings(max_examples=200, deadline=None)
@given(where=st.sampled_from(ALL_PATHS), value=junk)
def test_junk_anywhere_in_a_trace_is_a_trace_error_or_runs(where: tuple, value: Any) -> None:
    bad = copy.deepcopy(BASE)
    node = bad
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    try:
        run_trace(bad)
    except TraceError as exc:
        assert "\n" not in str(exc)
