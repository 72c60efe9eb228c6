"""`batchgate dashboard`: serve the live read-only web view of the cluster until interrupted."""

from __future__ import annotations

import argparse
import logging
import sys

from batchgate.clock import SystemClock

PROG = "batchgate dashboard"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__)
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster)")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument("--address", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8090, help="port to listen on; 0 picks a free one (default: %(default)s)")
    parser.add_argument("--audit-log", metavar="FILE", help="the gateway's audit log, for the decisions page")
    parser.add_argument("--fair-sharing", action="store_true",
                        help="show fair-sharing weights and shares, and pending reasons as with fair sharing on")
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error("--port: want 0..65535")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from controller.adapters.cluster_reader import ClusterReadError
    from dashboard.server import serve
    from dashboard.watch import hub_from_kubeconfig

    try:
        hub = hub_from_kubeconfig(args.kubeconfig, args.context, SystemClock(), audit_log=args.audit_log,
                                  fair_sharing=args.fair_sharing)
    except ClusterReadError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    try:
        server = serve(hub, args.address, args.port, log_requests=args.log_level in ("debug", "info"))
    except OSError as exc:
        hub.stop()
        print(f"{PROG}: cannot listen on {args.address}:{args.port}: {exc.strerror}", file=sys.stderr)
        return 2
    hub.start()
    print(f"batchgate dashboard: http://{args.address}:{server.port}/", flush=True)
    try:
        server.wait()
    finally:
        server.close()
        hub.stop()
    return 0
