"""/healthz, /readyz and /metrics over real HTTP."""

from __future__ import annotations

from typing import Iterator

import pytest
import requests

from controller.adapters.metrics import ControllerMetrics, ProbeServer


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
    metrics.pending.labels("team-a", "inadmissible").set(2)
    metrics.cycle_duration.observe(0.004)
    metrics.evictions.labels("team-a", "Preempted").inc()
    reply = requests.get(url(server, "/metrics"), timeout=5)
    assert reply.status_code == 200 and reply.headers["Content-Type"].startswith("text/plain")
    body = reply.text
    assert 'batchgate_admitted_workloads_total{cluster_queue="team-a"} 3.0' in body
    assert 'batchgate_pending_workloads{cluster_queue="team-a",status="inadmissible"} 2.0' in body
    assert "batchgate_admission_cycle_duration_seconds_count 1.0" in body
    assert 'batchgate_evicted_workloads_total{cluster_queue="team-a",reason="Preempted"} 1.0' in body


def test_unknown_paths_are_404(probes) -> None:
    server, _, _ = probes
    assert requests.get(url(server, "/nope"), timeout=5).status_code == 404
