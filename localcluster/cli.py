"""`batchgate cluster`: run the local cluster until Ctrl-C and write a kubeconfig for kubectl."""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import threading
from pathlib import Path

from localcluster.users import UsersFileError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="batchgate cluster", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="HTTPS port on 127.0.0.1 (default: a free port)")
    parser.add_argument("--kubeconfig", type=Path, help="where to write the kubeconfig (default: in the work dir)")
    parser.add_argument("--users-file", type=Path, help="YAML list of users (name, username, uid, groups)")
    parser.add_argument("--speed", type=float, default=1.0, help="simulated time runs this many times faster")
    parser.add_argument("--workdir", type=Path, help="directory for certificates and state (default: a temp dir)")
    return parser


def main(argv: list[str] | None = None) -> int:
    from localcluster.controllers import DEFAULT_CONTROLLERS
    from localcluster.runner import LocalCluster

    args = _parser().parse_args(argv)
    if args.speed <= 0:
        print("batchgate cluster: --speed must be positive", file=sys.stderr)
        return 2
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="batchgate-cluster-"))
    try:
        cluster = LocalCluster(workdir, port=args.port, users_file=args.users_file, speed=args.speed,
                               controllers=DEFAULT_CONTROLLERS)
    except UsersFileError as exc:
        print(f"batchgate cluster: {exc}", file=sys.stderr)
        return 2
    try:
        cluster.start()
    except (OSError, RuntimeError) as exc:
        print(f"batchgate cluster: cannot start: {exc}", file=sys.stderr)
        return 1
    kubeconfig = cluster.kubeconfig
    if args.kubeconfig:
        args.kubeconfig.parent.mkdir(parents=True, exist_ok=True)
        args.kubeconfig.write_text(cluster.kubeconfig.read_text())
        args.kubeconfig.chmod(0o600)
        kubeconfig = args.kubeconfig
    print(f"local cluster listening on {cluster.url}")
    print(f"users: {', '.join(u.name for u in cluster.users)} (kubectl --context <user>)")
    print(f"export KUBECONFIG={kubeconfig}")
    print("press Ctrl-C to stop", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(1.0):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()
        print("local cluster stopped", flush=True)
    return 0
