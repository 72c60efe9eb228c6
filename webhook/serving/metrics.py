"""Prometheus metrics that add up across gunicorn workers.

With `PROMETHEUS_MULTIPROC_DIR` set (the `batchgate webhook` command makes one per run, before
any worker imports prometheus_client) every worker writes its samples to mmap files there and
`/metrics` merges them; without it (tests, the offline review) each app has its own registry.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from cryptography import x509
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client import multiprocess
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from batchgate.kinds import QUEUED_BY_QUALIFIED
from batchgate.policy import Policy
from certs.authority import CA_CERT, TLS_CERT

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
"""Seconds; a webhook answers in milliseconds (perf-reliability 1.1), so the buckets start low."""


ROUTED_KINDS = frozenset({
    *QUEUED_BY_QUALIFIED, "CronJob.batch", "Pod", "ReplicationController", "Deployment.apps", "StatefulSet.apps",
    "DaemonSet.apps", "ReplicaSet.apps", "JobSet.jobset.x-k8s.io", "LeaderWorkerSet.leaderworkerset.x-k8s.io",
    "ClusterQueue.kueue.x-k8s.io", "ConfigMap",
})
"""The kinds the shipped webhook configurations send us (manifests/webhook)."""
OTHER_KIND = "other"


def kind_label(kind: str, policy: Policy | None) -> str:
    """The `kind` label: a kind we are sent or the policy names, else "other". The kind comes
    from the request, and a label taken from the request unchecked would grow a new series
    for every made-up kind (the API server sends whatever CRDs a webhook rule matches)."""
    if kind in ROUTED_KINDS:
        return kind
    if policy is not None and (kind in policy.allowed_kinds.top_level or kind in policy.allowed_kinds.wrapped):
        return kind
    return OTHER_KIND


CERTIFICATE_EXPIRY = "batchgate_webhook_certificate_expiry_timestamp_seconds"


class CertificateExpiry(Collector):
    """When the certificates in the serving directory expire (notAfter, Unix seconds), read from
    the files at each scrape, so a rotation shows at the next scrape and every worker reports the
    same. `certificate` is `serving` (tls.crt, the first in the chain) or `ca` (ca.crt, the first
    CA). A file missing or unreadable has no series: the gateway cannot be serving it either."""

    def __init__(self, cert_dir: Path) -> None:
        self.files = {"serving": cert_dir / TLS_CERT, "ca": cert_dir / CA_CERT}

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(CERTIFICATE_EXPIRY, "When the certificate expires (notAfter), in Unix seconds, "
                                   "by certificate (serving or ca)", labels=["certificate"])
        for name, path in self.files.items():
            try:
                certificate = x509.load_pem_x509_certificate(path.read_bytes())
            except (OSError, ValueError):
                continue
            family.add_metric([name], certificate.not_valid_after_utc.timestamp())
        yield family


class GatewayMetrics:
    """The gateway's counters and latency histogram, bound to one registry; with `cert_dir`, also
    the expiry of the certificates it serves."""

    def __init__(self, cert_dir: Path | None = None) -> None:
        self.registry = CollectorRegistry()
        self.certificates = CertificateExpiry(cert_dir) if cert_dir is not None else None
        if self.certificates is not None:
            self.registry.register(self.certificates)
        self.reviews = Counter(
            "batchgate_webhook_reviews_total",
            "AdmissionReviews answered, by endpoint, kind, operation and outcome (the rule that decided). "
            "Every label comes from a bounded set.",
            ["endpoint", "kind", "operation", "allowed", "code", "rule"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "batchgate_webhook_review_duration_seconds",
            "Time from reading a review to having its reply, by endpoint.",
            ["endpoint"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.policy_loads = Counter(
            "batchgate_policy_loads_total",
            "Valid policies installed (a changed version), by source.",
            ["source"],
            registry=self.registry,
        )
        self.policy_errors = Counter(
            "batchgate_policy_errors_total",
            "Invalid policies seen and rejected (the last good one stayed in force), by source.",
            ["source"],
            registry=self.registry,
        )

        self.audit_errors = Counter(
            "batchgate_audit_write_errors_total",
            "Audit lines that could not be written (the review was still answered).",
            registry=self.registry,
        )

    def render(self) -> tuple[bytes, str]:
        """The exposition text: merged over all workers in multiprocess mode."""
        if os.environ.get(MULTIPROC_ENV):
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
            if self.certificates is not None:
                registry.register(self.certificates)
            return generate_latest(registry), CONTENT_TYPE_LATEST
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


def worker_exited(pid: int) -> None:
    """Drop a dead worker's live-gauge files (counters stay: they are totals since start)."""
    if os.environ.get(MULTIPROC_ENV):
        multiprocess.mark_process_dead(pid)
