"""bench/serving_floor.py: the gateway's gunicorn setup with a null app really serves over TLS, and the
bench's one short round prints both servers' windows and the floor line from them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from batchgate.clock import SystemClock
from bench.serving_floor import FIXED_REPLY, start_null_server
from certs.authority import service_names, write_serving_files
from webhook.serving.client import GatewayClient

ROOT = Path(__file__).resolve().parents[2]


def test_the_null_app_server_answers_a_review_over_tls_with_the_fixed_reply(tmp_path: Path) -> None:
    write_serving_files(tmp_path, service_names("batchgate-webhook", "batchgate-system"), SystemClock().now())
    server = start_null_server(tmp_path, workers=1, threads=2)
    try:
        client = GatewayClient("127.0.0.1", server.port, tmp_path / "ca.crt", check_name=False)
        status, data, headers = client.request("POST", "/validate", b'{"kind": "AdmissionReview"}' * 100)
        again = client.request("POST", "/validate", b"{}")
        client.close()
    finally:
        server.stop()
    assert (status, data, headers["content-type"]) == (200, FIXED_REPLY, "application/json")
    assert again[:2] == (200, FIXED_REPLY), "the connection is kept alive for the next review"


def test_one_short_round_prints_both_servers_and_the_floor() -> None:
    run = subprocess.run([sys.executable, "bench/serving_floor.py", "--seconds", "0.5", "--warmup", "0.2",
                          "--rounds", "1", "--conns", "1", "--client", "python"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    windows = re.findall(r"^\s+1 (serving stack alone \(null app\)|batchgate webhook)\s+1\s+(\d+)", run.stdout, re.M)
    assert [name for name, _ in windows] == ["serving stack alone (null app)", "batchgate webhook"], run.stdout
    assert all(int(rps) > 0 for _, rps in windows), run.stdout
    floor = re.search(r"at 1 connections: the serving stack alone (\d+) of the gateway's (\d+) us a review", run.stdout)
    assert floor is not None and int(floor[1]) > 0 and int(floor[2]) > 0, run.stdout
