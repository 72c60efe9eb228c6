"""What one request costs the controller's own process: CPU per call of `KubeClient` (the one HTTP
edge of the controller, the gateway's reloader and the dashboard).

Starts the bare stand-in API server in its own process (so its work is not counted), then from one
thread makes `--requests` merge patches of a ConfigMap's data, then as many GETs of it, and
reads that thread's CPU time (`time.thread_time`) around each batch: client-side CPU per request,
the serializer, TLS, the transport's HTTP/1.1 and JSON included, the server's excluded. Prints the figures and
the machine; asserts nothing. Run it on two commits to compare.

    .venv/bin/python bench/kube_client_cost.py [--requests 1500] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.cluster_process import ClusterProcess  # noqa: E402
from bench.localcluster_api import API_ONLY  # noqa: E402
from bench.machine_info import machine  # noqa: E402
from controller.adapters.kube import RESOURCES, KubeClient  # noqa: E402

CONFIGMAP = RESOURCES["ConfigMap"]


def per_request_us(client: KubeClient, requests: int) -> tuple[float, float]:
    """Client CPU per merge patch and per GET, in µs, over `requests` of each."""
    start = time.thread_time()
    for i in range(requests):
        client.patch(CONFIGMAP, "cost", "default", {"data": {"n": str(i), "note": "x" * 200}})
    patched = time.thread_time()
    for _ in range(requests):
        client.get(CONFIGMAP, "cost", "default")
    got = time.thread_time()
    return 1e6 * (patched - start) / requests, 1e6 * (got - patched) / requests


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.requests < 1 or args.rounds < 1:
        parser.error("--requests and --rounds must be at least 1")
    with tempfile.TemporaryDirectory(prefix="bench-kube-client-") as tmp:
        work = Path(tmp)
        server = ClusterProcess(["-c", API_ONLY, str(work)], work, work / "kubeconfig")
        try:
            client = KubeClient.from_kubeconfig(str(work / "kubeconfig"))
            client.create(CONFIGMAP, {"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": {"name": "cost", "namespace": "default"}, "data": {}})
            per_request_us(client, 100)  # warm: connections open, code paths loaded
            rounds = [per_request_us(client, args.requests) for _ in range(args.rounds)]
        finally:
            server.process.terminate()
            server.process.wait(timeout=30)
    print(f"machine: {machine()}")
    print(f"{args.requests} requests a round, {args.rounds} rounds; client CPU per request, median (range):")
    for name, values in (("merge patch", [r[0] for r in rounds]), ("get", [r[1] for r in rounds])):
        print(f"  {name:<11}: {statistics.median(values):6.0f} µs ({min(values):.0f}-{max(values):.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
