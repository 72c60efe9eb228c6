"""The serving stack's own cost per review: the gateway's gunicorn setup with an app that does nothing.

Starts, side by side, (a) our gunicorn setup exactly as `batchgate webhook` runs it (our worker
with read-ahead and balancing, TLS, the per-worker start-up hooks; 2 workers x 8 threads) serving a
WSGI app that reads the body and returns one fixed allowed reply, and (b) `batchgate webhook`
itself with the same shape; then sends both the mutated AppWrapper to /validate
(`authorization.userRBACCheck` off: the rules alone, as Kueue's validator) with
bench/webhook_load.py's client and windows, alternating (a) and (b) per round. Prints per window
requests/s, p50/p99 and the server's CPU per review, and per round the floor: what share of the
gateway's CPU per review the serving stack alone takes, and what the gateway costs beyond it (the app,
and the server's own work stretched over fewer reviews a second).

Why: a Go webhook's whole cost per review (Kueue's validator, bench/peers/webhook_side_by_side.py)
is the budget any comparison of CPU per review is held to; this prints how much of it gunicorn,
TLS and gthread's hand-offs spend before our app runs. Never asserts.

    .venv/bin/python bench/serving_floor.py [--seconds 8] [--rounds 2] [--threads 8] [--conns 1,16]
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from batchgate.clock import SystemClock  # noqa: E402
from bench.machine_info import machine  # noqa: E402
from bench.webhook_load import CHECK_OFF, CLIENTS, Target, check_reply, load_arguments, measure_window, validate_body  # noqa: E402
from certs.authority import service_names, write_serving_files  # noqa: E402
from realcluster.processes import free_port  # noqa: E402
from webhook.serving.admission_review import MAX_BODY_BYTES  # noqa: E402
from webhook.serving.launch import start_gateway  # noqa: E402
from webhook.serving.server import GatewayServer, ServerOptions  # noqa: E402

FIXED_REPLY = (b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",'
               b'"response":{"uid":"serving-floor","allowed":true}}')
START_TIMEOUT_SECONDS = 30.0


def null_app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
    """Reads the body as the gateway does (bounded) and answers one fixed allowed review."""
    environ["wsgi.input"].read(MAX_BODY_BYTES + 1)
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(FIXED_REPLY)))])
    return [FIXED_REPLY]


class NullAppServer(GatewayServer):
    """The gateway's gunicorn setup, hooks and worker included, with `null_app` as the app."""

    def load(self) -> Any:
        return null_app


def _serve(options: ServerOptions) -> None:
    NullAppServer(options).run()


@dataclass
class NullServer:
    process: multiprocessing.Process
    port: int

    def stop(self) -> None:
        self.process.terminate()
        self.process.join(10)


def start_null_server(cert_dir: Path, workers: int, threads: int) -> NullServer:
    """The null-app server on a free loopback port, once it accepts connections."""
    port = free_port()
    options = ServerOptions(cert_dir=cert_dir, port=port, workers=workers, threads=threads,
                            audit_log=str(cert_dir / "null-audit.log"))
    process = multiprocessing.Process(target=_serve, args=(options,), daemon=False)
    process.start()
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if not process.is_alive():
            raise SystemExit(f"the null-app server exited with {process.exitcode} before it listened")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return NullServer(process, port)
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit(f"the null-app server did not listen on 127.0.0.1:{port} within {START_TIMEOUT_SECONDS:.0f} s")


def main() -> int:
    p = load_arguments(__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=2, help="rounds, each the null server then the gateway")
    args = p.parse_args()
    body = validate_body()
    conns = [int(c) for c in args.conns.split(",")]
    print(f"machine: {machine()}; load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"client: {CLIENTS[args.client]}; review: the mutated AppWrapper ({len(body)} bytes) to /validate, "
          f"{args.workers} workers x {args.threads} threads each")
    with tempfile.TemporaryDirectory(prefix="batchgate-floor-") as tmp:
        cert_dir = Path(tmp)
        write_serving_files(cert_dir, service_names("batchgate-webhook", "batchgate-system"), SystemClock().now())
        (cert_dir / "policy.yaml").write_text(CHECK_OFF)
        null = start_null_server(cert_dir, int(args.workers), int(args.threads))
        gateway = start_gateway(cert_dir, "--workers", args.workers, "--threads", args.threads,
                                "--policy-file", str(cert_dir / "policy.yaml"), "--audit-log", str(cert_dir / "audit.log"))
        servers = {"serving stack alone (null app)": (Target("127.0.0.1", null.port, cert_dir / "ca.crt", "/validate"),
                                                      null.process.pid),
                   "batchgate webhook": (Target(gateway.host, gateway.port, cert_dir / "ca.crt", "/validate"),
                                         gateway.process.pid)}
        try:
            for target, _ in servers.values():
                check_reply(target, body, mutating=False)
            print(f"{'round':>5} {'server':<32} {'conns':>5} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} "
                  f"{'CPU us/review':>13} {'other load':>10}")
            for n in range(1, args.rounds + 1):
                cost: dict[tuple[str, int], float] = {}
                for name, (target, pid) in servers.items():
                    for c in conns:
                        r = measure_window(args, target, pid, body, cert_dir, c)
                        cost[name, c] = r["cpu"] / max(r["served"], 1) * 1e6
                        print(f"{n:>5} {name:<32} {c:>5} {r['rps']:>7.0f} {r['p50']:>7.2f} {r['p99']:>7.2f} "
                              f"{cost[name, c]:>13.0f} {r['other']:>10.2f}", flush=True)
                floor, whole = list(servers)
                for c in conns:
                    print(f"{n:>5} at {c} connections: the serving stack alone {cost[floor, c]:.0f} of the gateway's "
                          f"{cost[whole, c]:.0f} us a review ({cost[floor, c] / cost[whole, c]:.0%}); "
                          f"the gateway beyond it {cost[whole, c] - cost[floor, c]:.0f} us")
        finally:
            gateway.stop()
            null.stop()
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
