"""The side-by-side comparison's derived figures (bench/admission_scale.py): ClusterQueue usage as
Kueue's harness checker computes it, and writes per admitted Workload from the audit log."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from bench.admission_scale import Measured, harness_usage

USAGE = [
    pytest.param({"a": [(0.0, 20.0), (10.0, 0.0)]}, 100.0, id="one queue full between its two events is 100 %"),
    pytest.param({"a": [(0.0, 10.0), (10.0, 0.0)], "b": [(0.0, 0.0), (10.0, 0.0)]}, 25.0,
                 id="usage is summed over queues and divided by their summed nominal quota"),
    pytest.param({"a": [(0.0, 20.0), (5.0, 0.0)], "b": [(5.0, 0.0), (10.0, 0.0)]}, 25.0,
                 id="the span runs from the first event of any queue to the last"),
    pytest.param({"a": [(0.0, 0.0), (4.0, 20.0), (6.0, 20.0), (8.0, 0.0)]}, 50.0,
                 id="each event's usage holds until the next event"),
    pytest.param({"a": [(3.0, 20.0)]}, math.nan, id="a single event spans no time: no figure"),
    pytest.param({}, math.nan, id="no events: no figure"),
]


@pytest.mark.parametrize(("samples", "expected"), USAGE)
def test_harness_usage(samples: dict[str, list[tuple[float, float]]], expected: float) -> None:
    got = harness_usage(samples)
    assert (math.isnan(got) and math.isnan(expected)) or got == pytest.approx(expected)


def measured(own: Counter[str], admitted: int) -> Measured:
    return Measured(total=admitted, finished=True, wall=1.0, cpu=0.0, rss=0.0, usage=0.0, evictions=0,
                    by_class={"small": [0.1] * admitted}, own=own)


WRITES = [
    pytest.param(Counter({"patch workloads/status": 4, "create events": 2, "get workloads": 7, "watch workloads": 1}), 2,
                 3.0, id="only creates updates patches and deletes count as writes"),
    pytest.param(Counter({"update clusterqueues/status": 3, "delete workloads": 1}), 4, 1.0,
                 id="writes are divided by the Workloads admitted"),
    pytest.param(Counter({"patch workloads/status": 3}), 0, math.nan, id="nothing admitted: no figure"),
]


@pytest.mark.parametrize(("own", "admitted", "expected"), WRITES)
def test_writes_per_admitted(own: Counter[str], admitted: int, expected: float) -> None:
    got = measured(own, admitted).writes_per_admitted
    assert (math.isnan(got) and math.isnan(expected)) or got == pytest.approx(expected)
