"""Benchmark the simulated cluster running pods: scheduler, kubelets and API server together.

Starts `batchgate cluster --nodes 100` in its own process, creates N bare pods (cpu 100m,
behaviour `runFor: 1s`, restartPolicy Never) with 8 client threads, and follows one watch on
all pods. Prints, for N = 1,000 and 10,000 (a fresh cluster each): pods scheduled per second
(N / time from the first create to the last binding), pods run per second (N / time to the last
Succeeded), and the scheduler's create->bound latency (p50, p95, max; from the pod's ADDED event
to the event showing its nodeName) -- saturated there, so first the same latency with 200 pods
created at a steady 10/s. Prints the machine; asserts nothing.

    .venv/bin/python bench/localcluster_pods.py [--quick] [--nodes 100]
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from bench.cluster_process import ClusterProcess, admin_session, cluster_command
from bench.machine_info import machine

BEHAVIOR = json.dumps({"runFor": "1s"})


class Cluster:
    def __init__(self, workdir: Path, nodes: int) -> None:
        kubeconfig = workdir / "kubeconfig"
        started = ClusterProcess(cluster_command(workdir, kubeconfig, "--nodes", str(nodes), "--node-cpu", "64",
                                                 "--node-memory", "256Gi", "--node-gpus", "8"), workdir, kubeconfig)
        self.process, self.url, self.token, self.ca_file = started.process, started.url, started.token, started.ca_file

    def session(self) -> requests.Session:
        return admin_session(self.token, self.ca_file)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=60)


def wait_for_nodes(cluster: Cluster, count: int) -> None:
    with cluster.session() as session:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            nodes = session.get(cluster.url + "/api/v1/nodes").json().get("items") or []
            ready = [n for n in nodes if (n.get("status") or {}).get("allocatable")]
            if len(ready) >= count:
                return
            time.sleep(0.2)
    raise RuntimeError("nodes did not register")


class Follower(threading.Thread):
    """One watch on all pods: when each was first seen, bound, and finished."""

    def __init__(self, cluster: Cluster, namespace: str, expected: int) -> None:
        super().__init__(daemon=True)
        self.cluster, self.namespace, self.expected = cluster, namespace, expected
        self.added: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self.done: dict[str, float] = {}
        self.finished = threading.Event()
        self.ready = threading.Event()

    def run(self) -> None:
        path = f"{self.cluster.url}/api/v1/namespaces/{self.namespace}/pods"
        with self.cluster.session() as session:
            rv = self.relist(session, path)
            while not self.finished.is_set():
                params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "600"}
                try:
                    with session.get(path, params=params, stream=True, timeout=700) as response:
                        self.ready.set()
                        for line in response.iter_lines():
                            if not line:
                                continue
                            event = json.loads(line)
                            if event["type"] == "ERROR":  # too far behind: catch up from a list
                                rv = self.relist(session, path)
                                break
                            pod = event["object"]
                            rv = pod["metadata"].get("resourceVersion", rv)
                            self.note(pod, time.perf_counter())
                            if len(self.done) >= self.expected:
                                self.finished.set()
                                return
                except requests.RequestException:
                    rv = self.relist(session, path)

    def relist(self, session: requests.Session, path: str) -> str:
        body = session.get(path).json()
        now = time.perf_counter()
        for pod in body["items"]:
            self.note(pod, now)
        if len(self.done) >= self.expected:
            self.finished.set()
        return body["metadata"]["resourceVersion"]

    def note(self, pod: dict, now: float) -> None:
        name = pod["metadata"]["name"]
        self.added.setdefault(name, now)
        if pod["spec"].get("nodeName"):
            self.bound.setdefault(name, now)
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            self.done.setdefault(name, now)


def run(count: int, nodes: int, pace: float | None = None) -> dict[str, float]:
    """Create `count` pods as fast as 8 threads can (or one every 1/pace s) and follow them."""
    with tempfile.TemporaryDirectory() as tmp:
        cluster = Cluster(Path(tmp), nodes)
        try:
            wait_for_nodes(cluster, nodes)
            namespace = "bench"
            with cluster.session() as session:
                session.post(cluster.url + "/api/v1/namespaces", json={"metadata": {"name": namespace}}).raise_for_status()
            follower = Follower(cluster, namespace, count)
            follower.start()
            follower.ready.wait(30)
            threads = 1 if pace else 8
            start = time.perf_counter()

            def create(t: int) -> None:
                with cluster.session() as session:
                    for i in range(t, count, threads):
                        if pace:
                            time.sleep(max(start + i / pace - time.perf_counter(), 0))
                        body = {"apiVersion": "v1", "kind": "Pod",
                                "metadata": {"name": f"p-{i}", "annotations": {"localcluster.batchgate.dev/behavior": BEHAVIOR}},
                                "spec": {"restartPolicy": "Never", "containers": [
                                    {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}]}}
                        session.post(f"{cluster.url}/api/v1/namespaces/{namespace}/pods", json=body).raise_for_status()

            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(create, range(threads)))
            created = time.perf_counter()
            follower.finished.wait(120 + count * 0.1)
            latencies = sorted(follower.bound[n] - follower.added[n] for n in follower.bound if n in follower.added)
            last_bound = max(follower.bound.values(), default=float("nan"))
            last_done = max(follower.done.values(), default=float("nan"))
            return {
                "pods": count,
                "bound": len(follower.bound),
                "succeeded": len(follower.done),
                "create_rate": count / (created - start),
                "scheduled_per_s": len(follower.bound) / (last_bound - start),
                "run_per_s": len(follower.done) / (last_done - start),
                "p50_ms": statistics.median(latencies) * 1000 if latencies else float("nan"),
                "p95_ms": latencies[int(len(latencies) * 0.95) - 1] * 1000 if latencies else float("nan"),
                "max_ms": latencies[-1] * 1000 if latencies else float("nan"),
            }
        finally:
            cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="only 1,000 pods")
    parser.add_argument("--nodes", type=int, default=100)
    args = parser.parse_args()
    print(f"machine: {machine()}")
    print(f"simulated nodes: {args.nodes} (64 cpu, 256Gi, 8 gpus each); pods: cpu 100m, runFor 1s, restartPolicy Never")
    r = run(200, args.nodes, pace=10)
    print(f"  200 pods created at a steady 10/s: create->bound p50 {r['p50_ms']:,.0f} ms, p95 {r['p95_ms']:,.0f} ms, "
          f"max {r['max_ms']:,.0f} ms (the scheduler unsaturated)", flush=True)
    for count in [1000] if args.quick else [1000, 10000]:
        r = run(count, args.nodes)
        print(f"  {count:>6,} pods: created {r['create_rate']:>6,.0f}/s | scheduled {r['scheduled_per_s']:>6,.0f}/s "
              f"| run to Succeeded {r['run_per_s']:>6,.0f}/s | create->bound p50 {r['p50_ms']:,.0f} ms, "
              f"p95 {r['p95_ms']:,.0f} ms, max {r['max_ms']:,.0f} ms | bound {r['bound']}, succeeded {r['succeeded']}",
              flush=True)


if __name__ == "__main__":
    main()
