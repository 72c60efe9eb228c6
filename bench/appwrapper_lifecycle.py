"""How fast AppWrappers go from submitted to Running and Succeeded, and what the controller spends.

Starts `batchgate cluster` (simulated nodes, kubelets, Job controller) and `batchgate controller`
in their own processes, applies the CRDs, makes one ClusterQueue with room for every AppWrapper,
then submits N queued AppWrappers (default 50, as upstream's e2e "50 AppWrappers all reach
Running"), each wrapping a Job of `--pods` pods (cpu 100m, behaviour `runFor`). One watch on
AppWrappers timestamps each phase as it is written. Prints create->Running and create->Succeeded
(p50, p99, max), the wall time until the last one succeeded, the controller process's CPU
seconds, the controller's API writes per AppWrapper by verb and resource (as the cluster counted
them), and the machine; asserts nothing.

    .venv/bin/python bench/appwrapper_lifecycle.py [-n 50] [--pods 2] [--run-for 5s] [--qps 50 --burst 100]

The controller's client rate limit (`--qps`, default 50) bounds how fast it can write; each
AppWrapper costs about ten writes that carry decisions (Workload create, admission, un-suspend
with the finalizer, five lifecycle status writes, component create, Workload finish) and four
Events on their own bucket (docs/controller.md, "API writes per AppWrapper"), so run it also
with a high `--qps` to see the controller's own cost.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests
from controller_stack import Processes  # noqa: E402  (bench/ is the script's own folder)
from machine_info import machine  # noqa: E402  (bench/ is the script's own folder)

from localcluster.rbac.bootstrap import WRITE

ROOT = Path(__file__).resolve().parents[1]
AW_PATH = "/apis/workload.codeflare.dev/v1beta2"
KUEUE_PATH = "/apis/kueue.x-k8s.io/v1beta1"
NAMESPACE = "bench"
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a live process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def setup(session: requests.Session, url: str, n: int, pods: int) -> None:
    def post(path: str, body: dict) -> None:
        reply = session.post(url + path, data=json.dumps(body))
        if reply.status_code not in (200, 201, 409):
            raise RuntimeError(f"POST {path}: {reply.status_code} {reply.text[:300]}")

    post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    post(f"{KUEUE_PATH}/resourceflavors", {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor",
                                            "metadata": {"name": "default"}})
    post(f"{KUEUE_PATH}/clusterqueues", {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
                                          "metadata": {"name": "bench"}, "spec": {
        "namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "default", "resources": [{"name": "cpu", "nominalQuota": f"{n * pods}"}]}]}]}})
    post(f"{KUEUE_PATH}/namespaces/{NAMESPACE}/localqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
        "metadata": {"name": "default-queue", "namespace": NAMESPACE}, "spec": {"clusterQueue": "bench"}})


def appwrapper(name: str, pods: int, run_for: str) -> dict:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": f"{name}-job"}, "spec": {
        "parallelism": pods, "completions": pods, "template": {
            "metadata": {"annotations": {"localcluster.batchgate.dev/behavior": json.dumps({"runFor": run_for})}},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}}
    return {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"kueue.x-k8s.io/queue-name": "default-queue"}},
            "spec": {"suspend": True, "components": [{"template": job}]}}


class PhaseWatch(threading.Thread):
    """First time each AppWrapper is seen in each phase, from one watch."""

    def __init__(self, processes: Processes, expected: int) -> None:
        super().__init__(daemon=True)
        self.processes, self.expected = processes, expected
        self.seen: dict[str, dict[str, float]] = {}
        self.done = threading.Event()

    def run(self) -> None:
        with self.processes.session() as session:
            reply = session.get(f"{self.processes.url}{AW_PATH}/namespaces/{NAMESPACE}/appwrappers",
                                params={"watch": "true", "resourceVersion": "0", "timeoutSeconds": "900"}, stream=True)
            for line in reply.iter_lines():
                if not line:
                    continue
                obj = json.loads(line)["object"]
                phase = (obj.get("status") or {}).get("phase")
                if phase:
                    self.seen.setdefault(obj["metadata"]["name"], {}).setdefault(phase, time.monotonic())
                if sum("Succeeded" in p for p in self.seen.values()) >= self.expected:
                    self.done.set()
                    return


def percentiles(values: list[float]) -> str:
    values = sorted(values)
    if not values:
        return "none"
    p99 = values[min(len(values) - 1, int(round(0.99 * (len(values) - 1))))]
    return f"p50 {statistics.median(values):.2f}s  p99 {p99:.2f}s  max {values[-1]:.2f}s"


def writes_per_appwrapper(counted: Counter[str], n: int) -> str:
    """The controller's writes over the whole run (queue status included) divided by the AppWrappers, by kind."""
    writes = {what: count for what, count in counted.items() if what.split(" ", 1)[0] in WRITE}
    total = sum(writes.values())
    by_kind = ", ".join(f"{what} {count / n:.2f}" for what, count in sorted(writes.items(), key=lambda w: -w[1]))
    return f"controller API writes per AppWrapper: {total / max(n, 1):.2f} ({by_kind})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=50, help="AppWrappers to submit (default: %(default)s)")
    parser.add_argument("--pods", type=int, default=2, help="pods per AppWrapper (default: %(default)s)")
    parser.add_argument("--run-for", default="5s", help="how long each pod runs (default: %(default)s)")
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--qps", type=float, default=50.0, help="the controller's client rate limit (its default: 50)")
    parser.add_argument("--burst", type=int, default=100, help="the controller's client burst (its default: 100)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        processes = Processes(Path(tmp), args.nodes, args.qps, args.burst)
        try:
            with processes.session() as session:
                setup(session, processes.url, args.n, args.pods)
                time.sleep(2)  # the controller lists and watches before the first AppWrapper lands
                cpu_before = cpu_seconds(processes.controller.pid)
                watch = PhaseWatch(processes, args.n)
                watch.start()
                created: dict[str, float] = {}
                start = time.monotonic()

                def submit(i: int) -> None:
                    name = f"aw-{i:04d}"
                    created[name] = time.monotonic()
                    reply = session.post(f"{processes.url}{AW_PATH}/namespaces/{NAMESPACE}/appwrappers",
                                         data=json.dumps(appwrapper(name, args.pods, args.run_for)))
                    reply.raise_for_status()

                with ThreadPoolExecutor(8) as pool:
                    list(pool.map(submit, range(args.n)))
                finished = watch.done.wait(600)
                wall = time.monotonic() - start
                cpu = cpu_seconds(processes.controller.pid) - cpu_before
                time.sleep(3)  # the last Workloads' finish writes and Events, so that the counts include them
        finally:
            processes.stop()
        counted = processes.controller_requests()
    to_running = [watch.seen[n]["Running"] - t for n, t in created.items() if "Running" in watch.seen.get(n, {})]
    to_success = [watch.seen[n]["Succeeded"] - t for n, t in created.items() if "Succeeded" in watch.seen.get(n, {})]
    print(f"machine: {machine()}")
    print(f"{args.n} AppWrappers x {args.pods} pods (runFor {args.run_for}), {args.nodes} nodes, "
          f"controller --qps {args.qps:g} --burst {args.burst}; "
          f"{'all succeeded' if finished else 'TIMED OUT'}")
    print(f"create -> Running   ({len(to_running)}): {percentiles(to_running)}")
    print(f"create -> Succeeded ({len(to_success)}): {percentiles(to_success)}")
    print(f"wall time to the last success: {wall:.1f}s; controller CPU: {cpu:.1f}s "
          f"({cpu / max(args.n, 1) * 1000:.0f} ms per AppWrapper)")
    print(writes_per_appwrapper(counted, args.n))
    return 0 if finished else 1


if __name__ == "__main__":
    sys.exit(main())
