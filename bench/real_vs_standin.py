"""The real control plane (realcluster/) against the stand-in (localcluster/), in one run.

Rounds alternate real, stand-in, real, ... each on a fresh cluster with the same nodes (4 x 8
GPUs) running the product's image as process pods (bench/install.py's cluster). Per round:

1. start: from the cluster's `start()` to every node Ready and the default service account made
   (`realcluster.cluster.nodes_ready`, what `RealCluster.start()` itself waits for);
2. install: `kubectl apply --server-side -k manifests/local` to every product pod Ready, and to
   alice's first AppWrapper admitted (bench/install.py's `timed_install`: the demo's policy,
   teams and queues, as the install test applies them);
3. webhook round trip: alice creates queued Jobs in team-a, one at a time over one keep-alive
   connection of the `kubernetes` client; the API server calls the gateway pods (mutate, then
   validate) through their Service. Each create's latency as the client sees it, interleaved with
   the same create in a namespace outside the webhooks' selector (no webhook call), so that the
   difference is the webhooks' share. The Jobs ask for more CPU than the whole cohort holds, so
   they stay queued and start nothing.

Prints each round and then median (min-max) per cluster, with the machine and /proc/loadavg
before and after (other work on the machine skews every figure). Asserts nothing. Loopback only.

    .venv/bin/python bench/real_vs_standin.py [--rounds 3] [--creates 200] [--create-seconds 60]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml  # noqa: E402
from kubernetes import client, config  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402

from bench.install import make_cluster, timed_install  # noqa: E402
from bench.machine_info import machine  # noqa: E402
from bench.webhook_load import percentile  # noqa: E402
from demo.kubectl import Kubectl  # noqa: E402
from localcluster.runner import LocalCluster  # noqa: E402
from realcluster import toolchain  # noqa: E402
from realcluster.cluster import RealCluster, nodes_ready  # noqa: E402

KINDS = ("real", "local")
LABELS = {"real": "real", "local": "stand-in"}
START_SECONDS = 180.0
MANAGED_NAMESPACE = "team-a"
PLAIN_NAMESPACE = "bench-plain"
WARMUP_CREATES = 10
UNFIT_CPU = "1000"  # more than the demo's whole cohort (128 CPUs): the Job stays queued


@dataclass
class Round:
    """One round's figures on one kind of cluster."""

    kind: str
    loadavg: str
    start: float = 0.0
    ready: float = 0.0
    admitted: float = 0.0
    managed: list[float] = field(default_factory=list)
    plain: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def timed_start(cluster: LocalCluster | RealCluster) -> float:
    """Seconds from `start()` to the cluster ready for use (both kinds judged alike)."""
    started = time.monotonic()
    cluster.start()
    names = {spec.name for spec in cluster.nodes}
    while not nodes_ready(cluster.url, str(cluster.ca_file), cluster.token("admin"), names):
        if time.monotonic() - started > START_SECONDS:
            raise RuntimeError(f"the {type(cluster).__name__} was not ready {START_SECONDS:.0f} s after start()")
        time.sleep(0.05)
    return time.monotonic() - started


def plain_namespace(kubectl: Kubectl) -> None:
    """A namespace outside the webhooks' namespaceSelector where alice has her team's role."""
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PLAIN_NAMESPACE}},
               {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "alice", "namespace": PLAIN_NAMESPACE},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "batchgate-team"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]}]
    kubectl.run("apply", "-f", "-", stdin=yaml.safe_dump_all(objects))


def queued_job(name: str) -> dict[str, Any]:
    """A Job as a team member queues it (the policy refuses an unlabelled one at top level); in
    team-a the gateway adds identity, priority and scheduling. Suspended already so that, outside
    the webhooks' reach, it starts nothing either."""
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "default-queue"}},
            "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": UNFIT_CPU}}}]}}}}


def timed_create(jobs: client.BatchV1Api, namespace: str, name: str) -> float:
    """One create's latency, body read (not parsed) so the connection goes back to the pool."""
    body = queued_job(name)
    started = time.perf_counter()
    response = jobs.create_namespaced_job(namespace, body, _preload_content=False)
    _ = response.data
    elapsed = time.perf_counter() - started
    response.release_conn()
    return elapsed


def measure_creates(cluster: LocalCluster | RealCluster, result: Round, count: int, seconds: float) -> None:
    """Alternate a create in team-a (through the gateway) and one in the plain namespace, as alice."""
    deadline = time.monotonic() + seconds
    with config.new_client_from_config(config_file=str(cluster.kubeconfig), context="alice") as api:
        jobs = client.BatchV1Api(api)
        for i in range(WARMUP_CREATES + count):
            if time.monotonic() > deadline:
                break
            for namespace, into in ((MANAGED_NAMESPACE, result.managed), (PLAIN_NAMESPACE, result.plain)):
                try:
                    elapsed = timed_create(jobs, namespace, f"bench-{i}")
                except ApiException as err:
                    result.errors.append(f"{namespace}: {err.status} {(err.body or '')[:200]}")
                    continue
                if i >= WARMUP_CREATES:
                    into.append(elapsed)


def run_round(kind: str, workdir: Path, count: int, seconds: float) -> Round:
    result = Round(kind, loadavg())
    cluster, kubectl = make_cluster(workdir, kind)
    try:
        result.start = timed_start(cluster)
        result.ready, result.admitted = timed_install(kubectl)
        plain_namespace(kubectl)
        measure_creates(cluster, result, count, seconds)
    finally:
        cluster.stop()
    return result


def ms(values: list[float], q: float) -> str:
    return f"{percentile(sorted(values), q) * 1000:.1f}" if values else "-"


def describe(result: Round) -> str:
    line = (f"{LABELS[result.kind]:>8}: start -> Ready {result.start:.1f} s; apply -k -> every pod Ready "
            f"{result.ready:.1f} s, -> first AppWrapper admitted {result.admitted:.1f} s; Job create as alice "
            f"through the gateway p50 {ms(result.managed, 0.5)} ms, p99 {ms(result.managed, 0.99)} ms "
            f"({len(result.managed)}), without a webhook p50 {ms(result.plain, 0.5)} ms, p99 {ms(result.plain, 0.99)} "
            f"ms ({len(result.plain)}); load before: {result.loadavg}")
    return line + "".join(f"\n    failed create: {e}" for e in result.errors[:3]) + \
        (f"\n    ... {len(result.errors)} failed creates" if len(result.errors) > 3 else "")


def spread(values: list[float], unit: str, scale: float = 1.0, digits: int = 1) -> str:
    shown = [v * scale for v in values]
    return (f"median {statistics.median(shown):.{digits}f} {unit} "
            f"({min(shown):.{digits}f}-{max(shown):.{digits}f}, {len(shown)} rounds)")


def summary(results: list[Round]) -> list[str]:
    measures: list[tuple[str, Callable[[Round], float], str, float]] = [
        ("control plane start() -> every node Ready", lambda r: r.start, "s", 1.0),
        ("apply --server-side -k manifests/local -> every product pod Ready", lambda r: r.ready, "s", 1.0),
        ("apply -> alice's first AppWrapper admitted", lambda r: r.admitted, "s", 1.0),
        ("Job create through the gateway, p50", lambda r: percentile(sorted(r.managed), 0.5), "ms", 1000.0),
        ("Job create through the gateway, p99", lambda r: percentile(sorted(r.managed), 0.99), "ms", 1000.0),
        ("Job create without a webhook, p50", lambda r: percentile(sorted(r.plain), 0.5), "ms", 1000.0),
        ("Job create without a webhook, p99", lambda r: percentile(sorted(r.plain), 0.99), "ms", 1000.0)]
    lines = []
    for what, value, unit, scale in measures:
        per_kind = [f"{LABELS[k]} {spread([value(r) for r in results if r.kind == k], unit, scale)}" for k in KINDS]
        lines.append(f"{what}: " + "; ".join(per_kind))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds per cluster (they alternate)")
    parser.add_argument("--creates", type=int, default=200, help="timed Job creates per namespace per round")
    parser.add_argument("--create-seconds", type=float, default=60.0, help="cap on one round's creates")
    args = parser.parse_args(argv)
    if toolchain.locate() is None:
        print("skipped: the real control plane is not built (`.venv/bin/python -m realcluster.toolchain`, needs Go)")
        return 0
    print(f"machine: {machine()}; kube-apiserver {toolchain.load_versions().kubernetes} and the stand-in on "
          f"loopback, the client on the same cores; kubectl: the release's on the real control plane, the "
          f"PATH's on the stand-in (as in the tests: tests/clusters.py)")
    print(f"/proc/loadavg before: {loadavg()}", flush=True)
    results = []
    for i in range(args.rounds):
        for kind in KINDS:
            with tempfile.TemporaryDirectory() as tmp:
                results.append(run_round(kind, Path(tmp) / "cluster", args.creates, args.create_seconds))
            print(f"round {i + 1} {describe(results[-1])}", flush=True)
    print(f"/proc/loadavg after: {loadavg()}")
    print("\n".join(summary(results)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
