"""`batchgate simulate TRACE [-o json] [--plot FILE.svg]`: print what quota admission decides over a
trace, and optionally draw each ClusterQueue's usage against its quota."""

from __future__ import annotations

import argparse
import json
import sys

import yaml

from controller.simulation import TraceError, format_table, run_trace


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="batchgate simulate",
                                     description="Run the real quota admission decisions over a trace "
                                                 "(docs/simulate.md).")
    parser.add_argument("trace", help="YAML trace file (objects + steps), or - for stdin")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    parser.add_argument("--plot", metavar="FILE", help="also draw each ClusterQueue's usage against its quota, "
                                                         "with admissions and preemptions marked (.svg or .png)")
    args = parser.parse_args(argv)
    plot_path = None
    if args.plot is not None:
        from controller import simulate_plot  # matplotlib only when a plot is asked for

        try:
            plot_path = simulate_plot.check_path(args.plot)
        except simulate_plot.PlotError as exc:
            print(f"batchgate simulate: {exc}", file=sys.stderr)
            return 2
    try:
        text = sys.stdin.read() if args.trace == "-" else open(args.trace, encoding="utf-8").read()
    except OSError as exc:
        print(f"batchgate simulate: cannot read {args.trace}: {exc.strerror}", file=sys.stderr)
        return 2
    try:
        trace = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        print(f"batchgate simulate: {args.trace}: invalid YAML{where}", file=sys.stderr)
        return 2
    try:
        reports = run_trace(trace)
    except TraceError as exc:
        print(f"batchgate simulate: {args.trace}: {exc}", file=sys.stderr)
        return 2
    if args.output == "json":
        print(json.dumps({"steps": [r.to_json() for r in reports]}, indent=2))
    else:
        print(format_table(reports))
    if plot_path is not None:
        try:
            simulate_plot.write(reports, plot_path)
        except simulate_plot.PlotError as exc:
            print(f"batchgate simulate: {exc}", file=sys.stderr)
            return 2
    return 0
