"""How long `batchgate demo --exit-when-done` takes: whole process, and when each scene begins.

The demo narrates with seconds since it began; this runs it a few times as `make demo` would
(a fresh cluster, gateway and controller each time) and reads those figures back.

    .venv/bin/python bench/demo_time.py [--runs 3] [--kube auto|local|real] [--speed F (the stand-in's)]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from bench.machine_info import machine

ROOT = Path(__file__).resolve().parents[1]
STEP = re.compile(r"^\[\s*(?P<seconds>[\d.]+)s\] (?P<text>.*)$")
MARKS = {
    "cluster up": "cluster up at ",
    "product installed": "admin: kubectl apply",
    "queues applied": "admin applies the queues",
    "preemptions done": "the queues now",
    "pytorch env shown": "each pod's env",
    "scripted part done": "scripted part done",
}

def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def one_run(options: list[str]) -> tuple[float, dict[str, float]]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "demo.main", "--exit-when-done", *options],
                          capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"demo failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    marks: dict[str, float] = {}
    for line in done.stdout.splitlines():
        match = STEP.match(line)
        for mark, prefix in MARKS.items():
            if match and mark not in marks and match["text"].startswith(prefix):
                marks[mark] = float(match["seconds"])
    return wall, marks


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--kube", default="auto", help="as batchgate demo's --kube")
    p.add_argument("--speed", help="the stand-in's simulated time (with --kube local)")
    args = p.parse_args()
    options = ["--kube", args.kube, *(["--speed", args.speed] if args.speed else [])]
    print(f"machine: {machine()}")
    print(f"load average before: {load()}")
    print(f"batchgate demo --exit-when-done {' '.join(options)}, {args.runs} runs; seconds since the demo began")
    header = ["run", *MARKS, "process wall"]
    print("  ".join(f"{h:>18}" for h in header))
    for run in range(1, args.runs + 1):
        wall, marks = one_run(options)
        cells = [str(run), *(f"{marks[m]:.1f}" if m in marks else "-" for m in MARKS), f"{wall:.1f}"]
        print("  ".join(f"{c:>18}" for c in cells), flush=True)
    print(f"load average after: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
