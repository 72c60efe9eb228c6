"""Slow and idle clients against the gateway: are normal reviews still answered at once?

Starts `batchgate webhook` (real gunicorn, TLS, fresh certs, its defaults: 2 workers x 8 threads),
opens N hostile connections on loopback and holds them (reopening any the gateway closes):
idle TCP connections, half-done TLS handshakes, clients sending their headers one byte a second,
and clients sending a body one byte a second. Meanwhile it sends normal reviews (the demo's
PyTorchJob-in-AppWrapper to /mutate), each on a fresh TLS connection and on one kept-alive
connection, and prints their latency: p50, p99, max and how many took over 1 s. Never asserts.

    .venv/bin/python bench/slow_clients.py [--hostile 1000] [--seconds 30] [--workers 2] [--threads 8]
"""

from __future__ import annotations

import argparse
import itertools
import json
import socket
import ssl
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from batchgate.clock import SystemClock  # noqa: E402
from certs.authority import service_names, write_serving_files  # noqa: E402
from webhook.serving.client import GatewayClient, verifying_context  # noqa: E402
from webhook.serving.launch import start_gateway  # noqa: E402

KINDS = ("idle", "half-handshake", "slow-headers", "slow-body")
SERVER_NAME = "batchgate-webhook.batchgate-system.svc"
SLOW_HEADERS = b"POST /mutate HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n"
SLOW_BODY = b"POST /mutate HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: 1558\r\n\r\n{"


@dataclass
class Hostile:
    kind: str
    sock: Any


@dataclass
class HostileConnections:
    """Holds `count` hostile connections to host:port, reopening those the server closes."""

    host: str
    port: int
    ca_file: Path
    count: int
    opened: int = 0
    reopened: int = 0
    failed: int = 0
    held: list[Hostile] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _open(self, kind: str) -> Hostile | None:
        try:
            raw = socket.create_connection((self.host, self.port), timeout=10)
            if kind == "idle":
                sock: Any = raw
            elif kind == "half-handshake":
                raw.sendall(b"\x16\x03\x01\x02\x00\x01")  # the start of a ClientHello, and no more
                sock = raw
            else:
                sock = verifying_context(self.ca_file).wrap_socket(raw, server_hostname=SERVER_NAME)
                sock.sendall(SLOW_HEADERS if kind == "slow-headers" else SLOW_BODY)
            sock.setblocking(False)
            self.opened += 1
            return Hostile(kind, sock)
        except OSError:
            self.failed += 1
            return None

    def start(self) -> "HostileConnections":
        for kind in itertools.islice(itertools.cycle(KINDS), self.count):
            hostile = self._open(kind)
            if hostile is not None:
                self.held.append(hostile)
        self._thread = threading.Thread(target=self._tend, name="hostile", daemon=True)
        self._thread.start()
        return self

    def _alive(self, hostile: Hostile) -> bool:
        """Trickle one byte (slow kinds) and see whether the server closed the connection."""
        try:
            if hostile.kind in ("slow-headers", "slow-body"):
                hostile.sock.send(b"x" if hostile.kind == "slow-body" else b"X")
            data = hostile.sock.recv(4096)
            return data != b""  # bytes: the server answered (a 400); either way it is done with us
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
            return True
        except OSError:
            return False

    def _tend(self) -> None:
        while not self._stop.wait(1.0):
            for i, hostile in enumerate(self.held):
                if self._stop.is_set():
                    return
                if not self._alive(hostile):
                    hostile.sock.close()
                    again = self._open(hostile.kind)
                    if again is not None:
                        self.held[i] = again
                        self.reopened += 1

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        for hostile in self.held:
            hostile.sock.close()


def review_body() -> bytes:
    from demo.gateway_only import request_for
    from demo.samples_scene import SAMPLES
    from webhook.rules.review import UserInfo
    from webhook.serving.admission_review import review_document
    import yaml

    obj = yaml.safe_load((SAMPLES / "alice" / "appwrapper-pytorchjob.yaml").read_text())
    return json.dumps(review_document(request_for(obj, UserInfo("alice", "1001", ("system:authenticated",))))).encode()


def timed_reviews(host: str, port: int, ca_file: Path, body: bytes, seconds: float) -> dict[str, list[float]]:
    """Reviews for `seconds`, alternating a fresh connection and one kept alive; latencies in s
    (a failure counts as the client's 10 s timeout)."""
    kept = GatewayClient(host, port, ca_file)
    latencies: dict[str, list[float]] = {"fresh": [], "kept-alive": []}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for how in ("fresh", "kept-alive"):
            client = GatewayClient(host, port, ca_file) if how == "fresh" else kept
            started = time.monotonic()
            try:
                status, _, _ = client.request("POST", "/mutate", body)
                elapsed = time.monotonic() - started if status == 200 else 10.0
            except OSError:
                elapsed = 10.0
            latencies[how].append(elapsed)
            if how == "fresh":
                client.close()
        time.sleep(0.05)
    kept.close()
    return latencies


def summary(values: list[float]) -> str:
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000  # noqa: E731
    slow = sum(1 for v in values if v > 1.0)
    return (f"{len(values):5d} reviews  p50 {pick(0.5):7.1f} ms  p99 {pick(0.99):7.1f} ms  "
            f"max {ordered[-1] * 1000:7.1f} ms  over 1 s: {slow}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hostile", type=int, default=1000, help="hostile connections held (default 1000)")
    p.add_argument("--seconds", type=float, default=30.0, help="how long reviews are timed while they are held")
    p.add_argument("--workers", default="2")
    p.add_argument("--threads", default="8")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        certs = Path(tmp) / "certs"
        write_serving_files(certs, service_names("batchgate-webhook", "batchgate-system"), SystemClock().now())
        gateway = start_gateway(certs, "--workers", args.workers, "--threads", args.threads,
                                "--audit-log", str(Path(tmp) / "audit.log"))
        body = review_body()
        try:
            quiet = timed_reviews(gateway.host, gateway.port, certs / "ca.crt", body, 3.0)
            hostile = HostileConnections(gateway.host, gateway.port, certs / "ca.crt", args.hostile).start()
            print(f"gateway {args.workers} workers x {args.threads} threads; {hostile.opened} hostile connections "
                  f"opened ({', '.join(KINDS)}, in turn), {hostile.failed} refused", flush=True)
            loaded = timed_reviews(gateway.host, gateway.port, certs / "ca.crt", body, args.seconds)
            hostile.stop()
        finally:
            gateway.stop()
    for how in ("fresh", "kept-alive"):
        print(f"quiet         {how:10s} {summary(quiet[how])}")
        print(f"with hostile  {how:10s} {summary(loaded[how])}")
    print(f"hostile connections the gateway closed and we reopened: {hostile.reopened}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
