"""The cost of `batchgate check` on a cluster the size of Kueue's baseline scenario.

5 cohorts x 6 ClusterQueues (nominal 20 cpu, borrowingLimit 100), 100 nodes, and 15,000
Workloads of the baseline's three classes, of which a given share already hold quota and the
rest are pending without a status message, so every pending reason is computed by the quota
cycle. Parsing (wire dicts -> models) and the check itself are timed separately; the rendering
of both outputs is included in "render".

    python bench/check_scale.py [--workloads N] [--admitted-share F]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from batchgate.clock import format_time  # noqa: E402
from bench.machine_info import machine  # noqa: E402
from controller.check.inventory import build_inventory  # noqa: E402
from controller.check.render import render_json, render_table  # noqa: E402
from controller.check.report import check  # noqa: E402

T0 = _dt.datetime(2025, 1, 1, tzinfo=_dt.timezone.utc)
CLASSES = (("small", 1, 50, 0.70), ("medium", 5, 100, 0.20), ("large", 20, 200, 0.10))  # name, cpu, prio, share


def objects(workloads: int, admitted_share: float) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"kind": "ResourceFlavor", "metadata": {"name": "default"}}]
    out += [{"kind": "Node", "metadata": {"name": f"node-{i}"},
             "status": {"allocatable": {"cpu": "6", "memory": "64Gi"},
                        "conditions": [{"type": "Ready", "status": "True"}]}} for i in range(100)]
    queues = [f"cq-{c}-{q}" for c in range(5) for q in range(6)]
    for name in queues:
        cohort = name.rsplit("-", 1)[0]
        out.append({"kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
            "cohort": cohort, "namespaceSelector": {},
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [
                {"name": "cpu", "nominalQuota": "20", "borrowingLimit": "100"}]}]}]}})
        out.append({"kind": "LocalQueue", "metadata": {"namespace": name, "name": "lq"}, "spec": {"clusterQueue": name}})
    held = {name: 0 for name in queues}
    for i in range(workloads):
        name, cpu, priority, _ = _class_of(i)
        cq = queues[i % len(queues)]
        wl: dict[str, Any] = {"kind": "Workload", "metadata": {
            "namespace": cq, "name": f"{name}-{i}", "creationTimestamp": format_time(T0 + _dt.timedelta(seconds=i))},
            "spec": {"queueName": "lq", "priority": priority, "podSets": [{"name": "main", "count": 1, "template": {
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}}}]}}
        if (i % 1000) / 1000 < admitted_share and held[cq] + cpu <= 20:
            held[cq] += cpu
            stamp = format_time(T0 + _dt.timedelta(seconds=i + 1))
            wl["status"] = {"admission": {"clusterQueue": cq, "podSetAssignments": [
                {"name": "main", "count": 1, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": str(cpu)}}]},
                "conditions": [{"type": t, "status": "True", "reason": t, "lastTransitionTime": stamp}
                               for t in ("QuotaReserved", "Admitted")]}
        out.append(wl)
    return out


def _class_of(i: int) -> tuple[str, int, int, float]:
    point = (i % 100) / 100
    for cls in CLASSES:
        if point < cls[3]:
            return cls
        point -= cls[3]
    return CLASSES[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", type=int, default=15_000)
    parser.add_argument("--admitted-share", type=float, default=0.1)
    args = parser.parse_args()
    raw = objects(args.workloads, args.admitted_share)
    start = time.perf_counter()
    inventory = build_inventory(raw)
    parsed = time.perf_counter()
    report = check(inventory, T0 + _dt.timedelta(days=1))
    checked = time.perf_counter()
    render_table(report), render_json(report)
    rendered = time.perf_counter()
    print(f"machine: {machine()}")
    print(f"objects: {len(raw)} ({args.workloads} workloads, 30 ClusterQueues, 100 nodes); "
          f"holding quota: {sum(s.reserving for s in report.cluster_queues)}; pending: {len(report.pending)}")
    print(f"parse: {parsed - start:.2f} s   check: {checked - parsed:.2f} s "
          f"({(checked - parsed) / max(1, len(report.pending)) * 1e3:.2f} ms per pending workload)   "
          f"render: {rendered - checked:.2f} s")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
