"""`batchgate controller`: run the reconcile controller against a cluster until SIGTERM."""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import signal
import socket
import sys
import threading
import uuid

from batchgate.clock import SystemClock
from batchgate.collector import settle_started_process
from kubeapi.listwatch import RELIST_SECONDS


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="batchgate controller", description=__doc__)
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster)")
    parser.add_argument("--namespace", help="watch workloads only in this namespace (default: all)")
    parser.add_argument("--policy-configmap", default="batchgate-system/batchgate-policy", metavar="NS/NAME",
                        help="the policy ConfigMap (default: %(default)s)")
    parser.add_argument("--qps", type=float, default=50.0, help="client requests per second (default: %(default)s)")
    parser.add_argument("--burst", type=int, default=100, help="client request burst (default: %(default)s)")
    parser.add_argument("--metrics-address", default="0.0.0.0", help="address of /metrics, /healthz, /readyz")
    parser.add_argument("--metrics-port", type=int, default=8080, help="port of the probes; 0 picks a free one")
    parser.add_argument("--leader-elect", action=argparse.BooleanOptionalAction, default=True,
                        help="hold the Lease batchgate-system/batchgate-controller before writing (default: on)")
    parser.add_argument("--lease-namespace", default="batchgate-system")
    parser.add_argument("--lease-duration", type=float, default=15.0, help="seconds a Lease lasts unrenewed")
    parser.add_argument("--renew-deadline", type=float, default=10.0, help="seconds the leader may fail to renew")
    parser.add_argument("--retry-period", type=float, default=2.0, help="seconds between Lease attempts")
    parser.add_argument("--identity", default=f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}",
                        help="this process's name in the Lease")
    parser.add_argument("--relist-period", type=float, default=RELIST_SECONDS, metavar="SECONDS",
                        help="list every watched kind again this often, catching a change no watch event "
                             "delivered; 0 turns it off (default: %(default)s)")
    parser.add_argument("--workers", type=int, default=4, help="parallel reconcile workers")
    parser.add_argument("--kueue-metrics", action=argparse.BooleanOptionalAction, default=True,
                        help="also export Kueue's metric names, for MLBatch dashboards (docs/controller.md)")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)
    namespace, _, name = args.policy_configmap.partition("/")
    if not namespace or not name or "/" in name:
        parser.error(f"--policy-configmap: want NAMESPACE/NAME, got {args.policy_configmap!r}")
    args.policy_configmap = (namespace, name)
    if args.qps <= 0 or args.burst < 1:
        parser.error("--qps must be > 0 and --burst >= 1")
    if not 0 <= args.metrics_port <= 65535:
        parser.error("--metrics-port: want 0..65535")
    if not 0 < args.retry_period < args.renew_deadline < args.lease_duration:
        parser.error("want 0 < --retry-period < --renew-deadline < --lease-duration")
    if args.relist_period < 0:
        parser.error("--relist-period must be >= 0 (0 turns it off)")
    if args.workers < 1:
        parser.error("--workers must be >= 1")
    if args.kubeconfig and not os.path.isfile(args.kubeconfig):
        parser.error(f"--kubeconfig: no such file {args.kubeconfig!r}")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from controller.adapters.kube import KubeClient
    from controller.adapters.manager import Controller, ControllerOptions
    from controller.adapters.metrics import ControllerMetrics, ProbeServer
    from controller.adapters.ratelimit import TokenBucket
    from controller.decisions.leader_election import LeaseTiming

    clock = SystemClock()
    try:
        client = KubeClient.from_kubeconfig(args.kubeconfig, TokenBucket(args.qps, args.burst, clock))
    except Exception as exc:  # unreadable kubeconfig, no in-cluster credentials
        print(f"batchgate controller: cannot configure the API client: {exc}", file=sys.stderr)
        return 2
    metrics = ControllerMetrics(kueue_compatible=args.kueue_metrics)
    timing = LeaseTiming(dt.timedelta(seconds=args.lease_duration), dt.timedelta(seconds=args.renew_deadline),
                         dt.timedelta(seconds=args.retry_period))
    options = ControllerOptions(namespace=args.namespace, identity=args.identity, leader_elect=args.leader_elect,
                                lease_namespace=args.lease_namespace, workers=args.workers, timing=timing,
                                policy_configmap=args.policy_configmap, relist_every=args.relist_period or None)
    controller = Controller(client, clock, options, metrics)
    try:
        probes = ProbeServer(metrics, controller.healthy, controller.ready, args.metrics_address, args.metrics_port)
    except OSError as exc:
        print(f"batchgate controller: cannot serve probes on {args.metrics_address}:{args.metrics_port}: {exc}",
              file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    settle_started_process()
    probes.start()
    print(f"batchgate controller {args.identity}: probes on http://{args.metrics_address}:{probes.port}",
          file=sys.stderr, flush=True)
    controller.start()
    stop.wait()
    controller.stop()
    probes.stop()
    client.close()
    return 0
