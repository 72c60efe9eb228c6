"""`batchgate controller --no-kueue-metrics`: admission works as before, batchgate's own metrics
count it, and no Kueue name is exported (the benchmark's "without" side, bench/kueue_metrics_cpu.py)."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from batchgate.clock import SystemClock
from controller.adapters.kube import KubeClient
from controller.adapters.manager import Controller, ControllerOptions
from controller.adapters.metrics import ControllerMetrics
from controller.cli import parse_args
from tests.controller.cluster import controller_client, eventually
from tests.controller.adapters.test_admission_cluster import running, submit, team  # noqa: F401  (the fixture too)

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def controller(cluster: Any) -> Iterator[Controller]:
    client = controller_client(cluster)
    ctl = Controller(client, SystemClock(), ControllerOptions(leader_elect=False, watch_timeout=2),
                     ControllerMetrics(kueue_compatible=False))
    ctl.start()
    assert ctl.wait_synced(20)
    yield ctl
    ctl.stop()
    client.close()


@pytest.mark.parametrize(("argv", "expected"), [
    pytest.param([], True, id="Kueue's names are exported by default"),
    pytest.param(["--no-kueue-metrics"], False, id="--no-kueue-metrics turns them off"),
])
def test_the_flag(argv: list[str], expected: bool) -> None:
    assert parse_args(argv).kueue_metrics is expected


def test_without_kueue_metrics_admission_is_counted_only_in_batchgates_names(
        client: KubeClient, controller: Controller, team: dict[str, str]) -> None:  # noqa: F811
    ns, cq = team["ns"], team["cq"]
    submit(client, ns, "first", "3")
    eventually(lambda: running(client, ns, "first"), what="the job to be admitted")
    submit(client, ns, "second", "3")  # does not fit: waits, so the pending gauge has something to show

    def exposition() -> str | None:
        text = controller.metrics.exposition().decode()
        waiting = f'batchgate_pending_workloads{{cluster_queue="{cq}",status="inadmissible"}} 1.0'
        return text if waiting in text else None

    text: Any = eventually(exposition, what="the second job counted as pending")
    assert f'batchgate_admitted_workloads_total{{cluster_queue="{cq}"}} 1.0' in text
    assert "kueue_" not in text
