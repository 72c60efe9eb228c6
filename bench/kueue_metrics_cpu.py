"""The controller's CPU with Kueue's metric names exported, next to without, in the same run.

Runs Kueue's baseline scenario (bench/admission_scale.py: its own local cluster, the real
`batchgate controller` process, Workloads created on Kueue's schedule and finished after their
runtime) alternately with the default controller and with `--no-kueue-metrics`, in ABBA order
(on, off, off, on, ...) so a drift in the machine's load falls on both sides alike. /metrics is
scraped every `--scrape-every` seconds in both, as Prometheus would, so the exposition of the
extra series is in the figure. Prints, per run and averaged per side, the controller's CPU
seconds, mCPU over the wall time and CPU per admission; asserts nothing.

    python bench/kueue_metrics_cpu.py [--scale 0.2] [--rounds 1] [--scrape-every 15]
"""

from __future__ import annotations

import argparse
import re
import sys

import numpy  # with matplotlib, in the test requirements

from admission_scale import measure  # noqa: E402  (bench/ is the script's own folder)
from machine_info import machine  # noqa: E402

SIDES = {"with kueue_*": (), "without": ("--no-kueue-metrics",)}


def total(metrics: str, name: str) -> float:
    return sum(float(v) for v in re.findall(rf"^{name}(?:\{{[^}}]*\}})? (\S+)$", metrics, re.M))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cohorts", type=int, default=5)
    parser.add_argument("--queues", type=int, default=6, help="ClusterQueues per cohort")
    parser.add_argument("--scale", type=float, default=0.2, help="fraction of the 15,000 workloads")
    parser.add_argument("--rounds", type=int, default=1, help="ABBA rounds (each runs both sides twice)")
    parser.add_argument("--scrape-every", type=float, default=15.0, help="seconds between scrapes of /metrics")
    parser.add_argument("--qps", type=float, default=50)
    parser.add_argument("--burst", type=int, default=100)
    args = parser.parse_args()
    print(machine())
    order = [side for _ in range(args.rounds) for side in ("with kueue_*", "without", "without", "with kueue_*")]
    results: dict[str, list[tuple[float, float, float]]] = {side: [] for side in SIDES}
    rows: list[tuple[float, float, float, float]] = []  # (kueue on, cycles, admissions, CPU seconds)
    for side in order:
        m = measure(args.cohorts, args.queues, args.scale, args.qps, args.burst, SIDES[side], args.scrape_every)
        admissions = total(m.metrics, "batchgate_admitted_workloads_total")
        cycles = total(m.metrics, "batchgate_admission_cycle_duration_seconds_count")
        series = sum(1 for line in m.metrics.splitlines() if line.startswith("kueue_"))
        results[side].append((m.cpu, m.wall, admissions))
        rows.append((float(side == "with kueue_*"), cycles, admissions, m.cpu))
        print(f"{side:<13} {m.total} workloads, wall {m.wall:6.1f} s, controller CPU {m.cpu:6.2f} s "
              f"({1000 * m.cpu / m.wall:4.0f} mCPU), {admissions:.0f} admissions "
              f"({1000 * m.cpu / max(1, admissions):.2f} ms CPU each), {cycles:.0f} cycles, {series} kueue_* samples, "
              f"{m.scrapes} scrapes, peak RSS {m.rss:.0f} MB", flush=True)
    mean = {side: (sum(c for c, _, _ in runs) / len(runs), sum(w for _, w, _ in runs) / len(runs),
                   sum(a for _, _, a in runs) / len(runs)) for side, runs in results.items()}
    for side, (cpu, wall, admissions) in mean.items():
        print(f"mean {side:<13} CPU {cpu:6.2f} s over {wall:6.1f} s = {1000 * cpu / wall:4.0f} mCPU, "
              f"{1000 * cpu / max(1, admissions):.2f} ms CPU per admission")
    (on_cpu, on_wall, _), (off_cpu, off_wall, _) = mean["with kueue_*"], mean["without"]
    extra = 1000 * (on_cpu / on_wall - off_cpu / off_wall)
    print(f"difference of the means: {extra:+.0f} mCPU ({100 * (on_cpu - off_cpu) / off_cpu:+.1f} % of the "
          "controller's CPU)")
    # The number of admission cycles varies from run to run with timing (a cycle runs back to back
    # while it changes something) and drives the CPU more than anything; so also fit
    # CPU = a + b * cycles + d * (kueue on) and report d (the admissions are nearly the same in
    # every run, so they are left out of the fit).
    if len(rows) > 3:
        fit, *_ = numpy.linalg.lstsq(numpy.array([[1, c, on] for on, c, _, _ in rows]),
                                     numpy.array([cpu for *_, cpu in rows]), rcond=None)
        wall = (on_wall + off_wall) / 2
        print(f"fit over {len(rows)} runs: {1e6 * fit[1]:.0f} us CPU per cycle; Kueue's names {fit[2]:+.2f} s CPU "
              f"per run = {1000 * fit[2] / wall:+.0f} mCPU ({100 * fit[2] / off_cpu:+.1f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
