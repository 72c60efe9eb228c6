"""`batchgate check`: capacity of schedulable nodes against quotas, queue usage, and why work waits.

Exit 0 when no finding is an error, 1 when one is, 2 on bad input or a cluster that cannot be
read (one line on stderr, never a traceback; under kubectl's plugin name `error: ...` and 1, as
kubectl prints errors). `--from-file` checks a YAML file of objects offline.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

import yaml

from batchgate.clock import Clock, SystemClock
from batchgate.command_line import fail
from controller.check.inventory import InventoryError, build_inventory, flatten
from controller.check.render import render_json, render_table
from controller.check.report import check
from batchgate.policy import FairSharing

PROG = "batchgate check"


class _Parser(argparse.ArgumentParser):
    """argparse that returns 2 through main instead of exiting the interpreter."""

    def error(self, message: str) -> NoReturn:
        raise _BadInput(message)


class _BadInput(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description=__doc__.split("\n\n")[0],
                     epilog="exit status: 0 no error finding, 1 at least one error finding, "
                            "2 bad input or a cluster that cannot be read. See docs/check.md.")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster)")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument("--from-file", metavar="FILE",
                        help="check a multi-document YAML file of objects (Nodes, Namespaces, ResourceFlavors, "
                             "ClusterQueues, LocalQueues, Workloads, ...) instead of a cluster; - for stdin")
    parser.add_argument("--fair-sharing", action="store_true",
                        help="compute pending reasons as a controller with Kueue's fair sharing on would "
                             "(MLBatch's configuration)")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    return parser


def main(argv: list[str], clock: Clock | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        if args.from_file and (args.kubeconfig or args.context):
            raise _BadInput("--from-file reads no cluster: drop --kubeconfig/--context")
        objects = _from_file(args.from_file) if args.from_file else _from_cluster(args.kubeconfig, args.context)
        inventory = build_inventory(flatten(objects, args.from_file or "cluster"))
    except (_BadInput, InventoryError) as exc:
        return fail(PROG, str(exc))
    report = check(inventory, (clock or SystemClock()).now(), FairSharing(enable=args.fair_sharing))
    print(render_json(report) if args.output == "json" else render_table(report))
    return 1 if report.has_errors else 0


def _from_file(path: str) -> list[Any]:
    try:
        text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    except OSError as exc:
        raise _BadInput(f"cannot read {path}: {exc.strerror}") from None
    try:
        return list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not YAML"
        raise _BadInput(f"{path}: invalid YAML{where}: {problem}") from None


def _from_cluster(kubeconfig: str | None, context: str | None) -> list[Any]:
    from controller.adapters.cluster_reader import ClusterReadError, connect, read_objects

    try:
        kube = connect(kubeconfig, context)
        try:
            return read_objects(kube)
        finally:
            kube.close()
    except ClusterReadError as exc:
        raise _BadInput(str(exc)) from None
