"""Benchmark the local cluster's API server the way clients use it.

Runs `batchgate cluster` in its own process (so client and server do not share a GIL) and
measures, with the real `kubernetes` client over keep-alive HTTPS: creates/s and gets/s with 1
and 8 client threads; list latency at 10,000 and 50,000 objects; watch delivery latency to 100
concurrent watchers; server memory per 10,000 objects; and 15,000 Jobs (the quota-admission
scale) created and listed. Prints figures and the machine; asserts nothing.

    .venv/bin/python bench/localcluster_api.py [--quick] [--api-only]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import ssl
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import aiohttp
import requests
from kubernetes import client, config

from bench.cluster_process import ClusterProcess, cluster_command
from bench.machine_info import machine


# The bare API server, without simulated nodes and controllers, in its own process.
API_ONLY = """
import sys, threading
from pathlib import Path
from localcluster.runner import LocalCluster
cluster = LocalCluster(Path(sys.argv[1])).start()
print("press Ctrl-C to stop", flush=True)
try:
    threading.Event().wait()
except KeyboardInterrupt:
    cluster.stop()
"""


class Server:
    def __init__(self, workdir: Path, api_only: bool = False) -> None:
        self.kubeconfig = workdir / "kubeconfig"
        command = ["-c", API_ONLY, str(workdir)] if api_only else cluster_command(workdir, self.kubeconfig)
        started = ClusterProcess(command, workdir, self.kubeconfig)
        self.process, self.url, self.token, self.ca_file = started.process, started.url, started.token, started.ca_file

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=30)


def api(server: Server) -> client.ApiClient:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(server.kubeconfig), client_configuration=configuration)
    return client.ApiClient(configuration)


def drain(response) -> None:
    """Read the body so urllib3 returns the connection to its pool (keep-alive)."""
    _ = response.data
    response.release_conn()


def rate(label: str, count: int, threads: int, work: Callable[[client.CoreV1Api, int], None], server: Server) -> float:
    apis = [client.CoreV1Api(api(server)) for _ in range(threads)]
    per_thread = count // threads
    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda t: [work(apis[t], t * per_thread + i) for i in range(per_thread)], range(threads)))
    elapsed = time.perf_counter() - start
    value = per_thread * threads / elapsed
    print(f"  {label:<34} {value:>9,.0f} /s   ({per_thread * threads} requests, {threads} thread(s))")
    return value


def create_many(server: Server, namespace: str, count: int, threads: int = 8, kind: str = "configmap") -> float:
    def job(i: int) -> dict:
        return {"metadata": {"name": f"job-{i}", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
                "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never", "containers": [
                    {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}}

    def work(t: int) -> None:
        local_core, local_batch = client.CoreV1Api(api(server)), client.BatchV1Api(api(server))
        for i in range(t, count, threads):
            if kind == "job":
                drain(local_batch.create_namespaced_job(namespace, job(i), _preload_content=False))
            else:
                drain(local_core.create_namespaced_config_map(
                    namespace, {"metadata": {"name": f"cm-{i}", "labels": {"i": str(i % 10)}}, "data": {"k": "v" * 200}},
                    _preload_content=False))

    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(work, range(threads)))
    return count / (time.perf_counter() - start)


def list_latency(server: Server, path: str, repeats: int = 5) -> tuple[float, int]:
    """Median wall time of a LIST, body fully read (no model parsing), over one keep-alive connection."""
    session = requests.Session()
    session.trust_env = False
    session.verify = str(server.ca_file)
    session.headers.update({"Authorization": f"Bearer {server.token}", "Accept": "application/json"})
    times, size = [], 0
    with session:
        session.get(server.url + "/version")
        for _ in range(repeats):
            start = time.perf_counter()
            body = session.get(server.url + path, timeout=120).content
            times.append(time.perf_counter() - start)
            size = len(body)
    return statistics.median(times), size


async def watch_latency(server: Server, namespace: str, watchers: int, events: int) -> list[float]:
    context = ssl.create_default_context(cafile=str(server.ca_file))
    headers = {"Authorization": f"Bearer {server.token}"}
    received: list[float] = []
    started = asyncio.Event()
    ready = 0

    async def follow(session: aiohttp.ClientSession, rv: str) -> None:
        nonlocal ready
        url = f"{server.url}/api/v1/namespaces/{namespace}/configmaps?watch=1&resourceVersion={rv}&timeoutSeconds=120"
        async with session.get(url, headers=headers, ssl=context) as response:
            ready += 1
            if ready == watchers:
                started.set()
            seen = 0
            async for line in response.content:
                event = json.loads(line)
                sent = float(event["object"]["data"]["sent"])
                received.append(time.time() - sent)
                seen += 1
                if seen == events:
                    return

    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.get(f"{server.url}/api/v1/namespaces/{namespace}/configmaps", headers=headers, ssl=context) as r:
            rv = (await r.json())["metadata"]["resourceVersion"]
        tasks = [asyncio.create_task(follow(session, rv)) for _ in range(watchers)]
        await asyncio.wait_for(started.wait(), 60)
        await asyncio.sleep(0.5)

        def writer() -> None:
            core = client.CoreV1Api(api(server))
            for i in range(events):
                drain(core.create_namespaced_config_map(namespace, {"metadata": {"name": f"w-{i}"},
                                                                    "data": {"sent": repr(time.time())}},
                                                        _preload_content=False))
                time.sleep(0.02)

        thread = threading.Thread(target=writer)
        thread.start()
        await asyncio.wait_for(asyncio.gather(*tasks), 120)
        thread.join()
    return received


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller counts (a smoke run)")
    parser.add_argument("--api-only", action="store_true",
                        help="measure the bare API server (no simulated nodes and controllers)")
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    print(f"localcluster API benchmark on {machine()}, load average {os.getloadavg()[0]:.1f}")
    if args.api_only:
        print("(the measured process is the bare API server: LocalCluster without controllers)")
    else:
        print("(the measured process is `batchgate cluster`: API server plus its simulated nodes and controllers)")
    with tempfile.TemporaryDirectory() as work:
        server = Server(Path(work), api_only=args.api_only)
        try:
            core = client.CoreV1Api(api(server))
            for ns in ("bench-rate", "bench-10k", "bench-50k", "bench-watch", "bench-jobs"):
                core.create_namespace({"metadata": {"name": ns}})
            print("requests over keep-alive HTTPS (kubernetes client):")
            n1, n8 = 2000 // scale, 8000 // scale
            rate("creates, 1 thread", n1, 1, lambda a, i: drain(a.create_namespaced_config_map(
                "bench-rate", {"metadata": {"name": f"a-{i}"}}, _preload_content=False)), server)
            rate("creates, 8 threads", n8, 8, lambda a, i: drain(a.create_namespaced_config_map(
                "bench-rate", {"metadata": {"name": f"b-{i}"}}, _preload_content=False)), server)
            rate("gets, 1 thread", n1, 1, lambda a, i: drain(a.read_namespaced_config_map(
                f"a-{i % n1}", "bench-rate", _preload_content=False)), server)
            rate("gets, 8 threads", n8, 8, lambda a, i: drain(a.read_namespaced_config_map(
                f"b-{i % n8}", "bench-rate", _preload_content=False)), server)

            before = server.rss_mib()
            count = 10_000 // scale
            speed = create_many(server, "bench-10k", count)
            after = server.rss_mib()
            latency, size = list_latency(server, "/api/v1/namespaces/bench-10k/configmaps")
            print(f"list of {count:,} configmaps: {latency * 1000:,.0f} ms median ({size / 1e6:.1f} MB); "
                  f"created at {speed:,.0f}/s")
            print(f"server memory: {after - before:,.1f} MiB per {count:,} configmaps (RSS {after:,.0f} MiB)")
            selected, _ = list_latency(server, "/api/v1/namespaces/bench-10k/configmaps?labelSelector=i%3D3")
            print(f"list with a label selector over {count:,}: {selected * 1000:,.0f} ms median")

            count50 = 40_000 // scale
            create_many(server, "bench-50k", count50)
            latency, size = list_latency(server, "/api/v1/configmaps", repeats=3)
            total = count + count50 + n1 + n8
            print(f"list of {total:,} configmaps (all namespaces): {latency * 1000:,.0f} ms median ({size / 1e6:.1f} MB); "
                  f"server RSS {server.rss_mib():,.0f} MiB")
            paged, _ = list_latency(server, "/api/v1/configmaps?limit=500")
            print(f"first page (limit=500) of {total:,}: {paged * 1000:,.0f} ms median")

            jobs = 15_000 // scale
            before = server.rss_mib()
            speed = create_many(server, "bench-jobs", jobs, kind="job")
            latency, size = list_latency(server, "/apis/batch/v1/namespaces/bench-jobs/jobs", repeats=3)
            print(f"{jobs:,} Jobs: created at {speed:,.0f}/s, listed in {latency * 1000:,.0f} ms "
                  f"({size / 1e6:.1f} MB), +{server.rss_mib() - before:,.0f} MiB")

            received = asyncio.run(watch_latency(server, "bench-watch", 100, 50 // (5 if args.quick else 1)))
            print(f"watch delivery to 100 watchers ({len(received):,} events): p50 {percentile(received, 50) * 1000:.1f} ms, "
                  f"p99 {percentile(received, 99) * 1000:.1f} ms, max {max(received) * 1000:.1f} ms")
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
