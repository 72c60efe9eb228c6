"""`batchgate dashboard` against the local cluster with the real client and the real controller."""

from __future__ import annotations

import queue
import time
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests

from batchgate.clock import SystemClock
from controller.adapters.kube import RESOURCES, KubeClient
from dashboard.watch import hub_from_kubeconfig
from localcluster.runner import LocalCluster
from tests.controller.cluster import eventually
from tests.dashboard.conftest import EventStream, an_appwrapper

pytestmark = pytest.mark.timeout(120)


def phase_shown(url: str, ns: str, name: str) -> str:
    """The phase the AppWrappers fragment shows for ns/name, "" when it is not listed."""
    html = requests.get(f"{url}/appwrappers?fragment=1", timeout=10).text
    marker = f'data-appwrapper="{ns}/{name}"'
    if marker not in html:
        return ""
    row = html.split(marker, 1)[1].split("</tr>", 1)[0]
    return row.split('class="phase">', 1)[1].split("<", 1)[0]


def test_a_submitted_appwrapper_appears_and_moves_through_its_phases_over_server_sent_events(
        live_client: KubeClient, dashboard: Any, team: dict[str, str]) -> None:
    _, url = dashboard
    stream = EventStream(url)
    try:
        stream.next(timeout=10)  # the current digest, announced on connect
        live_client.create(RESOURCES["AppWrapper"], an_appwrapper(team["ns"], "watched"))
        seen: list[str] = []
        deadline = time.monotonic() + 60
        while "Succeeded" not in seen and time.monotonic() < deadline:
            try:
                stream.next(timeout=5)  # each new digest is announced; nobody polls the API
            except queue.Empty:
                continue
            shown = phase_shown(url, team["ns"], "watched")
            if shown and (not seen or seen[-1] != shown):
                seen.append(shown)
    finally:
        stream.close()
    assert "Running" in seen and seen[-1] == "Succeeded", seen
    assert seen.index("Running") < seen.index("Succeeded")


def test_the_nodes_page_shows_the_gpus_a_running_appwrapper_holds(live_client: KubeClient, dashboard: Any,
                                                                  team: dict[str, str]) -> None:
    hub, url = dashboard
    live_client.create(RESOURCES["AppWrapper"], an_appwrapper(team["ns"], "gpus", pods=2, gpus=3, run_for="30s"))
    eventually(lambda: hub.published.digest.overview.gpus_used >= 6, timeout=40, what="6 GPUs counted in use")
    assert "GPUs in use" in requests.get(f"{url}/", timeout=10).text
    nodes = hub.published.digest.nodes
    assert sum(n.gpus_used for n in nodes) >= 6 and {n.gpus for n in nodes} == {8}


def test_on_a_cluster_without_our_crds_those_panels_say_so_the_view_turns_stale_when_it_goes_and_reconnects(
        tmp_path: Any) -> None:
    """No RBAC in the local cluster yet to forbid a kind: an unserved kind takes the same path
    (a failed list recorded per kind); the forbidden wording is covered by the rendering tests.
    The cluster restarted on its port issues new tokens, so once reconnected every kind says 401."""
    cluster = LocalCluster(tmp_path)  # API only, and no CRDs applied
    cluster.__enter__()
    hub = hub_from_kubeconfig(str(cluster.kubeconfig), None, SystemClock(), watch_timeout=5)
    hub.start()
    try:
        eventually(lambda: "AppWrapper" in hub.published.digest.observed.problems
                   and all(i.synced.is_set() for i in hub.informers), timeout=20, what="the informers to sync")
        observed = hub.published.digest.observed
        assert observed.problems["AppWrapper"].startswith("not served")
        assert "Node" not in observed.problems and "Namespace" not in observed.problems
        assert observed.panel_problems("appwrappers") and not observed.panel_problems("nodes")
        assert observed.stale_since is None
        cluster.__exit__(None, None, None)
        eventually(lambda: hub.published.digest.observed.stale_since is not None, timeout=30,
                   what="the digest to say it is stale")
        port = urlsplit(hub.informers[0].client.api_client.configuration.host).port
        with LocalCluster(tmp_path, port=port):
            eventually(lambda: hub.published.digest.observed.stale_since is None, timeout=30,
                       what="the watches to reconnect")
            eventually(lambda: hub.published.digest.observed.problems.get("Node", "").startswith("401"), timeout=30,
                       what="the old token to be refused")
    finally:
        hub.stop()
