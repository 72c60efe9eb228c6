"""Kueue and batchgate's controller on Kueue's baseline scenario, alternately, on the same real control plane build.

Runs alternate Kueue, batchgate, Kueue, batchgate, ... (`--rounds` each), every run on a fresh
real control plane with its audit log on: Kueue v0.17 as bench/peers/kueue_scale.py runs it,
batchgate's controller as bench/admission_scale.py `--kube real` does. One table: per run the
wall time, mean time to admission per class, mean ClusterQueue usage (as Kueue's harness
computes it from the ClusterQueues' status, and as the runner sees it from the admissions), the
controller's CPU (user+sys) and peak RSS, the API server's requests by verb (all clients, from
its /metrics), the controller's own writes per admitted Workload (audit log) and evictions;
then each side's means over its finished runs and the ratio batchgate/Kueue. The load average is
printed before each run: other work on the machine skews every figure.

    python bench/peers/side_by_side.py [--scale 0.05] [--rounds 2] [--timeout 3600]
        [--policy FILE] [--kueue-feature-gates NAME=BOOL,...]

A run that does not finish says NOT FINISHED and counts in no mean; a peer or control plane not
built, or a peer that does not start, ends the comparison with one line.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.admission_scale import (Measured, exit_on_terminate, measure, policy_argument, read_policy,  # noqa: E402
                                   scenario_arguments, unfinished)
from bench.machine_info import machine  # noqa: E402
from bench.peers.kueue_scale import NOT_BUILT, gate_text, gates_argument, measure_kueue  # noqa: E402
from realcluster import toolchain  # noqa: E402
from realcluster.cluster import RealClusterError  # noqa: E402
from realcluster.peers import PeerError  # noqa: E402

SIDES = ("kueue", "batchgate")
CLASSES = ("large", "medium", "small")
VERBS = ("GET", "LIST", "WATCH", "POST", "PUT", "PATCH", "APPLY", "DELETE")
COLUMNS = ("wall s", *(f"adm {c} s" for c in CLASSES), "usage % (harness)", "usage % (runner)", "CPU s", "RSS MB", *VERBS, "writes/adm", "evictions")


def row(m: Measured) -> list[float]:
    """The table's figures for one finished run, in COLUMNS' order."""
    means = [sum(v) / len(v) if (v := m.by_class.get(c)) else float("nan") for c in CLASSES]
    return [m.wall, *means, m.harness_usage, m.usage, m.cpu, m.rss, *(m.served.get(v, 0.0) for v in VERBS), m.writes_per_admitted,
            float(m.evictions)]


def cell(value: float) -> str:
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.0f}" if abs(value) >= 1000 else f"{value:.1f}"


def line(label: str, values: list[float]) -> str:
    return f"| {label} | " + " | ".join(cell(v) for v in values) + " |"


def main() -> int:
    parser = scenario_arguments(__doc__)
    parser.set_defaults(scale=0.05)
    parser.add_argument("--rounds", type=int, default=2, help="runs of each side, alternating")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds before a run counts as unfinished")
    parser.add_argument("--qps", type=float, default=50, help="batchgate controller's --qps")
    parser.add_argument("--burst", type=int, default=100, help="batchgate controller's --burst")
    policy_argument(parser)
    gates_argument(parser)
    args = parser.parse_args()
    policy = read_policy(parser, args.policy)
    if toolchain.locate() is None or toolchain.locate(which=toolchain.peer_programs) is None:
        print(f"bench/peers: {NOT_BUILT}", file=sys.stderr)
        return 2
    versions = toolchain.load_versions()
    print(f"machine: {machine()}; "
          f"Kubernetes {versions.kubernetes}, Kueue {versions.kueue}, batchgate controller --qps {args.qps} "
          f"--burst {args.burst}{f', policy {args.policy}: ' + ' '.join(policy.split()) if policy else ''}"
          f"{', Kueue feature gates ' + gate_text(args.kueue_feature_gates) if args.kueue_feature_gates else ''}; "
          f"scale {args.scale}, {args.cohorts} cohorts x {args.queues} ClusterQueues", flush=True)
    rows: list[str] = []
    finished: dict[str, list[list[float]]] = {side: [] for side in SIDES}
    for n in range(args.rounds):
        for side in SIDES:
            load = " ".join(f"{v:.1f}" for v in os.getloadavg())
            try:
                if side == "kueue":
                    m, workdir = measure_kueue(args.cohorts, args.queues, args.scale, args.timeout,
                                               args.kueue_feature_gates)
                    shutil.rmtree(workdir, ignore_errors=True)
                else:
                    m = measure(args.cohorts, args.queues, args.scale, args.qps, args.burst, kube="real",
                                timeout=args.timeout, policy=policy)
            except (PeerError, RealClusterError) as err:
                print(f"bench/peers: {err}", file=sys.stderr)
                return 2
            label = f"{side} {n + 1} (load {load})"
            if m.finished:
                finished[side].append(row(m))
                rows.append(line(label, finished[side][-1]))
            else:
                rows.append(f"| {label} | {unfinished(m, args.timeout)} |")
            print(rows[-1], f"own requests: {dict(sorted(m.own.items()))}", flush=True)
    print(f"\n{m.total} workloads per run; load average at the end {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    print("| run | " + " | ".join(COLUMNS) + " |")
    print("|---" * (len(COLUMNS) + 1) + "|")
    for text in rows:
        print(text)
    means = {side: [sum(col) / len(col) for col in zip(*runs)] for side, runs in finished.items() if runs}
    for side, values in means.items():
        print(line(f"mean {side} ({len(finished[side])} runs)", values))
    if len(means) == len(SIDES):
        print(line("ratio batchgate/kueue", [b / k if k else float("nan")
                                              for b, k in zip(means["batchgate"], means["kueue"])]))
    return 0


if __name__ == "__main__":
    exit_on_terminate()
    sys.exit(main())
