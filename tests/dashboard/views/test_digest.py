"""The digest of what the dashboard observed: pending workloads in admission order; and the
digest kept between change batches equals one computed from scratch after any sequence of them."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from controller.check.inventory import build_inventory
from controller.check.report import check
from dashboard.views.digest import Digests, digest
from dashboard.views.observed import KINDS, Observed
from tests.controller.decisions.trace_builders import T0, at, cluster_queue, flavor, local_queue, workload
from tests.dashboard.states import observed, team_queues


def test_pending_workloads_keep_admission_order_with_positions_per_cluster_queue() -> None:
    d = digest(observed(team_queues(pending=3)), T0)
    assert [(p.position, p.name, p.local_queue) for p in d.pending] == [
        (1, "ta/w00000", "ta/lq"), (2, "ta/w00001", "ta/lq"), (3, "ta/w00002", "ta/lq")]
    assert all("cpu" in p.reason for p in d.pending)  # the check's own reason: 9 cpu cannot fit in 4 + 4


Key = tuple[str, str, str]

BASE = [flavor(), cluster_queue("a", cpu=4, cohort="c", reclaim="Any", within="LowerPriority"),
        cluster_queue("b", cpu=4, cohort="c", within="LowerPriority"), cluster_queue("d", cpu=3),
        local_queue("lq", "a", ns="ta"), local_queue("lq", "b", ns="tb"), local_queue("lq", "d", ns="td")]
QUEUES = {"ta": "a", "tb": "b", "td": "d", "tx": "a"}  # tx has no LocalQueue

put_workload = st.builds(
    lambda i, ns, cpu, priority, held, reserved: ("workload", i, ns, cpu, priority, held, reserved),
    st.integers(0, 7), st.sampled_from(["ta", "ta", "tb", "tb", "td", "tx"]), st.integers(1, 5), st.integers(0, 3),
    st.sampled_from(["pending", "admitted", "evicted", "finished"]), st.sampled_from([None, 1.0, 50.0]))
delete = st.tuples(st.just("delete"), st.integers(0, 7))
change = st.one_of(  # mostly Workloads, as on a cluster: queue and flavor changes rebuild the view
    *[put_workload] * 8, delete, delete, st.tuples(st.just("broken"), st.integers(0, 7)),
    st.tuples(st.just("quota"), st.sampled_from(["a", "b", "d"]), st.integers(2, 8)),
    st.tuples(st.just("flavor"), st.booleans()))


def _apply(objects: dict[Key, dict[str, Any]], op: tuple[Any, ...]) -> None:
    """One change as a watch delivers it: a new object in place of the old (same position), or gone."""
    if op[0] == "workload":
        _, i, ns, cpu, priority, held, reserved = op
        wl = workload(f"w{i}", ns=ns, created=i, cpu=cpu, priority=priority,
                      admitted_to=QUEUES[ns] if held in ("admitted", "evicted") else None,
                      evicted=held == "evicted", reserved=reserved)
        if held == "admitted" and reserved is None:
            for cond in wl["status"]["conditions"]:
                del cond["lastTransitionTime"]  # a Workload held without a reservation time
        if held == "finished":
            wl["status"] = {"conditions": [{"type": "Finished", "status": "True", "reason": "Succeeded",
                                            "lastTransitionTime": at(i)}]}
        _put(objects, wl)
    elif op[0] == "broken":  # an InvalidObject finding, until replaced
        wl = workload(f"w{op[1]}", ns="ta", cpu=1)
        wl["spec"]["podSets"] = "none"
        _put(objects, wl)
    elif op[0] == "delete":
        objects.pop(("Workload", "", f"w{op[1]}"), None)
        for ns in QUEUES:
            objects.pop(("Workload", ns, f"w{op[1]}"), None)
    elif op[0] == "quota":
        cohort = "" if op[1] == "d" else "c"
        _put(objects, cluster_queue(op[1], cpu=op[2], cohort=cohort, reclaim="Any" if op[1] == "a" else None,
                                    within="LowerPriority"))
    elif op[1]:
        _put(objects, flavor())
    else:
        objects.pop(("ResourceFlavor", "", "default"), None)


def _put(objects: dict[Key, dict[str, Any]], obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    if obj["kind"] == "Workload":  # one Workload name lives in one namespace at a time
        for ns in QUEUES:
            objects.pop(("Workload", ns, meta["name"]), None)
    objects[(obj["kind"], meta.get("namespace", ""), meta["name"])] = {k: v for k, v in obj.items() if k != "kind"}


def _observed(objects: dict[Key, dict[str, Any]]) -> Observed:
    return Observed({kind: tuple(o for (k, _, _), o in objects.items() if k == kind) for kind in KINDS})


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(change, min_size=1, max_size=3), min_size=2, max_size=10), st.integers(0, 100))
def test_the_kept_digest_equals_the_digest_from_scratch_after_every_change_batch(
        batches: list[list[tuple[Any, ...]]], seconds: int) -> None:
    objects: dict[Key, dict[str, Any]] = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]):
                                          {k: v for k, v in o.items() if k != "kind"} for o in BASE}
    digests = Digests()
    for step, batch in enumerate(batches):
        for op in batch:
            _apply(objects, op)
        state = _observed(objects)
        now = T0 + _dt.timedelta(seconds=seconds + step * 30)
        kept = digests.next(state, now)
        assert kept == digest(state, now)
        raw = [{**o, "kind": kind} for (kind, _, _), o in objects.items()]
        assert digests.view.report(now) == check(build_inventory(raw), now)  # the one-shot `batchgate check`
