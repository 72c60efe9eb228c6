"""What finding one AppWrapper's pods costs the controller's cache at scale, scan versus label index.

Fills a SharedStore with `--pods` pods (default 10,000) in one namespace, `--per-appwrapper` (8)
to an AppWrapper, then times, per call, what the lifecycle reconcile does to find its pods:
filtering the namespace's pods by the AppWrapper label (a scan), and `SharedStore.labelled` (the
index). Both run under the store's lock, which the informers need to apply events. Prints both
and the machine; asserts nothing.

    .venv/bin/python bench/store_label_index.py [--pods 10000] [--per-appwrapper 8] [--calls 200]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from batchgate import keys  # noqa: E402
from bench.machine_info import machine  # noqa: E402
from bench.timing import seconds_per_call  # noqa: E402
from controller.adapters.store import SharedStore  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--per-appwrapper", type=int, default=8)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    store = SharedStore()
    for i in range(args.pods):
        store.apply("Pod", "ADDED", {"metadata": {
            "name": f"p{i}", "namespace": "team", "uid": f"u{i}", "resourceVersion": str(i + 1),
            "labels": {keys.APPWRAPPER_LABEL: f"aw{i // args.per_appwrapper}"}}, "status": {"phase": "Running"}})
    target = "aw7"

    def scan() -> list:
        return [p for p in store.list("Pod", "team")
                if (p["metadata"].get("labels") or {}).get(keys.APPWRAPPER_LABEL) == target]

    def index() -> list:
        return store.labelled("Pod", "team", keys.APPWRAPPER_LABEL, target)

    assert len(scan()) == len(index()) == args.per_appwrapper
    print(f"{args.pods} pods, {args.per_appwrapper} per AppWrapper: scan {seconds_per_call(scan, args.calls) * 1e3:.3f} ms, "
          f"label index {seconds_per_call(index, args.calls) * 1e3:.3f} ms per reconcile")
    print(f"machine: {machine()}")


if __name__ == "__main__":
    main()
