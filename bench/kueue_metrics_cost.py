"""What the Kueue-compatible metrics cost the controller, on Kueue's baseline scale.

Builds the quota state of Kueue's baseline performance scenario (5 cohorts x 6 ClusterQueues,
each with two flavors of cpu and memory) holding `--workloads` Workloads (default 15,000, half
admitted, half pending), then times what the admission loop adds per status interval (the
per-ClusterQueue figures and setting every gauge), per admission (the wait time and four
counter/histogram updates), per admission cycle and per scrape (the whole exposition).
bench/kueue_metrics_cpu.py measures the whole controller with and without them instead. Prints the figures and the
share of one CPU the refresh takes at the controller's 1 s interval; asserts nothing.

    .venv/bin/python bench/kueue_metrics_cost.py [--workloads 15000] [--repeat 50]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from batchgate.clock import format_time  # noqa: E402
from controller.adapters.metrics import ControllerMetrics  # noqa: E402
from controller.decisions.quota.kueue_metrics import cluster_queue_figures, queued_wait_seconds  # noqa: E402
from controller.state.quota_state import QuotaState  # noqa: E402
from machine_info import machine  # noqa: E402  (bench/ is the script's own folder)

T0 = _dt.datetime(2025, 1, 1, tzinfo=_dt.timezone.utc)
FLAVORS = ("on-demand", "spot")


def cluster_queue(name: str, cohort: str) -> dict:
    return {"kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
        "cohort": cohort, "namespaceSelector": {},
        "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
            {"name": f, "resources": [{"name": "cpu", "nominalQuota": "20", "borrowingLimit": "100"},
                                      {"name": "memory", "nominalQuota": "64Gi"}]} for f in FLAVORS]}]}}


def workload(name: str, queue: str, index: int, admitted_to: str | None) -> dict:
    obj: dict = {"kind": "Workload", "metadata": {"namespace": "bench", "name": name,
                                                  "creationTimestamp": format_time(T0 + _dt.timedelta(seconds=index))},
                 "spec": {"queueName": queue, "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}]}}
    if admitted_to:
        obj["status"] = {"admission": {"clusterQueue": admitted_to, "podSetAssignments": [
            {"name": "main", "count": 1, "flavors": {"cpu": "on-demand", "memory": "on-demand"},
             "resourceUsage": {"cpu": "1", "memory": "1Gi"}}]},
            "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                            "lastTransitionTime": format_time(T0)}]}
    return obj


def build(workloads: int) -> tuple[QuotaState, list[dict]]:
    state = QuotaState()
    state.observe({"kind": "Namespace", "metadata": {"name": "bench"}}, T0)
    for f in FLAVORS:
        state.observe({"kind": "ResourceFlavor", "metadata": {"name": f}, "spec": {}}, T0)
    queues = [f"cq-{c}-{q}" for c in range(5) for q in range(6)]
    for name in queues:
        state.observe(cluster_queue(name, name.rsplit("-", 1)[0]), T0)
        state.observe({"kind": "LocalQueue", "metadata": {"namespace": "bench", "name": f"lq-{name}"},
                       "spec": {"clusterQueue": name}}, T0)
    objects = [workload(f"w-{i}", f"lq-{queues[i % len(queues)]}", i, queues[i % len(queues)] if i % 2 else None)
               for i in range(workloads)]
    for obj in objects:
        state.observe(obj, T0)
    return state, objects


def per_call(fn, repeat: int) -> float:
    started = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - started) / repeat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=15_000)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    print(machine())
    state, objects = build(args.workloads)
    metrics = ControllerMetrics()

    def refresh() -> None:
        metrics.show_cluster_queues([cluster_queue_figures(state, name) for name in state.cluster_queues])

    now = T0 + _dt.timedelta(hours=1)
    admitted = [o for o in objects if "status" not in o][: args.repeat]

    def admissions() -> None:
        for obj in admitted:
            metrics.kueue.reserved_and_admitted("cq-0-0", queued_wait_seconds(obj, now))

    queues = list(state.cluster_queues)

    def cycle() -> None:
        """What one admission cycle adds: the attempt, and the preemption-skips gauge of every queue
        (written only where it changed: here, as in most cycles, nowhere)."""
        assert metrics.kueue is not None
        metrics.kueue.attempt("inadmissible", 0.001)
        metrics.kueue.preemption_skips.show({(name,): 0.0 for name in queues})

    refresh()
    refresh_s = per_call(refresh, args.repeat)
    cycle_s = per_call(cycle, 100 * args.repeat)
    admission_s = per_call(admissions, 1) / max(1, len(admitted))
    scrape_s = per_call(metrics.exposition, args.repeat)
    series = sum(1 for line in metrics.exposition().decode().splitlines() if line.startswith("kueue_"))
    print(f"{len(state.cluster_queues)} ClusterQueues, {len(state.workloads)} Workloads "
          f"({len(state.admitted)} admitted), {series} kueue_* series")
    print(f"refresh of every ClusterQueue gauge: {refresh_s * 1e3:.2f} ms CPU "
          f"({refresh_s * 100:.2f} % of one CPU at the 1 s status interval)")
    print(f"per admission (wait time + 4 counter/histogram updates): {admission_s * 1e6:.0f} us CPU")
    print(f"per admission cycle (attempt + every queue's preemption-skips gauge): {cycle_s * 1e6:.0f} us CPU")
    print(f"one scrape of /metrics (exposition only): {scrape_s * 1e3:.2f} ms CPU")


if __name__ == "__main__":
    main()
