"""What admission costs the local cluster per write: the dispatcher calling a TLS webhook.

Measures admissions/s and p50/p99 latency of `WebhookDispatcher.admit` (one mutating and one
validating webhook, both allowing) against the small aiohttp TLS test webhook, with requests
issued one after another and 16 at a time on one event loop, as the API server does. Prints the
figures and the machine; never asserts.

Run: .venv/bin/python -m bench.admission_dispatch [--requests N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.machine_info import machine
from localcluster.apiserver.admission import AdmissionAttributes, WebhookDispatcher
from tests.localcluster.webhook_stub import WebhookStub

def configurations(stub: WebhookStub) -> dict[str, list[dict[str, Any]]]:
    def hook(name: str) -> dict[str, Any]:
        return {"name": name, "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "clientConfig": {"service": {"namespace": "hooks", "name": "stub", "path": "/allow"},
                                 "caBundle": stub.files.ca_bundle},
                "rules": [{"operations": ["CREATE"], "apiGroups": ["batch"], "apiVersions": ["v1"],
                           "resources": ["jobs"]}]}

    return {"MutatingWebhookConfiguration": [{"metadata": {"name": "m"}, "webhooks": [hook("mutate")]}],
            "ValidatingWebhookConfiguration": [{"metadata": {"name": "v"}, "webhooks": [hook("validate")]}]}


async def run(dispatcher: WebhookDispatcher, requests: int, concurrency: int) -> tuple[float, list[float]]:
    attrs = AdmissionAttributes("CREATE", "batch", "v1", "Job", "jobs", "", "team-a", "train",
                                {"username": "alice", "uid": "1001", "groups": ["system:authenticated"]})
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "team-a"},
           "spec": {"template": {"spec": {"restartPolicy": "Never",
                                          "containers": [{"name": "c", "image": "trainer:1"}]}}}}
    latencies: list[float] = []
    remaining = iter(range(requests))

    async def worker() -> None:
        for _ in remaining:
            start = time.perf_counter()
            await dispatcher.admit(attrs, job, None)
            latencies.append(time.perf_counter() - start)

    await dispatcher.admit(attrs, job, None)  # warm the connection pool
    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - start, latencies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args(argv)
    print(f"machine: {machine()}; webhook on the same host")
    with tempfile.TemporaryDirectory() as workdir, WebhookStub(Path(workdir)) as stub:
        configs = configurations(stub)
        dispatcher = WebhookDispatcher(configs.__getitem__, lambda namespace: {},
                                       lambda namespace, name, port: [("127.0.0.1", stub.port)])
        loop = asyncio.new_event_loop()
        try:
            for concurrency in (1, 16):
                elapsed, latencies = loop.run_until_complete(run(dispatcher, args.requests, concurrency))
                cuts = statistics.quantiles(latencies, n=100)
                print(f"concurrency {concurrency:>2}: {args.requests / elapsed:,.0f} admissions/s "
                      f"(2 webhook calls each), p50 {cuts[49] * 1000:.2f} ms, p99 {cuts[98] * 1000:.2f} ms")
        finally:
            loop.run_until_complete(dispatcher.close())
            loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
