"""Load on the gateway alone: AdmissionReviews over keep-alive TLS at 1 and 16 connections.

Starts `batchgate webhook` (real gunicorn, TLS, fresh certs) and POSTs the corpus
PyTorchJob-in-AppWrapper to /mutate from a separate load process: each connection is one thread
with its own http.client keep-alive connection verifying the CA. Prints requests/s and
p50/p99/p999 latency per concurrency, with the worker count and the machine. Never asserts.

    .venv/bin/python bench/webhook_load.py [--seconds 8] [--workers 2] [--threads 4] [--conns 1,16]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from batchgate.clock import SystemClock  # noqa: E402
from certs.authority import service_names, write_serving_files  # noqa: E402
from webhook.admission_review import review_document  # noqa: E402
from webhook.client import GatewayClient  # noqa: E402
from webhook.demo import request_for  # noqa: E402
from webhook.launch import start_gateway  # noqa: E402
from webhook.rules.review import UserInfo  # noqa: E402

MANIFEST = REPO.parent / "shared" / "corpus" / "mlbatch" / "pytorchjob-in-appwrapper.yaml"


def review_body() -> bytes:
    obj = yaml.safe_load(MANIFEST.read_text())
    obj.setdefault("metadata", {})["namespace"] = "team-a"
    user = UserInfo("alice", "uid-alice-1001", ("system:authenticated", "team-a"))
    return json.dumps(review_document(request_for(obj, user, resource="appwrappers"))).encode()


def _connection_loop(host: str, port: int, ca: str, body: bytes, warmup_until: float, stop_at: float,
                     latencies: list[float], errors: list[str]) -> None:
    client = GatewayClient(host, port, ca)
    while True:
        started = time.perf_counter()
        if started >= stop_at:
            break
        status, data, _ = client.request("POST", "/mutate", body)
        elapsed = time.perf_counter() - started
        if status != 200 or b'"allowed":true' not in data:
            errors.append(f"{status} {data[:120]!r}")
        elif started >= warmup_until:
            latencies.append(elapsed)
    client.close()


def load_process(host: str, port: int, ca: str, body: bytes, conns: int, warmup: float, seconds: float,
                 out: "multiprocessing.Queue[tuple[list[float], list[str]]]") -> None:
    """Runs in its own process so the generator does not share the server's GIL."""
    now = time.perf_counter()
    warmup_until, stop_at = now + warmup, now + warmup + seconds
    latencies: list[float] = []
    errors: list[str] = []
    threads = [threading.Thread(target=_connection_loop, args=(host, port, ca, body, warmup_until, stop_at,
                                                               latencies, errors)) for _ in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put((latencies, errors[:5] + [f"... {len(errors)} errors"] if errors else []))


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, max(0, int(round(q * len(sorted_values) + 0.5)) - 1))
    return sorted_values[index]


def measure(host: str, port: int, ca: str, body: bytes, conns: int, seconds: float, warmup: float) -> dict[str, float]:
    queue: multiprocessing.Queue = multiprocessing.Queue()
    proc = multiprocessing.Process(target=load_process, args=(host, port, ca, body, conns, warmup, seconds, queue))
    proc.start()
    latencies, errors = queue.get(timeout=warmup + seconds + 60)
    proc.join(timeout=30)
    latencies.sort()
    return {"conns": conns, "requests": len(latencies), "errors": len(errors), "error_sample": errors,
            "rps": len(latencies) / seconds, "p50": percentile(latencies, 0.50) * 1000,
            "p99": percentile(latencies, 0.99) * 1000, "p999": percentile(latencies, 0.999) * 1000}


def machine() -> str:
    model = ""
    try:
        model = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (f"{os.cpu_count()} CPUs ({model or platform.processor()}), {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}; load generator on the same host")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--warmup", type=float, default=1.5)
    p.add_argument("--workers", default="2")
    p.add_argument("--threads", default="4")
    p.add_argument("--conns", default="1,16")
    args = p.parse_args()
    if not MANIFEST.is_file():
        print(f"missing corpus manifest {MANIFEST}", file=sys.stderr)
        return 2
    body = review_body()
    with tempfile.TemporaryDirectory(prefix="batchgate-bench-") as tmp:
        cert_dir = Path(tmp)
        write_serving_files(cert_dir, service_names("batchgate-webhook", "batchgate-system"), SystemClock().now())
        gateway = start_gateway(cert_dir, "--workers", args.workers, "--threads", args.threads,
                                "--audit-log", str(cert_dir / "audit.log"))
        try:
            print(f"machine: {machine()}")
            print(f"gateway: gunicorn gthread, {args.workers} workers x {args.threads} threads, TLS (ECDSA P-256), "
                  f"audit log to a file, multiprocess metrics on; review: {MANIFEST.name} "
                  f"({len(body)} bytes) to /mutate")
            print(f"{'conns':>5} {'requests':>9} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'p999 ms':>8} {'errors':>6}")
            for conns in (int(c) for c in args.conns.split(",")):
                r = measure(gateway.host, gateway.port, str(cert_dir / "ca.crt"), body, conns, args.seconds, args.warmup)
                print(f"{r['conns']:>5} {r['requests']:>9} {r['rps']:>8.0f} {r['p50']:>8.2f} {r['p99']:>8.2f} "
                      f"{r['p999']:>8.2f} {r['errors']:>6}")
                for sample in r["error_sample"]:
                    print(f"      error: {sample}")
        finally:
            gateway.stop()
    print("peer (cited, research/perf-reliability.md 5): kopf 1.45.2 mutating webhook, same machine kind: "
          "c=1 ~1,190 req/s p99 1.2 ms; c=16 ~1,550 req/s p99 ~25 ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
