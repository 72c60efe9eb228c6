"""Kueue's scheduler performance scenario against Kueue itself, on the real control plane.

The shape is Kueue's harness's baseline (`test/performance/scheduler/configs/baseline`: 5 cohorts
x 6 ClusterQueues, Workloads in three classes, each marked Finished its runtime after admission),
and the runner is bench/admission_scale.py's, which runs the same shape against batchgate's
controller: here Kueue v0.17 (`make peers`) admits instead, run by `realcluster.peers` on a fresh
`RealCluster` with only `batch/job` integrated (the Workloads are created directly, as Kueue's
runner does, and in v1beta2 as it writes them: v0.17 refuses a v1beta1 status write to a
Workload that holds quota, since its CEL rule compares a priorityClassSource that the converted
object lacks). It prints wall time, mean ClusterQueue usage, mean time to admission per class,
Kueue's CPU (user+sys) and peak RSS, the API requests the API server served by verb (every
client's: the runner's creates and status patches are among them) and Kueue's own requests by
verb and resource, read from kube-apiserver's audit log (Kueue's metrics count none: its
controller-runtime no longer exports client-go's request metrics).

    python bench/peers/kueue_scale.py [--cohorts 5 --queues 6] [--scale 1.0] [--timeout 3600]

`--scale 0.05` runs a twentieth of the 15,000 Workloads: a few minutes. A peer that is not built
or does not start ends the run with one line; a run that does not finish says so, with no time.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import shutil
import ssl
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.admission_scale import (BASELINE, Run, follow, generate, mean_usage, proc_cpu_seconds,  # noqa: E402
                                   proc_peak_rss_mb, scenario_arguments, setup)
from controller.adapters.kube import RESOURCES, KubeClient  # noqa: E402
from realcluster import toolchain  # noqa: E402
from realcluster.cluster import RealCluster, RealClusterError  # noqa: E402
from realcluster.peers import KUEUE, PeerError, Peers  # noqa: E402

WORKLOADS = dataclasses.replace(RESOURCES["Workload"], version="v1beta2")


def scrape(url: str, token: str, ca_file: str) -> str:
    """The API server's /metrics, read with a bearer token."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30, context=ssl.create_default_context(cafile=ca_file)) as reply:
        return str(reply.read().decode())


def by_label(metrics: str, name: str, label: str) -> Counter[str]:
    """A counter's samples summed by one of its labels."""
    out: Counter[str] = Counter()
    for family in text_string_to_metric_families(metrics):
        for sample in family.samples:
            if sample.name == name:
                out[sample.labels.get(label, "")] += sample.value
    return out


def own_requests(cluster: RealCluster) -> Counter[str]:
    """Kueue's completed requests as `verb resource[/subresource]`, from the audit log."""
    account = f"system:serviceaccount:{KUEUE.namespace}:{KUEUE.account}"
    out: Counter[str] = Counter()
    for request, count in cluster.read_audit().completed.items():
        if request.user == account:
            out[f"{request.verb} {request.resource}" + (f"/{request.subresource}" if request.subresource else "")] += count
    return out


def main() -> int:
    parser = scenario_arguments(__doc__)
    parser.add_argument("--timeout", type=float, default=3600, help="seconds before the run counts as unfinished")
    args = parser.parse_args()
    control_plane = toolchain.locate()
    built = toolchain.locate(which=toolchain.peer_programs)
    if control_plane is None or built is None:
        print("bench/peers: the real control plane or the peers are not built: run `make kube peers` (needs Go)",
              file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="bench-peers-"))
    try:
        with RealCluster(workdir, binaries=control_plane, operators=False, audit=True) as cluster, \
                Peers(cluster, built) as peers:
            kueue = peers.start_kueue(["batch/job"])
            assert kueue.program.process is not None
            pid = kueue.program.process.pid
            client = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
            queues = setup(client, args.cohorts, args.queues)
            admin, ca = cluster.token("admin"), str(cluster.ca_file)
            before = by_label(scrape(f"{cluster.url}/metrics", admin, ca), "apiserver_request_total", "verb")
            own_before = own_requests(cluster)
            cpu0 = proc_cpu_seconds(pid)
            total = sum(len(queues) * max(1, round(c.count * args.scale)) for c in BASELINE)
            run, done = Run(), threading.Event()
            t0 = time.monotonic()
            threading.Thread(target=follow, args=(client, run, total, done, WORKLOADS), daemon=True).start()
            generate(client, run, queues, args.scale, t0, WORKLOADS)
            finished = done.wait(args.timeout)
            t1 = time.monotonic()
            cpu, rss = proc_cpu_seconds(pid) - cpu0, proc_peak_rss_mb(pid)
            served = by_label(scrape(f"{cluster.url}/metrics", admin, ca), "apiserver_request_total", "verb") - before
            own = own_requests(cluster) - own_before
            usage = mean_usage(run, queues, t0, t1)
    except (PeerError, RealClusterError) as err:
        print(f"bench/peers: {err}", file=sys.stderr)
        return 2
    versions = toolchain.load_versions()
    print(f"machine: {platform.node()} {platform.machine()} {os.cpu_count()} cpus, load average "
          f"{os.getloadavg()[0]:.1f} at the end")
    print(f"scenario: {args.cohorts} cohorts x {args.queues} ClusterQueues, {total} workloads (scale {args.scale}); "
          f"Kueue {versions.kueue} on Kubernetes {versions.kubernetes}")
    if not finished:
        print(f"NOT FINISHED within {args.timeout:.0f} s: {run.finished} of {total} workloads finished "
              f"(logs kept in {workdir / 'logs'})")
        return 1
    shutil.rmtree(workdir, ignore_errors=True)
    print(f"wall: {t1 - t0:.1f} s   mean ClusterQueue usage: {usage:.1f} %   evictions seen: {run.evictions}")
    for name in ("large", "medium", "small"):
        values = [t.admitted - t.created for t in run.tracked.values() if t.cls.name == name and t.admitted is not None]
        mean = sum(values) / len(values) if values else float("nan")
        print(f"time to admission {name:<6}: mean {mean:7.2f} s over {len(values)} workloads")
    print(f"kueue: {cpu:.1f} CPU s (user+sys), {1000 * cpu / (t1 - t0):.0f} mCPU average, peak RSS {rss:.0f} MB")
    print("API server, requests served by verb (all clients): "
          + ", ".join(f"{verb} {count:.0f}" for verb, count in sorted(served.items()) if count))
    print("kueue's own requests (audit log): " + ", ".join(f"{what} {count}" for what, count in sorted(own.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
