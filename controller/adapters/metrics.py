"""Prometheus metrics and the probe endpoints (`/healthz`, `/readyz`, `/metrics`) of the controller.

The admission figures users watch — admitted, pending per ClusterQueue, cycle duration,
evictions — sit beside the runtime's own (informer relists, queue depth, leadership, status
conflicts). Served by the standard library's threading HTTP server: three read-only routes do
not need a framework.
"""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

log = logging.getLogger(__name__)


class ControllerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.admitted = Counter("batchgate_admitted_workloads_total", "Workloads admitted, per ClusterQueue",
                                ["cluster_queue"], registry=r)
        self.pending = Gauge("batchgate_pending_workloads", "Workloads waiting, per ClusterQueue and queue (active or inadmissible)",
                             ["cluster_queue", "status"], registry=r)
        self.cycle_duration = Histogram("batchgate_admission_cycle_duration_seconds", "Duration of one admission cycle",
                                        buckets=(0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5), registry=r)
        self.evictions = Counter("batchgate_evicted_workloads_total", "Workloads evicted, per ClusterQueue and reason",
                                 ["cluster_queue", "reason"], registry=r)
        self.preemption_skips = Gauge(
            "batchgate_admission_cycle_preemption_skips",
            "Heads of a ClusterQueue whose preemption the last cycle skipped because another head took the same "
            "capacity (Kueue's admission_cycle_preemption_skips)", ["cluster_queue"], registry=r)
        self.relists = Counter("batchgate_informer_relists_total", "Full lists per kind (start and after 410)",
                               ["kind"], registry=r)
        self.queue_depth = Gauge("batchgate_workqueue_depth", "Keys waiting in the work queue", registry=r)
        self.reconciles = Counter("batchgate_reconciles_total", "Reconciles per kind and outcome", ["kind", "outcome"],
                                  registry=r)
        self.leader = Gauge("batchgate_leader", "1 while this process holds the Lease", registry=r)
        self.policy_errors = Counter("batchgate_policy_errors_total", "Invalid policy ConfigMaps seen (last good kept)",
                                     registry=r)
        self.appwrapper_phase = Counter("appwrapper_phase_total", "AppWrapper phase transitions, per namespace and phase entered",
                                        ["namespace", "phase"], registry=r)
        self.status_conflicts = Counter("batchgate_status_conflicts_total", "Status writes retried after a conflict",
                                        registry=r)
        self.pod_bindings = Counter("batchgate_pod_bindings_total",
                                    "Pods the gang scheduler bound (bound) or whose bind was refused (refused)",
                                    ["outcome"], registry=r)
        self.placement_duration = Histogram("batchgate_gang_placement_duration_seconds",
                                            "Duration of one gang placement decision",
                                            buckets=(0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5), registry=r)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class ProbeServer:
    """Serves the probes on `address:port` (port 0 picks a free one; see `.port`)."""

    def __init__(self, metrics: ControllerMetrics, healthy: Callable[[], bool], ready: Callable[[], bool],
                 address: str = "127.0.0.1", port: int = 0) -> None:

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server naming)
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._reply(200, metrics.exposition(), CONTENT_TYPE_LATEST)
                elif path in ("/healthz", "/readyz"):
                    ok = (healthy if path == "/healthz" else ready)()
                    self._reply(200 if ok else 503, b"ok\n" if ok else b"not ready\n", "text/plain")
                else:
                    self._reply(404, b"not found\n", "text/plain")

            def _reply(self, code: int, body: bytes, content_type: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                log.debug("probe %s", format % args)

        self.server = ThreadingHTTPServer((address, port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, name="probes", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
