"""How fast batchgate decides and binds gangs: the pure decision, and end to end on the local cluster.

1. The goal of docs/gang.md, "Performance" (at most 1 s): the all-or-nothing decision for one 1,000-pod gang
   over 5,000 simulated nodes (8 GPUs each, 1,000 already-bound pods spread over them), both when
   it fits and when it is one pod too big (every trial placement undone); the same for the
   largest gang that still fits on every node.
2. Many small gangs: 200 gangs of 4 one-GPU pods over 100 nodes, in one decision: gangs/s.
3. End to end: `batchgate cluster` (simulated nodes and kubelets, Job controller) and
   `batchgate controller` in their own processes; J Jobs of P pods each, naming
   batchgate-scheduler with the pod-group label, as the gateway leaves them. Prints the wall
   time from the first Job created to the last pod bound and pods bound per second, at the
   controller's default client rate limit and with it raised.
Prints figures and the machine; asserts nothing.

    .venv/bin/python bench/gang_placement.py [--repeat 5] [--jobs 25 --pods 8] [--skip-e2e]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from batchgate import keys  # noqa: E402
from batchgate.api.node import Node  # noqa: E402
from controller.decisions.gang.placement import Bind, GroupSpec, place  # noqa: E402
from controller.decisions.gang.node_fit import PodInfo, parse_pod  # noqa: E402
from controller_stack import Processes  # noqa: E402  (bench/ is the script's own folder)
from machine_info import machine  # noqa: E402  (bench/ is the script's own folder)

SCHEDULER = "batchgate-scheduler"


def node(i: int, gpus: int = 8) -> Node:
    return Node.from_dict({"metadata": {"name": f"node-{i:05d}", "labels": {"zone": f"z{i % 4}"}},
                           "status": {"allocatable": {"cpu": "64", "memory": "512Gi", keys.GPU_RESOURCE: str(gpus),
                                                      "pods": "110"},
                                      "conditions": [{"type": "Ready", "status": "True"}]}})


def pod(name: str, *, group: str = "", gpus: int = 1, bound_to: str = "") -> PodInfo:
    return parse_pod({
        "metadata": {"name": name, "namespace": "bench", "uid": f"uid-{name}",
                     "labels": {keys.POD_GROUP_LABEL: group} if group else {}},
        "spec": {"schedulerName": SCHEDULER, "nodeName": bound_to, "containers": [{"name": "main", "resources": {
            "requests": {"cpu": "4", "memory": "16Gi", keys.GPU_RESOURCE: str(gpus)}}}]},
        "status": {"phase": "Running" if bound_to else "Pending"}})


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def pure(repeat: int) -> None:
    nodes = [node(i) for i in range(5000)]
    busy = [pod(f"busy-{i}", gpus=2, bound_to=nodes[(i * 7) % 5000].name) for i in range(1000)]
    start = time.perf_counter()
    gang = [pod(f"g-{i}", group="big", gpus=4) for i in range(1000)]
    parse = time.perf_counter() - start
    print(f"parse 1,000 pods: {parse * 1000:.0f} ms (done once per pod version by the adapter)")
    for label, members, min_member in (("fits", gang, 1000),
                                       ("one pod too big", [*gang, pod("g-extra", group="big", gpus=9)], 1001)):
        seconds, decisions = timed(lambda: place([*busy, *members], nodes, {("bench", "big"): GroupSpec(min_member)},
                                                 SCHEDULER), repeat)
        bound = sum(isinstance(d, Bind) for d in decisions)
        print(f"C3 1,000-pod gang over 5,000 nodes, {label}: {seconds * 1000:.0f} ms median of {repeat} "
              f"({bound} bound, {len({d.node for d in decisions if isinstance(d, Bind)})} nodes used)")
    whole = [pod(f"w-{i}", group="whole", gpus=8) for i in range(4000)]
    seconds, decisions = timed(lambda: place(whole, nodes, {("bench", "whole"): GroupSpec(4000)}, SCHEDULER), repeat)
    print(f"4,000-pod gang of 8-GPU pods over 5,000 empty nodes: {seconds * 1000:.0f} ms median of {repeat} "
          f"({sum(isinstance(d, Bind) for d in decisions)} bound)")
    small_nodes = [node(i) for i in range(100)]
    small = [pod(f"s{g}-{i}", group=f"s{g}", gpus=1) for g in range(200) for i in range(4)]
    groups = {("bench", f"s{g}"): GroupSpec(4) for g in range(200)}
    seconds, decisions = timed(lambda: place(small, small_nodes, groups, SCHEDULER), repeat)
    placed = len({d.pod.group for d in decisions if isinstance(d, Bind)})
    print(f"200 gangs of 4 one-GPU pods over 100 nodes: {seconds * 1000:.0f} ms median of {repeat}, "
          f"{placed / seconds:,.0f} gangs/s ({placed} placed)")


def a_job(name: str, pods: int) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "bench"}, "spec": {
        "parallelism": pods, "completions": pods, "template": {
            "metadata": {"labels": {keys.POD_GROUP_LABEL: name},
                         "annotations": {"localcluster.batchgate.dev/behavior": json.dumps({"runFor": "1h"})}},
            "spec": {"schedulerName": SCHEDULER, "restartPolicy": "Never", "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1", keys.GPU_RESOURCE: "1"},
                                                                   "limits": {keys.GPU_RESOURCE: "1"}}}]}}}}


def end_to_end(jobs: int, pods: int, qps: float, burst: int) -> None:
    nodes = max(1, (jobs * pods + 7) // 8)
    with tempfile.TemporaryDirectory() as tmp:
        processes = Processes(Path(tmp), nodes, qps, burst, node_gpus=8)
        try:
            session = processes.session()
            session.post(f"{processes.url}/api/v1/namespaces", json={
                "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}).raise_for_status()
            time.sleep(2)  # the controller lists and watches before the first Job lands
            start = time.monotonic()
            for j in range(jobs):
                session.post(f"{processes.url}/apis/batch/v1/namespaces/bench/jobs",
                             json=a_job(f"job-{j}", pods)).raise_for_status()
            total, bound, deadline = jobs * pods, 0, start + 600
            created_all: float | None = None
            while time.monotonic() < deadline:
                items = session.get(f"{processes.url}/api/v1/namespaces/bench/pods").json().get("items") or []
                if created_all is None and len(items) >= total:
                    created_all = time.monotonic()
                bound = sum(1 for p in items if (p.get("spec") or {}).get("nodeName"))
                if bound == total:
                    break
                time.sleep(0.05)
            wall = time.monotonic() - start
            created = (created_all or time.monotonic()) - start
            print(f"end to end, {jobs} Jobs x {pods} pods on {nodes} nodes, controller --qps {qps:g} --burst {burst}: "
                  f"{bound}/{total} bound {wall:.1f} s after the first Job was created ({bound / wall:.0f} pods bound/s); "
                  f"the Job controller had made every pod by {created:.1f} s, the last bind came "
                  f"{wall - created:.1f} s later")
        finally:
            processes.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=25)
    parser.add_argument("--pods", type=int, default=8)
    parser.add_argument("--skip-e2e", action="store_true")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    pure(args.repeat)
    if not args.skip_e2e:
        end_to_end(args.jobs, args.pods, 50, 100)
        end_to_end(args.jobs, args.pods, 1000, 2000)


if __name__ == "__main__":
    main()
