"""`batchgate cluster`: run a cluster on this machine until Ctrl-C and write a kubeconfig for
kubectl: the stand-in (`--kube local`, the default) or Kubernetes' own control plane built from
its Go modules (`--kube real`, realcluster/), with the same users and nodes."""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable, Mapping
import signal
import sys
import tempfile
import threading
from pathlib import Path

from typing import Any

from localcluster.authorization import MODES, RBAC, RecordedRequest
from localcluster.users import UsersFileError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="batchgate cluster", description=__doc__)
    parser.add_argument("--kube", choices=("local", "real"), default="local",
                        help="local: the stand-in API server (default); real: kube-apiserver, etcd, "
                             "kube-controller-manager and kube-scheduler built from their Go modules")
    parser.add_argument("--port", type=int, default=0, help="HTTPS port on 127.0.0.1 (default: a free port)")
    parser.add_argument("--kubeconfig", type=Path, help="where to write the kubeconfig (default: in the work dir)")
    parser.add_argument("--users-file", type=Path, help="YAML list of users (name, username, uid, groups)")
    parser.add_argument("--speed", type=float, default=1.0, help="simulated time runs this many times faster")
    parser.add_argument("--workdir", type=Path, help="directory for certificates and state (default: a temp dir)")
    parser.add_argument("--run-image", action="append", default=[], metavar="NAME",
                        help="pods of this image run as real local processes with this checkout's `batchgate` "
                             "(repeatable; e.g. the image the manifests name)")
    parser.add_argument("--authorization", choices=MODES, default=RBAC,
                        help="RBAC (default: roles and bindings decide, as kube-apiserver) or AlwaysAllow")
    parser.add_argument("--record-requests", type=Path, metavar="FILE",
                        help="count resource requests by user, verb, resource and subresource; written to FILE "
                             "(JSON) when the cluster stops, so a benchmark can tell whose writes cost what")
    parser.add_argument("--api-only", action="store_true",
                        help="serve the API without simulated nodes, kubelets, scheduler or controllers")
    nodes = parser.add_argument_group("simulated nodes")
    nodes.add_argument("--nodes", type=int, default=None, help="how many identical nodes (default: 3)")
    nodes.add_argument("--node-cpu", default="16", help="CPU capacity of each node (default: 16)")
    nodes.add_argument("--node-memory", default="64Gi", help="memory capacity of each node (default: 64Gi)")
    nodes.add_argument("--node-gpus", type=int, default=8, help="nvidia.com/gpu per node (default: 8)")
    nodes.add_argument("--nodes-file", type=Path,
                       help="YAML list of nodes (name, count, labels, taints, capacity) instead of the flags above")
    return parser


def _node_specs(args: argparse.Namespace) -> list[Any]:
    """The nodes to simulate, from --nodes-file or the --nodes/--node-* flags; NodesError if bad."""
    from localcluster.sim.nodes import NodesError, nodes_from_flags, parse_nodes_file

    if args.nodes_file is not None:
        if args.nodes is not None:
            raise NodesError("give either --nodes-file or --nodes, not both")
        try:
            text = args.nodes_file.read_text()
        except OSError as exc:
            raise NodesError(f"cannot read {args.nodes_file}: {exc.strerror}") from None
        return parse_nodes_file(text, str(args.nodes_file))
    return nodes_from_flags(3 if args.nodes is None else args.nodes, args.node_cpu, args.node_memory, args.node_gpus)


def main(argv: list[str] | None = None) -> int:
    from localcluster.controllers import DEFAULT_CONTROLLERS
    from localcluster.runner import LocalCluster
    from localcluster.sim.nodes import NodesError

    args = _parser().parse_args(argv)
    if args.speed <= 0:
        print("batchgate cluster: --speed must be positive", file=sys.stderr)
        return 2
    try:
        nodes = _node_specs(args)
    except NodesError as exc:
        print(f"batchgate cluster: {exc}", file=sys.stderr)
        return 2
    if args.kube == "real":
        if args.speed != 1.0 or args.authorization != RBAC or args.api_only or args.record_requests:
            print("batchgate cluster: --speed, --authorization, --api-only and --record-requests are the "
                  "stand-in's (--kube local)",
                  file=sys.stderr)
            return 2
        from realcluster.cli import serve

        return serve(args, nodes)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="batchgate-cluster-"))
    try:
        cluster = LocalCluster(workdir, port=args.port, users_file=args.users_file, speed=args.speed,
                               controllers=[] if args.api_only else DEFAULT_CONTROLLERS,
                               nodes=[] if args.api_only else nodes, run_images=args.run_image,
                               authorization=args.authorization, record_requests=args.record_requests is not None)
    except UsersFileError as exc:
        print(f"batchgate cluster: {exc}", file=sys.stderr)
        return 2
    try:
        cluster.start()
    except (OSError, RuntimeError) as exc:
        print(f"batchgate cluster: cannot start: {exc}", file=sys.stderr)
        return 1
    kubeconfig = export_kubeconfig(cluster.kubeconfig, args.kubeconfig)
    print(f"local cluster listening on {cluster.url}")
    print(f"users: {', '.join(u.name for u in cluster.users)} (kubectl --context <user>)")
    if args.run_image:
        print(f"pods of {', '.join(args.run_image)} run as local processes")
    print(f"nodes: {len(nodes)} simulated ({', '.join(n.name for n in nodes[:5])}{', ...' if len(nodes) > 5 else ''})")
    print(f"export KUBECONFIG={kubeconfig}")

    def stop() -> None:
        cluster.stop()
        if args.record_requests is not None:
            write_recorded(args.record_requests, cluster.authorizer.recorded or {})

    serve_until_signalled(stop, "local cluster stopped")
    return 0


def write_recorded(path: Path, recorded: Mapping[RecordedRequest, int]) -> None:
    """The recorded requests as a JSON list, one entry per distinct request with its count."""
    path.write_text(json.dumps([{**dataclasses.asdict(request), "count": count} for request, count in recorded.items()]))


def export_kubeconfig(kubeconfig: Path, target: Path | None) -> Path:
    """The cluster's kubeconfig, copied to `target` (private) when one is given."""
    if target is None:
        return kubeconfig
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(kubeconfig.read_text())
    target.chmod(0o600)
    return target


def serve_until_signalled(stop_cluster: Callable[[], None], stopped: str) -> None:
    """Until SIGTERM or SIGINT, then stop the cluster. SIGINT too: a shell starts background jobs
    with SIGINT ignored, and Python then never raises KeyboardInterrupt; `kill -INT` must still
    stop the cluster and its pod processes."""
    print("press Ctrl-C to stop", flush=True)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        while not stop.wait(1.0):
            pass
    finally:
        stop_cluster()
        print(stopped, flush=True)
