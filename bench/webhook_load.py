"""Load on the gateway alone: AdmissionReviews over keep-alive TLS at 1 and 16 connections.

Starts `batchgate webhook` (real gunicorn, TLS, fresh certs) and POSTs the demo's
PyTorchJob-in-AppWrapper (demo/samples/alice) to /mutate (or, with `--review pod-phase`, the creation of a worker pod
of a laid-out 256-pod pytorch Indexed Job: the frameworks' Pod phase). The load generator is `wrk` (Debian package, C, one thread,
a Lua script for the POST and p50/p99/p999) when installed, else a separate Python process
with one thread and one http.client keep-alive connection (verifying the CA) per connection.
Prints requests/s and p50/p99/p999 latency per concurrency, with the worker count, the machine
and its load average. Never asserts.

`--sar` adds, in the same run, the per-component authorization path: the mutated AppWrapper to
/validate with a gateway connected (--kubeconfig) to a table-driven HTTPS authorizer
(tests/webhook/authorizer_stub.py, in this process) that answers discovery and
SubjectAccessReviews: with the check off, with a warm answer cache, and with every review
missing the cache (--authorization-cache-ttl 0: one SubjectAccessReview per review).

    .venv/bin/python bench/webhook_load.py [--seconds 8] [--workers 2] [--threads 8] [--conns 1,16] [--repeat N]
                                           [--client wrk|python] [--review appwrapper|pod-phase]
                                           [--peer-python VENV/bin/python]   # also the kopf peer
                                           [--sar]   # also /validate with SubjectAccessReviews
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from batchgate.clock import SystemClock  # noqa: E402
from bench.framework_pod_phase import framework_pods  # noqa: E402
from bench.machine_info import machine  # noqa: E402
from certs.authority import service_names, write_serving_files  # noqa: E402
from webhook.serving.admission_review import review_document  # noqa: E402
from webhook.serving.client import GatewayClient  # noqa: E402
from demo.gateway_only import request_for  # noqa: E402
from demo.samples_scene import SAMPLES  # noqa: E402
from webhook.serving.launch import start_gateway  # noqa: E402
from webhook import rules  # noqa: E402
from webhook.policy.store import DEFAULTS  # noqa: E402
from webhook.rules.review import UserInfo  # noqa: E402
from tests.webhook.authorizer_stub import AuthorizerStub  # noqa: E402

MANIFEST = SAMPLES / "alice" / "appwrapper-pytorchjob.yaml"


POD_PHASE_PODS = 256


def pod_phase_body() -> bytes:
    """A middle worker's creation, as the Job controller sends it, for a laid-out 256-pod pytorch job."""
    pod = framework_pods("pytorch", POD_PHASE_PODS)[POD_PHASE_PODS // 2]
    user = UserInfo("system:serviceaccount:kube-system:job-controller", "uid-job-controller", ("system:serviceaccounts",))
    return json.dumps(review_document(request_for(pod, user, resource="pods"))).encode()


BENCH_USER = UserInfo("alice", "uid-alice-1001", ("system:authenticated", "team-a"))


def appwrapper_object(labels: dict[str, str] | None = None) -> dict[str, Any]:
    """The demo's AppWrapper in team-a, with `labels` added (a queue the user names, say)."""
    obj = yaml.safe_load(MANIFEST.read_text())
    meta = obj.setdefault("metadata", {})
    meta["namespace"] = "team-a"
    if labels:
        meta["labels"] = {**(meta.get("labels") or {}), **labels}
    return dict(obj)


def review_body(labels: dict[str, str] | None = None) -> bytes:
    obj = appwrapper_object(labels)
    return json.dumps(review_document(request_for(obj, BENCH_USER, resource="appwrappers"))).encode()


def validate_body(labels: dict[str, str] | None = None) -> bytes:
    """The same AppWrapper as the API server sends it to /validate: mutated by /mutate first."""
    obj = appwrapper_object(labels)
    mutated = rules.mutate(request_for(obj, BENCH_USER, resource="appwrappers"), DEFAULTS.policy).object or obj
    return json.dumps(review_document(request_for(mutated, BENCH_USER, resource="appwrappers"))).encode()


@dataclass(frozen=True)
class Target:
    """Where the reviews go: a server's address, the CA its certificate chains to, the path. A peer's
    certificate names its Service, not the 127.0.0.1 dialled: then `check_name` is off (the chain is
    still verified)."""

    host: str
    port: int
    ca_file: Path
    path: str = "/mutate"
    check_name: bool = True


_SLACK = 1e-9  # seconds: float rounding, never a real review's worth


def _connection_loop(target: Target, body: bytes, origin: float, warmup: float, window: float,
                     interval: float | None, offset: float, latencies: list[float], errors: list[str],
                     served: list[int]) -> None:
    """One keep-alive connection: back to back, or with `interval` one review due every `interval`
    seconds from `offset` (an open loop: a latency counts from when the review was due, so a
    server that falls behind is charged its queue). Times are seconds after `origin`; the k-th due
    time is `offset + k * interval`, computed rather than summed, and compared with a nanosecond's
    slack, so a window holds exactly the due times it should, however the floats round."""
    client = GatewayClient(target.host, target.port, target.ca_file, check_name=target.check_name)
    answered = 0
    sent = 0
    while True:
        started = offset + sent * interval if interval is not None else time.perf_counter() - origin
        if started >= window - _SLACK:
            break
        if interval is not None and (wait := started - (time.perf_counter() - origin)) > 0:
            time.sleep(wait)
        sent += 1
        status, data, _ = client.request("POST", target.path, body)
        elapsed = time.perf_counter() - origin - started
        if status != 200 or b'"allowed":true' not in data:
            errors.append(f"{status} {data[:120]!r}")
            continue
        answered += 1
        if started >= warmup - _SLACK:
            latencies.append(elapsed)
    client.close()
    served.append(answered)


def load_process(target: Target, body: bytes, conns: int, warmup: float, seconds: float, rate: float | None,
                 out: "multiprocessing.Queue[tuple[list[float], list[str], int, float]]") -> None:
    """Runs in its own process so the generator does not share the server's GIL. With `rate`, the
    connections send `rate` reviews a second between them, evenly staggered."""
    origin = time.perf_counter()
    interval = conns / rate if rate else None
    latencies: list[float] = []
    errors: list[str] = []
    served: list[int] = []
    threads = [threading.Thread(target=_connection_loop, args=(
        target, body, origin, warmup, warmup + seconds, interval, n * interval / conns if interval else 0.0,
        latencies, errors, served)) for n in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    span = time.perf_counter() - origin - warmup  # past `seconds` by the last answers; by more where a paced server fell behind
    out.put((latencies, errors[:5] + [f"... {len(errors)} errors"] if errors else [], sum(served), span))


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, max(0, int(round(q * len(sorted_values) + 0.5)) - 1))
    return sorted_values[index]


WRK_SCRIPT = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open(os.getenv("BENCH_BODY"), "rb")
wrk.body = f:read("*a")
f:close()
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %d %d %d %d %d\\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9),
    e.connect + e.read + e.write + e.status + e.timeout))
end
"""


def warmup_seconds(warmup: float) -> int:
    """wrk takes whole seconds."""
    return max(1, round(warmup))


def measure_wrk(target: Target, body: bytes, conns: int, seconds: float, warmup: float,
                workdir: Path) -> dict[str, Any]:
    """wrk over keep-alive TLS (it does not verify certificates; the Python client does)."""
    (workdir / "review.json").write_bytes(body)
    (workdir / "post.lua").write_text(WRK_SCRIPT)
    env = {**os.environ, "BENCH_BODY": str(workdir / "review.json")}
    url = f"https://{target.host}:{target.port}{target.path}"
    base = ["wrk", "-t1", f"-c{conns}", "--timeout", "10s", "-s", str(workdir / "post.lua")]
    subprocess.run([*base, f"-d{warmup_seconds(warmup)}s", url], env=env, capture_output=True, check=True)
    out = subprocess.run([*base, f"-d{round(seconds)}s", url], env=env, capture_output=True, text=True,
                         check=True).stdout
    fields = next(line.split()[1:] for line in out.splitlines() if line.startswith("RESULT "))
    requests, micros, p50, p99, p999, errors = (int(x) for x in fields)
    # The warm-up run's requests are not counted: the served figure counts them at the measured rate.
    return {"conns": conns, "requests": requests, "errors": errors, "error_sample": [],
            "rps": requests / (micros / 1e6), "p50": p50 / 1000, "p99": p99 / 1000, "p999": p999 / 1000,
            "served": requests * (1 + warmup_seconds(warmup) / seconds)}


def measure_python(target: Target, body: bytes, conns: int, seconds: float, warmup: float,
                   rate: float | None = None) -> dict[str, Any]:
    queue: multiprocessing.Queue = multiprocessing.Queue()
    proc = multiprocessing.Process(target=load_process, args=(target, body, conns, warmup, seconds, rate, queue))
    proc.start()
    latencies, errors, served, span = queue.get(timeout=warmup + seconds + 60)
    proc.join(timeout=30)
    latencies.sort()
    return {"conns": conns, "requests": len(latencies), "errors": len(errors), "error_sample": errors,
            "rps": len(latencies) / max(span, seconds), "p50": percentile(latencies, 0.50) * 1000,
            "p99": percentile(latencies, 0.99) * 1000, "p999": percentile(latencies, 0.999) * 1000,
            "served": served}


CLIENTS = {
    "wrk": "wrk 4.1 (Debian), 1 thread, keep-alive TLS, no certificate verification",
    "python": "a separate Python process, one thread and one http.client keep-alive TLS connection each",
}


def check_reply(target: Target, body: bytes, mutating: bool) -> None:
    """The review is allowed and, when `mutating`, really mutated (a patch comes back), so the
    figures are for real work: else the bench stops, saying what came back."""
    client = GatewayClient(target.host, target.port, target.ca_file, check_name=target.check_name)
    status, reply = client.review(target.path, json.loads(body))
    client.close()
    response = reply.get("response") or {}
    if status != 200 or not response.get("allowed") or (mutating and "patch" not in response):
        raise SystemExit(f"unexpected reply from {target.host}:{target.port}{target.path} "
                         f"({'allowed without a patch' if response.get('allowed') else 'not allowed'}), "
                         f"{status}: {json.dumps(reply)[:400]}")


def process_tree_cpu_seconds(root: int) -> float:
    """User + system CPU of `root` and its children (the gunicorn master and workers), from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(stat.parent.name), int(fields[1])
        if pid == root or ppid == root:
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def machine_busy_seconds() -> float:
    """CPU time the whole machine spent busy (all CPUs, not idle or waiting on I/O), from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds() -> float:
    """CPU of this process's finished children: the load generator runs."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def worker_shares(audit_log: Path, offset: int) -> str:
    """Percent of the reviews each worker answered since `offset`, from the audit lines' pid."""
    counts: dict[int, int] = {}
    with audit_log.open("rb") as lines:
        lines.seek(offset)
        for line in lines:
            pid = json.loads(line)["pid"]
            counts[pid] = counts.get(pid, 0) + 1
    total = sum(counts.values()) or 1
    return "/".join(str(round(100 * n / total)) for n in sorted(counts.values(), reverse=True)) or "-"


def reviews_since(audit_log: Path, offset: int) -> int:
    """Reviews answered since `offset`: one audit line each."""
    with audit_log.open("rb") as lines:
        lines.seek(offset)
        return sum(1 for _ in lines)

def measure_window(args: argparse.Namespace, target: Target, pid: int, body: bytes, workdir: Path, conns: int,
                   rate: float | None = None) -> dict[str, Any]:
    """One window of load (args.client's; the Python client's when paced at `rate`) with the server's
    CPU over it (`pid` and its children, warm-up included: "cpu", seconds; "served", the reviews it
    answered meanwhile; "wall", the window's length) and the other work on the machine meanwhile ("other", CPUs' worth, neither
    server nor load generator)."""
    busy_before, children_before, own_before = machine_busy_seconds(), children_cpu_seconds(), time.process_time()
    wall_before = time.monotonic()
    cpu_before = process_tree_cpu_seconds(pid)
    if args.client == "wrk" and rate is None:
        r = measure_wrk(target, body, conns, args.seconds, args.warmup, workdir)
    else:
        r = measure_python(target, body, conns, args.seconds, args.warmup, rate)
    cpu = process_tree_cpu_seconds(pid) - cpu_before
    ours = cpu + children_cpu_seconds() - children_before + time.process_time() - own_before
    wall = time.monotonic() - wall_before
    other = (machine_busy_seconds() - busy_before - ours) / wall
    return {**r, "cpu": cpu, "wall": wall, "other": max(other, 0.0)}


def run_table(args: argparse.Namespace, host: str, port: int, pid: int, body: bytes, cert_dir: Path,
              audit_log: Path | None = None, path: str = "/mutate", stub: AuthorizerStub | None = None) -> None:
    """One line per run: throughput, latency percentiles, the server's CPU per review, the other
    work on the machine meanwhile (CPUs' worth, neither server nor load generator), and how the
    reviews were shared among the workers (from the audit log)."""
    print(f"{'conns':>5} {'requests':>9} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'p999 ms':>8} {'errors':>6} "
          f"{'server CPU us/review':>8} {'other load':>10} {'worker shares %':>15}")
    target = Target(host, port, cert_dir / "ca.crt", path)
    for conns in [int(c) for c in args.conns.split(",") for _ in range(args.repeat)]:
        check_reply(target, body, mutating=path == "/mutate")
        asked_before = len(stub.reviews) if stub else 0
        offset = audit_log.stat().st_size if audit_log else 0
        r = measure_window(args, target, pid, body, cert_dir, conns)
        shares = worker_shares(audit_log, offset) if audit_log else "-"
        print(f"{r['conns']:>5} {r['requests']:>9} {r['rps']:>8.0f} {r['p50']:>8.2f} {r['p99']:>8.2f} "
              f"{r['p999']:>8.2f} {r['errors']:>6} {r['cpu'] / max(r['served'], 1) * 1e6:>8.0f} "
              f"{r['other']:>10.2f} {shares:>15}")
        for sample in r["error_sample"]:
            print(f"      error: {sample}")
        if stub is not None and audit_log is not None:
            asked = len(stub.reviews) - asked_before
            reviews = reviews_since(audit_log, offset)
            print(f"      SubjectAccessReviews answered by the authorizer: {asked:,} for {reviews:,} reviews "
                  f"(warm-up included, from the audit log): {asked / max(reviews, 1):.2f} per review")


def _drain(stream: Any) -> None:
    """Read a child's stderr to the end so a chatty child never blocks on a full pipe."""
    for _ in stream:
        pass


def start_peer(python: str, cert_dir: Path) -> tuple[subprocess.Popen[bytes], int]:
    """bench/peer_kopf_webhook.py under `python` (one with kopf), once it listens."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([python, str(REPO / "bench" / "peer_kopf_webhook.py"), str(cert_dir)],
                            stderr=subprocess.PIPE, env=env)
    assert proc.stderr is not None
    for raw in proc.stderr:
        line = raw.decode(errors="replace")
        if line.startswith("peer serving https://127.0.0.1:"):
            threading.Thread(target=_drain, args=(proc.stderr,), daemon=True).start()
            return proc, int(line.rsplit(":", 1)[1].split("/")[0])
    raise SystemExit(f"the kopf peer did not start (exit {proc.wait()})")


# The submitter's check alone (no controller account to ask about), so a miss is one review.
USER_ONLY = "controllers: {appWrapper: []}\n"
CHECK_OFF = "authorization: {userRBACCheck: false}\n" + USER_ONLY
SAR_CASES = (
    ("authorization.userRBACCheck off (no SubjectAccessReview)", CHECK_OFF, "10"),
    ("userRBACCheck on, warm answer cache (answers reused 10 s)", USER_ONLY, "10"),
    ("userRBACCheck on, every review missing the cache (--authorization-cache-ttl 0)", USER_ONLY, "0"),
)


def run_sar_tables(args: argparse.Namespace, cert_dir: Path) -> None:
    """/validate of the mutated AppWrapper (one PyTorchJob component, so one SubjectAccessReview on
    a miss), by a gateway connected to a table-driven HTTPS authorizer in this process."""
    body = validate_body()
    grants = {("alice", "kubeflow.org", "pytorchjobs", "team-a")}
    with AuthorizerStub(cert_dir / "authorizer", grants=grants) as stub:
        print(f"authorizer: tests/webhook/authorizer_stub.py (aiohttp, HTTPS, in the bench process) answering discovery "
              f"and SubjectAccessReviews; a real API server adds its own latency to every miss")
        for label, policy_text, ttl in SAR_CASES:
            policy = cert_dir / "sar-policy.yaml"
            policy.write_text(policy_text)
            gateway = start_gateway(cert_dir, "--workers", args.workers, "--threads", args.threads,
                                    "--worker-class", args.worker_class, "--policy-file", str(policy),
                                    "--kubeconfig", str(stub.kubeconfig), "--authorization-cache-ttl", ttl,
                                    "--audit-log", str(cert_dir / "audit-sar.log"))
            try:
                print(f"gateway /validate, {label}: mutated {MANIFEST.name} ({len(body)} bytes)")
                run_table(args, gateway.host, gateway.port, gateway.process.pid, body, cert_dir,
                          cert_dir / "audit-sar.log", path="/validate", stub=stub)
            finally:
                gateway.stop()


def load_arguments(description: str) -> argparse.ArgumentParser:
    """The options of a load run that measure_window reads, and the gateway's shape."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--warmup", type=float, default=1.5)
    p.add_argument("--workers", default="2")
    p.add_argument("--threads", default="8")
    p.add_argument("--conns", default="1,16")
    p.add_argument("--client", choices=["wrk", "python"], default="wrk" if shutil.which("wrk") else "python")
    return p


def main() -> int:
    p = load_arguments(__doc__.splitlines()[0])
    p.add_argument("--worker-class", choices=["gthread", "sync"], default="gthread")
    p.add_argument("--peer-python", default=os.environ.get("BATCHGATE_PEER_PYTHON"),
                   help="a Python with kopf installed (bench/requirements.txt): also measure the kopf peer")
    p.add_argument("--repeat", type=int, default=1, help="runs per concurrency (each printed): others' load varies")
    p.add_argument("--review", choices=["appwrapper", "pod-phase"], default="appwrapper",
                   help="what to POST: the demo's PyTorchJob-in-AppWrapper, or a pod of a 256-pod pytorch job (Pod phase)")
    p.add_argument("--endpoint", choices=["mutate", "validate"], default="mutate",
                   help="where the main table's reviews go: /mutate, or /validate (the AppWrapper as mutated, "
                        "authorization.userRBACCheck off: the rules alone, as Kueue's validator)")
    p.add_argument("--sar", action="store_true",
                   help="also /validate with per-component SubjectAccessReviews: check off, warm cache, every review missing")
    args = p.parse_args()
    body = review_body() if args.review == "appwrapper" else pod_phase_body()
    if args.endpoint == "validate":
        if args.review != "appwrapper":
            raise SystemExit("--endpoint validate sends the mutated AppWrapper: drop --review pod-phase")
        body = validate_body()
    described = (MANIFEST.name if args.review == "appwrapper"
                 else f"pod {POD_PHASE_PODS // 2} of a {POD_PHASE_PODS}-pod pytorch Indexed Job (Pod phase)")
    with tempfile.TemporaryDirectory(prefix="batchgate-bench-") as tmp:
        cert_dir = Path(tmp)
        write_serving_files(cert_dir, service_names("batchgate-webhook", "batchgate-system"), SystemClock().now())
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"machine: {machine()}; load generator on the same host; load average before: {load}")
        print(f"client: {CLIENTS[args.client]}")
        policy: tuple[str, ...] = ()
        if args.endpoint == "validate":
            (cert_dir / "policy.yaml").write_text(CHECK_OFF)
            policy = ("--policy-file", str(cert_dir / "policy.yaml"))
        gateway = start_gateway(cert_dir, "--workers", args.workers, "--threads", args.threads,
                                "--worker-class", args.worker_class, *policy,
                                "--audit-log", str(cert_dir / "audit.log"))
        try:
            shape = f"{args.workers} workers x {args.threads} threads" if args.worker_class == "gthread" else \
                f"{args.workers} workers (no keep-alive: a TLS handshake per review)"
            print(f"gateway: gunicorn {args.worker_class}, {shape}, TLS (ECDSA P-256), "
                  f"audit log to a file, multiprocess metrics on; review: {described} "
                  f"({len(body)} bytes) to /{args.endpoint}"
                  + (" (authorization.userRBACCheck off)" if args.endpoint == "validate" else ""))
            run_table(args, gateway.host, gateway.port, gateway.process.pid, body, cert_dir, cert_dir / "audit.log",
                      path=f"/{args.endpoint}")
        finally:
            gateway.stop()
        if args.peer_python and args.review == "appwrapper" and args.endpoint == "mutate":
            peer = start_peer(args.peer_python, cert_dir)
            try:
                print("peer: kopf 1.45.2 WebhookServer (aiohttp, one process), same rules via @kopf.on.mutate, "
                      "same certificate, no audit log or metrics")
                run_table(args, "127.0.0.1", peer[1], peer[0].pid, body, cert_dir)
            finally:
                peer[0].terminate()
                peer[0].wait(10)
        if args.sar:
            run_sar_tables(args, cert_dir)
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())} (other work on the machine skews figures)")
    if not args.peer_python:
        print("peer (measured before, bench/peer_kopf_webhook.py): kopf 1.45.2 mutating webhook, same machine kind: "
              "c=1 ~1,190 req/s p99 1.2 ms; c=16 ~1,550 req/s p99 ~25 ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
