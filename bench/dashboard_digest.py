"""The dashboard's digest per change batch at Kueue's baseline scale, in process, no API server.

check_scale.py's objects (30 ClusterQueues in 5 cohorts, 100 nodes, 15,000 Workloads, all pending
by default, so every reason is computed by the quota cycle) as the informers would hold them. Two
kinds of change batch, one Workload each: `create`, a new pending Workload in the next
ClusterQueue (a user's submit: only its own reason is new), and `admit`, a pending Workload that
now holds quota (the controller's admission: every reason in its cohort may change). The figure
is the time `Digests.next` takes for a batch (what the hub does after each one), and for
comparison `digest()` over the same objects from scratch. `--profile` prints the top of a
cProfile of the kept digests. Prints figures and the machine; asserts nothing.

    .venv/bin/python bench/dashboard_digest.py [--workloads N] [--rounds N] [--admitted-share F] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as _dt
import os
import platform
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from check_scale import objects as baseline_objects  # noqa: E402
from dashboard.views.digest import Digests, digest  # noqa: E402
from dashboard.views.observed import KINDS, Observed  # noqa: E402

NOW = _dt.datetime(2025, 1, 2, tzinfo=_dt.timezone.utc)


def observed(objects: list[dict[str, Any]]) -> Observed:
    by_kind: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
    for obj in objects:
        by_kind[obj["kind"]].append({k: v for k, v in obj.items() if k != "kind"})
    return Observed({k: tuple(v) for k, v in by_kind.items()})


def created(state: Observed, count: int) -> list[Observed]:
    """One Observed per change batch: each adds one pending Workload to the previous one."""
    out = []
    for i in range(count):
        new = baseline_objects(len(state.of("Workload")) + 1, 0.0)[-1]
        new["metadata"]["name"] = f"bench-{i}"
        state = Observed({**state.objects, "Workload": (*state.of("Workload"), {k: v for k, v in new.items()
                                                                                 if k != "kind"})})
        out.append(state)
    return out


def admitted(state: Observed, count: int) -> list[Observed]:
    """One Observed per change batch: each gives one more pending Workload its quota, in turn over
    the ClusterQueues (so over the cohorts)."""
    out = []
    workloads = list(state.of("Workload"))
    for i in range(count):
        old = workloads[i]
        cq = old["metadata"]["namespace"]
        cpu = old["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"]
        workloads[i] = {**old, "status": {
            "admission": {"clusterQueue": cq, "podSetAssignments": [
                {"name": "main", "count": 1, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": cpu}}]},
            "conditions": [{"type": t, "status": "True", "reason": t, "lastTransitionTime": "2025-01-01T12:00:00Z"}
                           for t in ("QuotaReserved", "Admitted")]}}
        state = Observed({**state.objects, "Workload": tuple(workloads)})
        out.append(state)
    return out


def timed(batches: list[Observed], step: Callable[[Observed], object]) -> list[float]:
    out = []
    for state in batches:
        start = time.perf_counter()
        step(state)
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", type=int, default=15_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--admitted-share", type=float, default=0.0)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    first = observed(baseline_objects(args.workloads, args.admitted_share))
    print(f"machine: {platform.machine()} {platform.processor() or ''} cpus={os.cpu_count()} "
          f"python {platform.python_version()}; shared, so figures are noisy")
    start = time.perf_counter()
    scratch = [digest(first, NOW)]
    print(f"objects: {sum(len(v) for v in first.objects.values())}; pending: {len(scratch[0].pending)}; "
          f"first digest: {time.perf_counter() - start:.2f} s")
    profile = cProfile.Profile() if args.profile else None
    for change, batches in (("create", created(first, args.rounds)), ("admit", admitted(first, args.rounds))):
        from_scratch = timed(batches, lambda s: digest(s, NOW))
        digests = Digests()
        digests.next(first, NOW)
        if profile:
            profile.enable()
        kept = timed(batches, lambda s: digests.next(s, NOW))
        if profile:
            profile.disable()
        for name, figures in (("from scratch", from_scratch), ("kept", kept)):
            print(f"{change}, {name}: per change batch median {statistics.median(figures):.3f} s, "
                  f"min {min(figures):.3f} s, max {max(figures):.3f} s ({len(figures)} batches)")
    if profile:
        pstats.Stats(profile).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
