"""/healthz, /readyz and /metrics over real HTTP."""

from __future__ import annotations

from typing import Iterator

import pytest
import requests

from controller.adapters.metrics import ControllerMetrics, ProbeServer
from controller.decisions.quota.kueue_metrics import ClusterQueueFigures, ResourceFigures


@pytest.fixture
def probes() -> Iterator[tuple[ProbeServer, dict[str, bool], ControllerMetrics]]:
    state = {"healthy": True, "ready": False}
    metrics = ControllerMetrics()
    server = ProbeServer(metrics, lambda: state["healthy"], lambda: state["ready"], "127.0.0.1", 0)
    server.start()
    yield server, state, metrics
    server.stop()


def url(server: ProbeServer, path: str) -> str:
    return f"http://127.0.0.1:{server.port}{path}"


def test_readyz_follows_the_cache_sync_and_healthz_the_process(probes) -> None:
    server, state, _ = probes
    assert requests.get(url(server, "/healthz"), timeout=5).status_code == 200
    assert requests.get(url(server, "/readyz"), timeout=5).status_code == 503
    state["ready"] = True
    assert requests.get(url(server, "/readyz"), timeout=5).text == "ok\n"
    state["healthy"] = False
    assert requests.get(url(server, "/healthz"), timeout=5).status_code == 503


def test_metrics_expose_admissions_pending_cycles_and_evictions(probes) -> None:
    server, _, metrics = probes
    metrics.admitted.labels("team-a").inc(3)
    metrics.pending.gauge.labels("team-a", "inadmissible").set(2)
    metrics.cycle_duration.observe(0.004)
    metrics.evictions.labels("team-a", "Preempted").inc()
    reply = requests.get(url(server, "/metrics"), timeout=5)
    assert reply.status_code == 200 and reply.headers["Content-Type"].startswith("text/plain")
    body = reply.text
    assert 'batchgate_admitted_workloads_total{cluster_queue="team-a"} 3.0' in body
    assert 'batchgate_pending_workloads{cluster_queue="team-a",status="inadmissible"} 2.0' in body
    assert "batchgate_admission_cycle_duration_seconds_count 1.0" in body
    assert 'batchgate_evicted_workloads_total{cluster_queue="team-a",reason="Preempted"} 1.0' in body


def figures(name: str, cohort: str = "") -> ClusterQueueFigures:
    return ClusterQueueFigures(name=name, cohort=cohort, status="active", pending_active=1, pending_inadmissible=0,
                               reserving=2, admitted=2, resources={("default", "cpu"): ResourceFigures(4, 0, 0, 1.5, 1.5)})


def test_a_deleted_cluster_queue_leaves_no_series_behind(probes) -> None:
    server, _, metrics = probes
    metrics.show_cluster_queues([figures("team-a", cohort="org"), figures("team-b")])
    body = requests.get(url(server, "/metrics"), timeout=5).text
    assert 'kueue_cluster_queue_resource_usage{cluster_queue="team-a",cohort="org",flavor="default",resource="cpu"} 1.5' in body
    assert 'kueue_cluster_queue_status{cluster_queue="team-b",status="active"} 1.0' in body
    metrics.show_cluster_queues([figures("team-a", cohort="org")])
    body = requests.get(url(server, "/metrics"), timeout=5).text
    assert 'cluster_queue="team-a"' in body and 'cluster_queue="team-b"' not in body


def test_unknown_paths_are_404(probes) -> None:
    server, _, _ = probes
    assert requests.get(url(server, "/nope"), timeout=5).status_code == 404
