"""Benchmark process pods: the product's gateway run by the local cluster's kubelets.

Starts a local cluster with `--run-image batchgate:bench`, makes the gateway's TLS Secret, then
`kubectl apply`s a 2-replica Deployment of `batchgate webhook` shaped like manifests/webhook
(Secret volume at /certs, HTTPS readiness probe on /readyz, bound to its pod IP) and prints:
the time from the apply until both pods are Ready, each pod's start (created -> container
started -> Ready), and its added cost: the resident memory of all the pod's processes (the
gunicorn master and its workers). Repeats `--rounds` times with a fresh Deployment. Prints the
machine; asserts nothing.

    .venv/bin/python bench/localcluster_processes.py [--rounds 3] [--workers 1]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.machine_info import machine  # noqa: E402
from certs.authority import service_names, write_serving_files  # noqa: E402
from localcluster.controllers import DEFAULT_CONTROLLERS  # noqa: E402
from localcluster.runner import LocalCluster  # noqa: E402
from localcluster.sim.nodes import nodes_from_flags  # noqa: E402

IMAGE = "batchgate:bench"
NAMESPACE = "batchgate-system"


def deployment(name: str, workers: int) -> dict:
    container = {
        "name": "webhook", "image": IMAGE,
        "args": ["webhook", "--cert-dir", "/certs", "--host", "$(POD_IP)", "--port", "9443", "--workers", str(workers)],
        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        "ports": [{"containerPort": 9443, "name": "https"}],
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": 9443, "scheme": "HTTPS"}, "periodSeconds": 1},
        "volumeMounts": [{"name": "certs", "mountPath": "/certs", "readOnly": True}],
    }
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [container], "terminationGracePeriodSeconds": 5,
                                           "volumes": [{"name": "certs", "secret": {"secretName": "gateway-tls"}}]}}}}


def kubectl(kubeconfig: Path, *args: str, input: str | None = None) -> str:
    return subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args], input=input, text=True,
                          capture_output=True, check=True, timeout=120).stdout


def pods(kubeconfig: Path, app: str) -> list[dict]:
    return json.loads(kubectl(kubeconfig, "get", "pods", "-n", NAMESPACE, "-l", f"app={app}", "-o", "json"))["items"]


def ready(pod: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", []))


def rss_kib(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return 0


def pod_rss_kib(pod_name: str) -> int:
    """Resident memory of every process of a pod: they all carry HOSTNAME=<pod name> in their env."""
    marker = f"HOSTNAME={pod_name}".encode()
    total = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    total += rss_kib(int(entry.name))
            except OSError:
                continue
    return total


def seconds_between(a: str, b: str) -> float:
    parse = lambda t: dt.datetime.fromisoformat(t.replace("Z", "+00:00"))  # noqa: E731
    return (parse(b) - parse(a)).total_seconds()


def one_round(cluster: LocalCluster, name: str, workers: int) -> tuple[float, list[tuple[float, float, int]]]:
    started = time.monotonic()
    kubectl(cluster.kubeconfig, "apply", "-f", "-", input=json.dumps(deployment(name, workers)))
    while True:
        found = pods(cluster.kubeconfig, name)
        if len(found) == 2 and all(ready(p) for p in found):
            break
        time.sleep(0.05)
    elapsed = time.monotonic() - started
    time.sleep(1)  # let the workers settle before measuring memory
    per_pod = []
    for pod in found:
        created = pod["metadata"]["creationTimestamp"]
        running = pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
        ready_at = next(c["lastTransitionTime"] for c in pod["status"]["conditions"] if c["type"] == "Ready")
        per_pod.append((seconds_between(created, running), seconds_between(created, ready_at),
                        pod_rss_kib(pod["metadata"]["name"])))
    kubectl(cluster.kubeconfig, "delete", "deployment", name, "-n", NAMESPACE, "--wait=true")
    return elapsed, per_pod


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1, help="gunicorn workers per gateway pod")
    args = parser.parse_args(argv)
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as tmp, LocalCluster(Path(tmp) / "cluster", controllers=DEFAULT_CONTROLLERS,
                                                            nodes=nodes_from_flags(2, "8", "16Gi", 0),
                                                            run_images=[IMAGE]) as cluster:
        files = write_serving_files(Path(tmp) / "certs", service_names("gateway", NAMESPACE),
                                    dt.datetime.now(dt.timezone.utc))
        kubectl(cluster.kubeconfig, "create", "namespace", NAMESPACE)
        kubectl(cluster.kubeconfig, "create", "secret", "tls", "gateway-tls", "-n", NAMESPACE, f"--cert={files.cert}",
                f"--key={files.key}")
        totals, starts, readies, memory = [], [], [], []
        for i in range(args.rounds):
            elapsed, per_pod = one_round(cluster, f"gateway-{i}", args.workers)
            totals.append(elapsed)
            for start, ready_after, rss in per_pod:
                starts.append(start)
                readies.append(ready_after)
                memory.append(rss)
            print(f"round {i + 1}: apply -> 2/2 Ready in {elapsed:.2f} s; per pod: "
                  + ", ".join(f"started {s:.0f} s, Ready {r:.0f} s, RSS {m / 1024:.0f} MiB" for s, r, m in per_pod))
    print(f"apply of a 2-replica gateway Deployment -> both Ready: median {statistics.median(totals):.2f} s "
          f"(min {min(totals):.2f}, max {max(totals):.2f}) over {args.rounds} rounds")
    print(f"per process pod ({args.workers} gunicorn worker(s)): RSS median {statistics.median(memory) / 1024:.0f} MiB, "
          f"created -> Ready median {statistics.median(readies):.0f} s (timestamps have 1 s resolution); "
          f"(the cluster process itself: {rss_kib(os.getpid()) // 1024} MiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
