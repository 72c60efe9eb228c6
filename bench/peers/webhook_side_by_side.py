"""The gateway beside the Go webhooks doing the same job: one AppWrapper's CREATE review to Kueue
v0.17's webhook, to the AppWrapper controller's and to `batchgate webhook`, in one run, one client.

Starts a real control plane with the AppWrapper controller and Kueue (appwrapper integration on)
as realcluster/peers.py runs them, each serving its own webhooks with the certificates its
cert-controller made, and `batchgate webhook` as bench/webhook_load.py starts it, connected to the
same API server. The paths compared, each server's own (Go peers': read from their installed
webhook configurations):
- mutate: alice's PyTorchJob-in-AppWrapper (demo/samples/alice) naming its queue;
- validate + SAR: the same AppWrapper mutated, to a validator that asks the API server one
  SubjectAccessReview per review (the AppWrapper controller's: userRBACAdmissionCheck, on unless
  its config turns it off; ours checking the submitter alone, --authorization-cache-ttl 0);
- validate: the same, to a validator that asks none (Kueue's; ours with the check off).
PyTorchJobs are served (the stand-in's CRD) and alice may create them, so every review is allowed.

Each path is loaded back to back at each of `--conns` (bench/webhook_load.py's client: wrk when
installed, else its Python keep-alive client) and then paced at the rate Kueue's baseline scenario
creates Workloads at its peak (one review per path per creation; Python client, open loop, 16
connections). CPU per review is the serving process's user+sys CPU over the window (its children's
too: gunicorn's workers) less its CPU over an idle window as long, measured just before, divided
by the reviews it answered.

    python bench/peers/webhook_side_by_side.py [--seconds 8] [--warmup 1.5] [--conns 1,16]
                                               [--workers 2] [--threads 8]

A peer or the control plane not built, a server that does not start, or a review not allowed
ends the bench with one line.
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from batchgate.clock import SystemClock  # noqa: E402
from bench.admission_decisions import CONFIGS, Config  # noqa: E402
from bench.machine_info import machine  # noqa: E402
from bench.webhook_load import (BENCH_USER, CHECK_OFF, CLIENTS, USER_ONLY, Target, check_reply,  # noqa: E402
                                load_arguments, measure_window, process_tree_cpu_seconds, review_body,
                                validate_body)
from certs.authority import service_names, write_serving_files  # noqa: E402
from realcluster import toolchain  # noqa: E402
from realcluster.cluster import RealCluster, RealClusterError  # noqa: E402
from realcluster.peers import APPWRAPPER, KUEUE, Layout, PeerError, Peers, upstream_config  # noqa: E402
from localcluster.rbac.bootstrap import cluster_role, cluster_role_binding, rule, user  # noqa: E402
from localcluster.runner import CRDS_DIR  # noqa: E402
from realcluster.setup import SetupError, apply_objects, get_json  # noqa: E402
from webhook.serving.launch import RunningGateway, start_gateway  # noqa: E402

NOT_BUILT = "the real control plane or the peers are not built: run `make kube peers` (needs Go)"
QUEUE = {"kueue.x-k8s.io/queue-name": "default-queue"}  # named by the user, so Kueue's webhook suspends it
PACED_CONNS = 16
# the roles compared: each server's path for each, ours doing what the peer's does
MUTATE, VALIDATE, VALIDATE_SAR = "mutate", "validate", "validate + SAR"
GATEWAY_PATHS = {MUTATE: "/mutate", VALIDATE: "/validate", VALIDATE_SAR: "/validate"}
CONFIGURATION_KIND = {"mutate": "MutatingWebhookConfiguration", "validate": "ValidatingWebhookConfiguration"}
# PyTorchJobs served (the CRD the stand-in operator serves: each validator looks its resource up) and
# alice allowed to create them, so that every validator's SubjectAccessReview allows
ALICE_MAY_CREATE_PYTORCHJOBS: list[dict[str, Any]] = [
    yaml.safe_load((CRDS_DIR / "pytorchjobs.kubeflow.org.yaml").read_text()),
    cluster_role("bench:create-pytorchjobs", [rule(("create",), ("kubeflow.org",), ("pytorchjobs",))]),
    cluster_role_binding("bench:alice-creates-pytorchjobs", "bench:create-pytorchjobs", [user(BENCH_USER.username)]),
]


# pure ------------------------------------------------------------------------------------------------


def appwrapper_paths(objects: Sequence[Mapping[str, Any]], program: str) -> dict[str, str]:
    """The path of the mutating and of the validating webhook that a peer's install sends AppWrapper
    CREATEs to ("mutate", "validate"), from its webhook configurations."""
    found: dict[str, str] = {}
    for role, kind in CONFIGURATION_KIND.items():
        paths = [hook["clientConfig"]["service"]["path"]
                 for obj in objects if obj.get("kind") == kind for hook in obj.get("webhooks") or []
                 if any("appwrappers" in rule.get("resources", ()) and "CREATE" in rule.get("operations", ())
                        and "workload.codeflare.dev" in rule.get("apiGroups", ()) for rule in hook.get("rules") or ())]
        if len(paths) != 1:
            raise PeerError(f"{program}'s install has {len(paths)} {kind} webhooks for AppWrapper CREATEs, not 1: "
                            "enable its appwrapper integration, or update bench/peers/webhook_side_by_side.py")
        found[role] = paths[0]
    return found


@dataclass(frozen=True)
class Arrival:
    """Workloads created per second by a scenario of Kueue's harness: at its peak (every class
    still being created, on every ClusterQueue) and over the span it creates them in."""

    peak: float
    mean: float


def arrival(config: Config) -> Arrival:
    """Each class is created on every ClusterQueue, one every interval_ms, count times."""
    queues = config.cohorts * config.queues
    peak = queues * sum(1000 / c.interval_ms for c in config.classes)
    total = queues * sum(c.count for c in config.classes)
    return Arrival(peak, total / (max(c.count * c.interval_ms for c in config.classes) / 1000))


@dataclass(frozen=True)
class Window:
    """One window's figures for one server, path and load."""

    server: str
    path: str
    load: str
    requests: int
    rps: float
    p50: float
    p99: float
    errors: int
    cpu: float  # the server's CPU seconds over the window, warm-up included
    wall: float  # the window's length, warm-up included
    served: float  # reviews answered over the window, warm-up included
    idle: float  # the server's CPU seconds per second when idle, measured just before
    other: float  # CPUs' worth of other work on the machine meanwhile

    @property
    def us_per_review(self) -> float:
        """The window's CPU less what the server spends idle over as long, per review answered."""
        return max(self.cpu - self.idle * self.wall, 0.0) / self.served * 1e6 if self.served else float("nan")


HEADER = ("| server | path | load | requests | req/s | p50 ms | p99 ms | errors | CPU µs/review (idle subtracted) "
          "| idle CPU ms/s | other load (CPUs) |")


def table(windows: Sequence[Window]) -> list[str]:
    return [HEADER, "|---" * (HEADER.count("|") - 1) + "|",
            *(f"| {w.server} | {w.path} | {w.load} | {w.requests:,} | {w.rps:,.0f} | {w.p50:.2f} | {w.p99:.2f} "
              f"| {w.errors} | {w.us_per_review:,.0f} | {w.idle * 1000:.1f} | {w.other:.2f} |" for w in windows)]


def verdicts(windows: Sequence[Window], paced: str, ours: str = "batchgate") -> list[str]:
    """Against issue 27's targets: CPU per review within 2x each Go webhook's (at each load, each
    path) and p99 under 10 ms at the paced rate."""
    lines = []
    by = {(w.server, w.path, w.load): w for w in windows}
    for (server, path, load), peer in by.items():
        mine = by.get((ours, path, load))
        if server == ours or mine is None:
            continue
        ratio = mine.us_per_review / peer.us_per_review if peer.us_per_review else float("nan")
        lines.append(f"CPU per review, {path}, {load}: {ours}/{server} {ratio:.2f} "
                     f"(target <= 2: {'met' if ratio <= 2 else 'NOT met'})")
    for (server, path, load), w in by.items():
        if load == paced:
            lines.append(f"p99 at {paced}, {server} {path}: {w.p99:.2f} ms "
                         f"(target < 10 ms: {'met' if w.p99 < 10 else 'NOT met'})")
    return lines


# running ---------------------------------------------------------------------------------------------


def idle_rate(pid: int, seconds: float) -> float:
    """The server's CPU seconds per second with no reviews sent: the Go managers reconcile meanwhile."""
    before, started = process_tree_cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return (process_tree_cpu_seconds(pid) - before) / (time.monotonic() - started)


def measure_server(args: argparse.Namespace, server: str, pid: int, targets: Mapping[str, Target],
                   bodies: Mapping[str, bytes], rate: float, workdir: Path) -> list[Window]:
    """The server's idle CPU, then each path at each connection count and paced at `rate`."""
    idle = idle_rate(pid, args.seconds + args.warmup)
    loads: list[tuple[str, int, float | None]] = [(f"{c} conns", c, None) for c in map(int, args.conns.split(","))]
    loads.append((paced_label(rate), PACED_CONNS, rate))
    out = []
    for path, target in targets.items():
        for label, conns, paced in loads:
            check_reply(target, bodies[path], mutating=path == MUTATE)
            r = measure_window(args, target, pid, bodies[path], workdir, conns, paced)
            out.append(Window(server, path, label, r["requests"], r["rps"], r["p50"], r["p99"], r["errors"], r["cpu"],
                              r["wall"], r["served"], idle, r["other"]))
            print(table([out[-1]])[-1], flush=True)
            for sample in r["error_sample"]:
                print(f"      error: {sample}")
    return out


def paced_label(rate: float) -> str:
    return f"{rate:,.0f}/s over {PACED_CONNS} conns"


def peer_target(cluster: RealCluster, layout: Layout, port: int, path: str, workdir: Path) -> Target:
    """A peer's webhook at its local port, verified against the CA its cert-controller keeps in its Secret."""
    secret = get_json(cluster.url, str(cluster.ca_file), cluster.token("admin"),
                      f"/api/v1/namespaces/{layout.namespace}/secrets/{layout.secret}")
    ca_file = workdir / f"{layout.program}-ca.crt"
    ca_file.write_bytes(base64.b64decode((secret.get("data") or {}).get("ca.crt", "")))
    return Target("127.0.0.1", port, ca_file, path, check_name=False)


def start_batchgate(args: argparse.Namespace, cluster: RealCluster, certs: Path, policy: str) -> RunningGateway:
    """`batchgate webhook` as bench/webhook_load.py starts it, connected to the cluster, with `policy`."""
    write_serving_files(certs, service_names("batchgate-webhook", "batchgate-system"), SystemClock().now())
    (certs / "policy.yaml").write_text(policy)
    return start_gateway(certs, "--workers", args.workers, "--threads", args.threads, "--audit-log",
                         str(certs / "audit.log"), "--authorization-cache-ttl", "0", "--policy-file",
                         str(certs / "policy.yaml"), "--kubeconfig",
                         str(cluster.write_kubeconfig("bench-gateway", cluster.token("admin"))))


def run(args: argparse.Namespace, workdir: Path, rate: float) -> list[Window]:
    control_plane, built = toolchain.locate(), toolchain.locate(which=toolchain.peer_programs)
    if control_plane is None or built is None:
        raise PeerError(NOT_BUILT)
    bodies = {MUTATE: review_body(QUEUE), VALIDATE: validate_body(QUEUE), VALIDATE_SAR: validate_body(QUEUE)}
    windows: list[Window] = []
    with RealCluster(workdir / "cluster", binaries=control_plane, operators=False) as cluster, \
            Peers(cluster, built) as peers, ExitStack() as gateways:
        apply_objects(cluster.url, str(cluster.ca_file), cluster.token("admin"), ALICE_MAY_CREATE_PYTORCHJOBS)
        servers: list[tuple[str, int, dict[str, Target]]] = []
        for layout, start in ((APPWRAPPER, peers.start_appwrapper), (KUEUE, peers.start_kueue)):
            peer = start()
            assert peer.program.process is not None
            objects = peers.render(layout)
            sar = layout == APPWRAPPER and upstream_config(objects, layout).get("userRBACAdmissionCheck", True)
            paths = appwrapper_paths(objects, layout.program)
            servers.append((f"{layout.program} {peer.version}", peer.program.process.pid, {
                MUTATE: peer_target(cluster, layout, peer.ports.webhook, paths["mutate"], workdir),
                VALIDATE_SAR if sar else VALIDATE: peer_target(cluster, layout, peer.ports.webhook, paths["validate"],
                                                               workdir)}))
        for policy, roles in ((USER_ONLY, (MUTATE, VALIDATE_SAR)), (CHECK_OFF, (VALIDATE,))):
            certs = workdir / f"gateway-{len(servers)}"
            gateway = start_batchgate(args, cluster, certs, policy)
            gateways.callback(gateway.stop)
            servers.append(("batchgate", gateway.process.pid, {
                role: Target(gateway.host, gateway.port, certs / "ca.crt", GATEWAY_PATHS[role]) for role in roles}))
        for server, pid, targets in servers:
            windows += measure_server(args, server, pid, targets, bodies, rate, workdir)
    return windows


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] = print) -> int:
    args = load_arguments(__doc__.splitlines()[0]).parse_args(argv)
    baseline = arrival(CONFIGS["baseline"])
    versions = toolchain.load_versions()
    out(f"machine: {machine()}; load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())} "
        "(shared with other work: the figures are noisy)")
    out(f"client: {CLIENTS[args.client]}; paced windows: {CLIENTS['python']}, open loop")
    out(f"rate: Kueue's baseline scenario creates {baseline.peak:,.0f} Workloads/s at its peak "
        f"({baseline.mean:,.0f}/s over its creation span); each creation is one review per path per webhook")
    out(f"servers: AppWrapper controller {versions.appwrapper} and Kueue {versions.kueue} (their own managers, "
        f"Kubernetes {versions.kubernetes}); batchgate webhook, gunicorn gthread {args.workers} workers x "
        f"{args.threads} threads, audit log on, SubjectAccessReviews to the same API server (admin's token)")
    with tempfile.TemporaryDirectory(prefix="bench-webhook-peers-") as tmp:
        try:
            windows = run(args, Path(tmp), baseline.peak)
        except (PeerError, RealClusterError, SetupError) as err:
            out(f"bench/peers: {err}")
            return 2
        except RuntimeError as err:  # the gateway did not start: its message and the last line of its log
            lines = str(err).splitlines()
            out(f"bench/peers: {lines[0]} {lines[-1] if len(lines) > 1 else ''}".rstrip())
            return 2
    out(f"\nload average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for line in table(windows) + verdicts(windows, paced_label(baseline.peak)):
        out(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
