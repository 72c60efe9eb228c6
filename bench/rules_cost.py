"""CPU cost of the pure rules per AdmissionReview, without HTTP, TLS or JSON.

Runs `mutate` and `validate` on the demo's AppWrappers (demo/samples: the PyTorchJob-in-AppWrapper
the load benchmark uses, a RayCluster in an AppWrapper, a wrapped JobSet the policy denies), and prints the median and p99 microseconds per call with the machine. The
rules' share of the gateway's per-request budget (at 2,000 reviews/s on 2 cores, 1 ms of CPU
per review) is what this shows. Never asserts.

    .venv/bin/python bench/rules_cost.py [--rounds 2000]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from batchgate.policy import DEFAULT_POLICY  # noqa: E402
from bench.machine_info import machine  # noqa: E402
from tests.builders import a_request, sample  # noqa: E402
from webhook.rules import mutate, validate  # noqa: E402


def _micros(calls: int, fn) -> list[float]:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - start) / 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    print(f"machine: {machine()}, load average {os.getloadavg()[0]:.2f}")
    cases = {"pytorchjob-in-appwrapper": sample("alice/appwrapper-pytorchjob.yaml"),
             "raycluster-in-appwrapper": sample("bob/raycluster-in-appwrapper.yaml"),
             "wrapped-jobset (denied)": sample("bob/appwrapper-jobset.yaml")}
    print(f"{'manifest':32} {'mutate p50':>11} {'p99':>7} {'validate p50':>13} {'p99':>7}  (microseconds)")
    for name, obj in cases.items():
        request = a_request(obj)
        mutated = mutate(request, DEFAULT_POLICY).object or obj
        checked = dataclasses.replace(request, object=mutated)
        _micros(200, lambda: (mutate(request, DEFAULT_POLICY), validate(checked, DEFAULT_POLICY)))
        m = sorted(_micros(args.rounds, lambda: mutate(request, DEFAULT_POLICY)))
        v = sorted(_micros(args.rounds, lambda: validate(checked, DEFAULT_POLICY)))
        p99 = int(len(m) * 0.99)
        print(f"{name:32} {statistics.median(m):11.0f} {m[p99]:7.0f} {statistics.median(v):13.0f} {v[p99]:7.0f}")


if __name__ == "__main__":
    main()
