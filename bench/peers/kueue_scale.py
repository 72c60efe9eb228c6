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
        [--kueue-feature-gates SchedulingEquivalenceHashing=true]

`--scale 0.05` runs a twentieth of the 15,000 Workloads: a few minutes. A peer that is not built
or does not start ends the run with one line; a run that does not finish says so, with no time.
"""

from __future__ import annotations

import argparse
import dataclasses
import faulthandler
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Mapping

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.admission_scale import (ApiRequests, Measured, exit_on_terminate, print_admissions, run_scenario,  # noqa: E402
                                   scenario_arguments, setup, unfinished)
from bench.machine_info import machine  # noqa: E402
from controller.adapters.kube import RESOURCES, KubeClient  # noqa: E402
from realcluster import toolchain  # noqa: E402
from realcluster.cluster import RealCluster, RealClusterError  # noqa: E402
from realcluster.peers import KUEUE, PeerError, Peers  # noqa: E402

WORKLOADS = dataclasses.replace(RESOURCES["Workload"], version="v1beta2")
NOT_BUILT = "the real control plane or the peers are not built: run `make kube peers` (needs Go)"


def feature_gates(text: str) -> dict[str, bool]:
    """`Name=true,Other=false` (Kueue's own --feature-gates syntax) as a mapping; an argparse type."""
    gates: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or value.strip().lower() not in ("true", "false"):
            raise argparse.ArgumentTypeError(f"{item!r}: expected Name=true or Name=false")
        gates[name.strip()] = value.strip().lower() == "true"
    return gates


def gate_text(gates: Mapping[str, bool]) -> str:
    return ",".join(f"{name}={str(on).lower()}" for name, on in gates.items())


def gates_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kueue-feature-gates", type=feature_gates, default={}, metavar="NAME=BOOL,...",
                        help="Kueue's feature gates beside upstream's config (e.g. SchedulingEquivalenceHashing=true)")


def measure_kueue(cohorts: int, queues_per_cohort: int, scale: float, timeout: float,
                  gates: Mapping[str, bool] | None = None) -> tuple[Measured, Path]:
    """Kueue on a fresh real control plane (audit on), the scenario run against it; the run's
    workdir is returned (its logs), removed by the caller once the run is judged. Raises
    PeerError or RealClusterError when a peer is not built or it or the cluster does not start."""
    control_plane = toolchain.locate()
    built = toolchain.locate(which=toolchain.peer_programs)
    if control_plane is None or built is None:
        raise PeerError(NOT_BUILT)
    workdir = Path(tempfile.mkdtemp(prefix="bench-peers-"))
    with RealCluster(workdir, binaries=control_plane, operators=False, audit=True) as cluster, \
            Peers(cluster, built) as peers:
        kueue = peers.start_kueue(["batch/job"], feature_gates=gates)
        assert kueue.program.process is not None
        client = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
        queues = setup(client, cohorts, queues_per_cohort)
        requests = ApiRequests(cluster, f"system:serviceaccount:{KUEUE.namespace}:{KUEUE.account}")
        apiserver = cluster.programs["kube-apiserver"].process
        m = run_scenario(client, queues, kueue.program.process.pid, scale, timeout, requests, WORKLOADS,
                         api_pid=apiserver.pid if apiserver is not None else None)
    return m, workdir


def main() -> int:
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1` prints every thread's stack: where a long run is
    parser = scenario_arguments(__doc__)
    parser.add_argument("--timeout", type=float, default=3600, help="seconds before the run counts as unfinished")
    gates_argument(parser)
    args = parser.parse_args()
    try:
        m, workdir = measure_kueue(args.cohorts, args.queues, args.scale, args.timeout, args.kueue_feature_gates)
    except (PeerError, RealClusterError) as err:
        print(f"bench/peers: {err}", file=sys.stderr)
        return 2
    versions = toolchain.load_versions()
    print(f"machine: {machine()}, load average {os.getloadavg()[0]:.1f} at the end")
    print(f"scenario: {args.cohorts} cohorts x {args.queues} ClusterQueues, {m.total} workloads (scale {args.scale}); "
          f"Kueue {versions.kueue} on Kubernetes {versions.kubernetes}"
          f"{', feature gates ' + gate_text(args.kueue_feature_gates) if args.kueue_feature_gates else ''}")
    print(f"kueue: {m.cpu:.1f} CPU s (user+sys), {1000 * m.cpu / m.wall:.0f} mCPU average, peak RSS {m.rss:.0f} MB; "
          f"API server: {1000 * m.api_cpu / m.wall:.0f} mCPU average, peak RSS {m.api_rss:.0f} MB")
    if not m.finished:
        print(f"{unfinished(m, args.timeout)} (logs kept in {workdir / 'logs'})")
        return 1
    shutil.rmtree(workdir, ignore_errors=True)
    print_admissions(m, "evictions")
    print("API server, requests served by verb (all clients): "
          + ", ".join(f"{verb} {count:.0f}" for verb, count in sorted(m.served.items()) if count))
    print("kueue's own requests (audit log): " + ", ".join(f"{what} {count}" for what, count in sorted(m.own.items())))
    return 0


if __name__ == "__main__":
    exit_on_terminate()
    sys.exit(main())
