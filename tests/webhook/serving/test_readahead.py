"""Slow and idle clients cannot starve the gateway (issue 19 item 2), on loopback.

A gateway with few threads (1 worker x 2 threads) holds many times more hostile connections than
it has threads: idle TCP, half-done TLS handshakes, headers and bodies sent a byte a second
(bench/slow_clients.py; the bench holds 1,000 and times the reviews). Every normal review, on a
fresh connection and on a kept-alive one, must still be answered; plain gthread answered none
until the slow clients left. And a connection that never completes its request is closed.
"""

from __future__ import annotations

import json
import ssl
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from bench.slow_clients import KINDS, HostileConnections
from tests.builders import sample
from tests.webhook.helpers import review_for
from webhook.serving.client import GatewayClient
from webhook.serving.launch import RunningGateway
from webhook.serving.readahead import REQUEST_TIMEOUT

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def gateway(cert_dir: Path, launch: Callable[..., RunningGateway]) -> Iterator[RunningGateway]:
    yield launch(cert_dir, "--workers", "1", "--threads", "2")


def test_reviews_are_answered_while_many_more_slow_clients_than_threads_are_held(gateway: RunningGateway) -> None:
    hostile = HostileConnections(gateway.host, gateway.port, gateway.cert_dir / "ca.crt", count=64).start()
    try:
        assert hostile.opened == 64, "every hostile connection got in"
        body = json.dumps(review_for(sample("alice/appwrapper-job.yaml"))).encode()
        kept = gateway.client()
        for _ in range(10):
            fresh = gateway.client()
            assert fresh.request("POST", "/mutate", body)[0] == 200
            fresh.close()
            assert kept.request("POST", "/mutate", body)[0] == 200
        kept.close()
    finally:
        hostile.stop()


def test_connections_that_never_complete_their_request_are_closed(gateway: RunningGateway) -> None:
    """Each kind at once: all must be closed by the gateway within three request timeouts."""
    hostile = HostileConnections(gateway.host, gateway.port, gateway.cert_dir / "ca.crt", count=0)
    held = {kind: hostile._open(kind) for kind in KINDS}
    open_kinds = set(held)
    deadline = time.monotonic() + REQUEST_TIMEOUT * 3
    while open_kinds and time.monotonic() < deadline:
        for kind in sorted(open_kinds):
            try:
                if held[kind].sock.recv(4096) == b"":  # type: ignore[union-attr]
                    open_kinds.discard(kind)
            except (ssl.SSLWantReadError, BlockingIOError):
                pass
            except (ConnectionResetError, ssl.SSLError):
                open_kinds.discard(kind)  # closed mid-handshake
        time.sleep(0.2)
    for hostile_conn in held.values():
        hostile_conn.sock.close()  # type: ignore[union-attr]
    assert open_kinds == set(), f"still open after {REQUEST_TIMEOUT * 3:.0f} s"


def test_kept_alive_connections_still_serve_many_reviews_in_a_row(gateway: RunningGateway) -> None:
    client: GatewayClient = gateway.client()
    body = json.dumps(review_for(sample("alice/appwrapper-job.yaml"))).encode()
    assert [client.request("POST", "/mutate", body)[0] for _ in range(50)] == [200] * 50
    client.close()


def test_at_the_connection_cap_the_oldest_connection_still_sending_is_closed_for_a_new_one(
        cert_dir: Path, launch: Callable[..., RunningGateway]) -> None:
    capped = launch(cert_dir, "--workers", "1", "--threads", "2", "--max-connections", "8")
    hostile = HostileConnections(capped.host, capped.port, capped.cert_dir / "ca.crt", count=0)
    held = [hostile._open("slow-headers") for _ in range(8)]
    client = capped.client()
    assert client.request("GET", "/healthz")[0] == 200  # the ninth connection: room made for it
    client.close()
    oldest = held[0]
    assert oldest is not None
    oldest.sock.setblocking(True)
    oldest.sock.settimeout(REQUEST_TIMEOUT / 2)  # closed at once, not at its deadline
    try:
        assert oldest.sock.recv(4096) == b""
    except (ConnectionResetError, ssl.SSLError):
        pass
    for conn in held:
        conn.sock.close()  # type: ignore[union-attr]
