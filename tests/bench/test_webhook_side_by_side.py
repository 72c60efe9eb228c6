"""The gateway beside the Go webhooks (bench/peers/webhook_side_by_side.py): the paths it reads from
a peer's install, the arrival rate it paces at, CPU per review, the verdicts and the table; the
paced client on a real gateway; a peer not built ending it in one line.

The bench itself is not run here: no session fixture starts both peers, a cluster with both takes
22-30 s to start before any window (five servers' idle and load windows then add 30 s at 1 s
windows), and the AppWrapper controller needs port 9443 on every address (tests/conftest.py orders
such tests); `python bench/peers/webhook_side_by_side.py --seconds 1` runs it in about 90 s."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from batchgate.clock import SystemClock
from bench.admission_decisions import CONFIGS
from bench.peers.webhook_side_by_side import Arrival, Window, appwrapper_paths, arrival, main, table, verdicts
from bench.webhook_load import Target, measure_python, review_body
from certs.authority import service_names, write_serving_files
from realcluster.peers import PeerError
from webhook.serving.launch import start_gateway

APPWRAPPERS = {"apiGroups": ["workload.codeflare.dev"], "apiVersions": ["v1beta2"], "resources": ["appwrappers"]}


def hook(path: str, operations: list[str], rules: dict[str, Any] = APPWRAPPERS) -> dict[str, Any]:
    return {"name": path.strip("/"), "clientConfig": {"service": {"path": path}},
            "rules": [{**rules, "operations": operations}]}


def configuration(kind: str, *hooks: dict[str, Any]) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": kind.lower()}, "webhooks": list(hooks)}


JOBS = {"apiGroups": ["batch"], "apiVersions": ["v1"], "resources": ["jobs"]}
INSTALL = [
    {"kind": "Namespace", "metadata": {"name": "kueue-system"}},
    configuration("MutatingWebhookConfiguration", hook("/mutate-batch-v1-job", ["CREATE"], JOBS),
                  hook("/mutate-workload-codeflare-dev-v1beta2-appwrapper", ["CREATE"])),
    configuration("ValidatingWebhookConfiguration", hook("/validate-workload-codeflare-dev-v1beta2-appwrapper",
                                                         ["CREATE", "UPDATE"]),
                  hook("/validate-batch-v1-job", ["CREATE", "UPDATE"], JOBS)),
]


def test_each_peers_appwrapper_paths_are_read_from_its_webhook_configurations() -> None:
    assert appwrapper_paths(INSTALL, "kueue") == {"mutate": "/mutate-workload-codeflare-dev-v1beta2-appwrapper",
                                                  "validate": "/validate-workload-codeflare-dev-v1beta2-appwrapper"}


def test_a_peer_whose_install_reviews_no_appwrapper_creation_is_one_line_naming_the_integration() -> None:
    no_create = [INSTALL[0], INSTALL[1], configuration("ValidatingWebhookConfiguration", hook(
        "/validate-workload-codeflare-dev-v1beta2-appwrapper", ["UPDATE"]))]
    with pytest.raises(PeerError) as caught:
        appwrapper_paths(no_create, "kueue")
    assert str(caught.value) == ("kueue's install has 0 ValidatingWebhookConfiguration webhooks for AppWrapper "
                                 "CREATEs, not 1: enable its appwrapper integration, or update "
                                 "bench/peers/webhook_side_by_side.py")


ARRIVALS = [
    pytest.param("baseline", Arrival(30 * (10 + 2 + 1000 / 1200), 15_000 / 60),
                 id="Kueue's baseline creates 385 Workloads a second at its peak and 250 over its 60 s"),
    pytest.param("large-scale", Arrival(1000 * (1000 / 60 + 1000 / 300 + 1000 / 700), 50_000 / 3.3),
                 id="the large-scale config creates 21,429 a second at its peak, 15,152 over its 3.3 s"),
]


@pytest.mark.parametrize(("config", "expected"), ARRIVALS)
def test_the_arrival_rate_of_kueues_scenarios(config: str, expected: Arrival) -> None:
    got = arrival(CONFIGS[config])
    assert (got.peak, got.mean) == (pytest.approx(expected.peak), pytest.approx(expected.mean))


def window(server: str = "batchgate", path: str = "mutate", load: str = "1 conns", *, cpu: float = 1.0,
           wall: float = 10.0, served: float = 1000.0, idle: float = 0.0, p99: float = 2.0) -> Window:
    return Window(server, path, load, int(served), served / wall, 1.0, p99, 0, cpu, wall, served, idle, 0.1)


CPU_PER_REVIEW = [
    pytest.param(window(cpu=1.0, served=1000), 1000.0, id="a second of CPU over 1,000 reviews is 1,000 µs each"),
    pytest.param(window(cpu=1.0, wall=10.0, idle=0.05, served=1000), 500.0,
                 id="what the server spends idle over the window's length is taken off first"),
    pytest.param(window(cpu=0.2, wall=10.0, idle=0.05, served=1000), 0.0,
                 id="a window that cost less than idling (others' noise) is no negative CPU"),
    pytest.param(window(served=0), math.nan, id="a window with no review answered has no figure"),
]


@pytest.mark.parametrize(("measured", "expected"), CPU_PER_REVIEW)
def test_cpu_per_review(measured: Window, expected: float) -> None:
    got = measured.us_per_review
    assert (math.isnan(got) and math.isnan(expected)) or got == pytest.approx(expected)


PACED = "385/s over 16 conns"
VERDICTS = [
    pytest.param([window("kueue", cpu=0.5), window(cpu=1.0)],
                 ["CPU per review, mutate, 1 conns: batchgate/kueue 2.00 (target <= 2: met)"],
                 id="twice a Go webhook's CPU per review is within the target"),
    pytest.param([window("appwrapper", path="validate", cpu=0.4), window(path="validate", cpu=1.0)],
                 ["CPU per review, validate, 1 conns: batchgate/appwrapper 2.50 (target <= 2: NOT met)"],
                 id="more than twice is not"),
    pytest.param([window("kueue", path="validate", cpu=0.5), window(cpu=1.0)], [],
                 id="only the same path at the same load is compared"),
    pytest.param([window("kueue", load=PACED, p99=3.0), window(load=PACED, p99=10.0)],
                 ["CPU per review, mutate, 385/s over 16 conns: batchgate/kueue 1.00 (target <= 2: met)",
                  "p99 at 385/s over 16 conns, kueue mutate: 3.00 ms (target < 10 ms: met)",
                  "p99 at 385/s over 16 conns, batchgate mutate: 10.00 ms (target < 10 ms: NOT met)"],
                 id="p99 is judged for every server at the paced rate, 10 ms not being under 10 ms"),
]


@pytest.mark.parametrize(("windows", "expected"), VERDICTS)
def test_verdicts_against_issue_27s_targets(windows: list[Window], expected: list[str]) -> None:
    assert verdicts(windows, PACED) == expected


def test_the_table_has_one_row_per_window_under_a_markdown_header() -> None:
    lines = table([window("kueue v0.17.0", cpu=0.61, wall=9.5, served=12_345, idle=0.002)])
    assert lines[0].startswith("| server | path | load | requests |")
    assert lines[1] == "|---" * 11 + "|"
    assert lines[2] == "| kueue v0.17.0 | mutate | 1 conns | 12,345 | 1,299 | 1.00 | 2.00 | 0 | 48 | 2.0 | 0.10 |"


def test_the_paced_client_sends_the_rate_asked_and_counts_every_answer(tmp_path: Path) -> None:
    write_serving_files(tmp_path, service_names("batchgate-webhook", "batchgate-system"), SystemClock().now())
    gateway = start_gateway(tmp_path, "--workers", "1", "--threads", "2")
    try:
        got = measure_python(Target(gateway.host, gateway.port, tmp_path / "ca.crt"), review_body(), conns=2,
                             seconds=1.0, warmup=0.5, rate=40)
    finally:
        gateway.stop()
    assert got["errors"] == 0
    assert got["requests"] == 40  # due times from 0.5 s to 1.5 s, every 25 ms: computed, not summed
    assert got["served"] == 60  # and the warm-up's


def test_peers_not_built_end_the_bench_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BATCHGATE_CACHE", str(tmp_path))  # an empty cache: nothing is built
    printed: list[str] = []
    assert main(["--seconds", "1"], out=printed.append) == 2
    assert printed[-1] == ("bench/peers: the real control plane or the peers are not built: "
                           "run `make kube peers` (needs Go)")
