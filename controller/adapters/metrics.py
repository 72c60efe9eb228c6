"""Prometheus metrics and the probe endpoints (`/healthz`, `/readyz`, `/metrics`) of the controller.

The admission figures users watch — admitted, pending per ClusterQueue, cycle duration,
evictions — sit beside the runtime's own (informer relists, queue depth, leadership, status
conflicts), and so do Kueue v0.10's names and labels (`kueue_*`, `KueueMetrics`) and the
AppWrapper controller's `appwrapper_phase_total`, so MLBatch's dashboards and alerts keep working. Served by the standard library's threading HTTP server: three read-only routes do
not need a framework.
"""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Mapping

from controller.decisions.quota.kueue_metrics import CQ_STATUSES, ClusterQueueFigures, wait_buckets

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

log = logging.getLogger(__name__)


class ControllerMetrics:
    """`kueue_compatible` False (`--no-kueue-metrics`) leaves Kueue's names out: neither exported
    nor computed (for clusters that do not want ~30 more series per ClusterQueue)."""

    def __init__(self, kueue_compatible: bool = True) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.admitted = Counter("batchgate_admitted_workloads_total", "Workloads admitted, per ClusterQueue",
                                ["cluster_queue"], registry=r)
        self.pending = Series(Gauge(
            "batchgate_pending_workloads", "Workloads waiting, per ClusterQueue and queue (active or inadmissible)",
            ["cluster_queue", "status"], registry=r))
        self.cycle_duration = Histogram("batchgate_admission_cycle_duration_seconds", "Duration of one admission cycle",
                                        buckets=(0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5), registry=r)
        self.evictions = Counter("batchgate_evicted_workloads_total", "Workloads evicted, per ClusterQueue and reason",
                                 ["cluster_queue", "reason"], registry=r)
        self.preemption_skips = Series(Gauge(
            "batchgate_admission_cycle_preemption_skips",
            "Heads of a ClusterQueue whose preemption the last cycle skipped because another head took the same "
            "capacity (Kueue's admission_cycle_preemption_skips)", ["cluster_queue"], registry=r))
        self.relists = Counter("batchgate_informer_relists_total", "Full lists per kind (start and after 410)",
                               ["kind"], registry=r)
        self.missed_changes = Counter("batchgate_informer_missed_changes_total",
                                      "Changes a periodic relist found that the watch should already have delivered "
                                      "(the object's resourceVersion not newer than the watch's), per kind: a watch "
                                      "that went silent or lost events", ["kind"], registry=r)
        self.queue_depth = Gauge("batchgate_workqueue_depth", "Keys waiting in each reconciler's work queue",
                                 ["controller"], registry=r)
        self.reconciles = Counter("batchgate_reconciles_total", "Reconciles per reconciler, kind and outcome",
                                  ["controller", "kind", "outcome"], registry=r)
        self.leader = Gauge("batchgate_leader", "1 while this process holds the Lease", registry=r)
        self.policy_errors = Counter("batchgate_policy_errors_total",
                                     "Invalid policies seen and rejected (the last good one stayed in force), by "
                                     "source (the gateway's metric of the same name)", ["source"], registry=r)
        self.kueue = KueueMetrics(r) if kueue_compatible else None
        # project-codeflare/appwrapper internal/metrics/metrics.go: the same name, labels and type.
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

    def evicted(self, cluster_queue: str, reason: str) -> None:
        self.evictions.labels(cluster_queue, reason).inc()
        if self.kueue is not None:
            self.kueue.evicted.labels(cluster_queue, reason).inc()

    def show_preemption_skips(self, skips: Mapping[tuple[str, ...], float]) -> None:
        """Every ClusterQueue's skipped preemptions of the last cycle (batchgate's and Kueue's gauge)."""
        self.preemption_skips.show(skips)
        if self.kueue is not None:
            self.kueue.preemption_skips.show(skips)

    def show_cluster_queues(self, figures: list[ClusterQueueFigures]) -> None:
        """Set every per-ClusterQueue gauge (batchgate's and Kueue's) from `figures`; queues gone are dropped."""
        pending: dict[tuple[str, ...], float] = {(f.name, s): n for f in figures for s, n in (("active", f.pending_active),
                                                                ("inadmissible", f.pending_inadmissible))}
        self.pending.show(pending)
        if self.kueue is not None:
            self.kueue.show(figures, pending)


GO_DEFAULT_BUCKETS = (.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10)  # client_golang's DefBuckets (Kueue sets none)


class KueueMetrics:
    """Kueue v0.10.2's metrics (kubernetes-sigs/kueue pkg/metrics/metrics.go): names, labels, types, buckets."""

    def __init__(self, r: CollectorRegistry) -> None:
        cq, quota = ["cluster_queue"], ["cohort", "cluster_queue", "flavor", "resource"]

        def series(name: str, help_: str, labels: list[str]) -> Series:
            return Series(Gauge(name, help_, labels, registry=r))

        def waits(name: str, help_: str) -> Histogram:
            return Histogram(name, help_, cq, buckets=wait_buckets(14), registry=r)

        self.attempts = Counter("kueue_admission_attempts_total", "Admission cycles that looked at a head, by result "
                                "(success: something was admitted)", ["result"], registry=r)
        self.attempt_duration = Histogram("kueue_admission_attempt_duration_seconds", "Decision time of those cycles, "
                                          "by result", ["result"], buckets=GO_DEFAULT_BUCKETS, registry=r)
        self.pending = series("kueue_pending_workloads", "Pending workloads, per ClusterQueue and status "
                              "(active or inadmissible)", ["cluster_queue", "status"])
        self.reserving = series("kueue_reserving_active_workloads", "Workloads holding quota, per ClusterQueue", cq)
        self.admitted_active = series("kueue_admitted_active_workloads", "Admitted unfinished workloads, per "
                                      "ClusterQueue", cq)
        self.quota_reserved = Counter("kueue_quota_reserved_workloads_total", "Quota reservations, per ClusterQueue",
                                      cq, registry=r)
        self.quota_reserved_wait = waits("kueue_quota_reserved_wait_time_seconds", "Time from creation or last "
                                         "requeue to quota reservation, per ClusterQueue")
        self.admitted = Counter("kueue_admitted_workloads_total", "Admissions, per ClusterQueue", cq, registry=r)
        self.admission_wait = waits("kueue_admission_wait_time_seconds", "Time from creation or last requeue to "
                                    "admission, per ClusterQueue")
        self.evicted = Counter("kueue_evicted_workloads_total", "Evictions, per ClusterQueue and reason",
                               ["cluster_queue", "reason"], registry=r)
        self.preempted = Counter("kueue_preempted_workloads_total", "Workloads preempted, per preempting "
                                 "ClusterQueue and reason", ["preempting_cluster_queue", "reason"], registry=r)
        self.status = series("kueue_cluster_queue_status", "1 for the status the ClusterQueue is in (pending, "
                             "active, terminating), else 0", ["cluster_queue", "status"])
        self.reservation = series("kueue_cluster_queue_resource_reservation", "Quota reserved, per flavor and "
                                  "resource", quota)
        self.usage = series("kueue_cluster_queue_resource_usage", "Quota used by admitted workloads, per flavor "
                            "and resource", quota)
        self.nominal = series("kueue_cluster_queue_nominal_quota", "Nominal quota, per flavor and resource", quota)
        self.borrowing_limit = series("kueue_cluster_queue_borrowing_limit", "Borrowing limit (0: none), per "
                                      "flavor and resource", quota)
        self.lending_limit = series("kueue_cluster_queue_lending_limit", "Lending limit (0: none), per flavor and "
                                    "resource", quota)
        self.weighted_share = series("kueue_cluster_queue_weighted_share", "Dominant resource share above nominal "
                                     "quota, per 1000 of what the cohort lends, divided by the weight (fair sharing "
                                     "only)", cq)
        self.preemption_skips = series("kueue_admission_cycle_preemption_skips", "Heads whose preemption the last "
                                       "cycle skipped because another head took the same capacity", cq)

    def attempt(self, result: str, seconds: float) -> None:
        self.attempts.labels(result).inc()
        self.attempt_duration.labels(result).observe(seconds)

    def reserved_and_admitted(self, cluster_queue: str, wait_seconds: float) -> None:
        """No admission checks: quota reservation and admission are one event, as Kueue records it then."""
        self.quota_reserved.labels(cluster_queue).inc()
        self.quota_reserved_wait.labels(cluster_queue).observe(wait_seconds)
        self.admitted.labels(cluster_queue).inc()
        self.admission_wait.labels(cluster_queue).observe(wait_seconds)

    def show(self, figures: list[ClusterQueueFigures], pending: Mapping[tuple[str, ...], float]) -> None:
        self.pending.show(pending)
        self.reserving.show({(f.name,): f.reserving for f in figures})
        self.admitted_active.show({(f.name,): f.admitted for f in figures})
        self.status.show({(f.name, s): float(s == f.status) for f in figures for s in CQ_STATUSES})
        self.weighted_share.show({(f.name,): f.weighted_share for f in figures if f.weighted_share is not None})
        for series, field in ((self.reservation, "reservation"), (self.usage, "usage"), (self.nominal, "nominal"),
                              (self.borrowing_limit, "borrowing_limit"), (self.lending_limit, "lending_limit")):
            series.show({(f.cohort, f.name, flavor, resource): getattr(values, field)
                         for f in figures for (flavor, resource), values in f.resources.items()})


class Series:
    """A labelled gauge set as a whole: series no longer present are removed (a queue deleted), and
    only values that changed are written (the admission loop shows one per queue every cycle, and
    a cycle rarely changes any: bench/kueue_metrics_cpu.py)."""

    def __init__(self, gauge: Gauge) -> None:
        self.gauge = gauge
        self._shown: dict[tuple[str, ...], float] = {}

    def show(self, values: Mapping[tuple[str, ...], float]) -> None:
        for labels in self._shown.keys() - values.keys():
            self.gauge.remove(*labels)
        for labels, value in values.items():
            if self._shown.get(labels) != value:
                self.gauge.labels(*labels).set(value)
        self._shown = dict(values)


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
