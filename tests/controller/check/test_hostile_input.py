"""Whatever is wrong with the objects, the check reports it and never raises."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.check.inventory import build_inventory, flatten
from controller.check.render import render_json, render_table
from controller.check.report import check
from tests.controller.test_check_cli import mlbatch_like
from tests.controller.decisions.trace_builders import T0, pod_set, workload

JUNK = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["", "x", "-1", "1Gi", "500m", "True"]),
                 st.just([]), st.just({}), st.just([{"x": 1}]), st.just({"a": None}))
BASE = [*mlbatch_like(), workload("evicted", ns="team-a", queue="default-queue", admitted_to="team-a-cq",
                                  evicted=True, cpu=1),
        workload("tolerant", ns="team-a", queue="default-queue", pod_sets=[pod_set(
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}], gpu=1)])]
BASE[0]["spec"]["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]


def paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path into a JSON-like value."""
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += paths(v, (*prefix, i))
    return out


def replace_at(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    obj[path[0]] = replace_at(obj[path[0]], path[1:], value)
    return obj


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_junk_anywhere_in_any_object_becomes_findings_not_exceptions(data: st.DataObject) -> None:
    objects = copy.deepcopy(BASE)
    for _ in range(data.draw(st.integers(1, 3))):
        index = data.draw(st.integers(0, len(objects) - 1))
        candidates = [p for p in paths(objects[index]) if p and p[0] != "kind"]
        path = data.draw(st.sampled_from(candidates))
        objects[index] = replace_at(objects[index], path, copy.deepcopy(data.draw(JUNK)))
    report = check(build_inventory(flatten(objects)), T0)
    render_table(report)
    render_json(report)
