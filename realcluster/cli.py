"""`batchgate cluster --kube real`: the real control plane until Ctrl-C, built first if needed."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from localcluster.users import UsersFileError
from realcluster import toolchain
from realcluster.cluster import RealCluster, RealClusterError


def serve(args: argparse.Namespace, nodes: list[Any]) -> int:
    try:
        binaries = toolchain.build(toolchain.load_versions(), toolchain.cache_root(),
                                   lambda line: print(line, flush=True))
        cluster = RealCluster(args.workdir, port=args.port, users_file=args.users_file, nodes=nodes,
                              run_images=args.run_image, binaries=binaries)
    except (toolchain.ToolchainError, RealClusterError, UsersFileError) as err:
        print(f"batchgate cluster: {err}", file=sys.stderr)
        return 2
    try:
        cluster.start()
    except RealClusterError as err:
        print(f"batchgate cluster: cannot start: {err}", file=sys.stderr)
        return 1
    kubeconfig = cluster.kubeconfig
    if args.kubeconfig:
        args.kubeconfig.parent.mkdir(parents=True, exist_ok=True)
        args.kubeconfig.write_text(cluster.kubeconfig.read_text())
        args.kubeconfig.chmod(0o600)
        kubeconfig = args.kubeconfig
    versions = toolchain.load_versions()
    print(f"Kubernetes {versions.kubernetes} (etcd {versions.etcd}) listening on {cluster.url}")
    print(f"users: {', '.join(u.name for u in cluster.users)} (kubectl --context <user>)")
    if args.run_image:
        print(f"pods of {', '.join(args.run_image)} run as local processes")
    print(f"nodes: {len(nodes)} ({', '.join(n.name for n in nodes[:5])}{', ...' if len(nodes) > 5 else ''}); "
          f"logs in {cluster.workdir / 'logs'}")
    print(f"kubectl {versions.kubernetes}: {binaries['kubectl']}")
    print(f"export KUBECONFIG={kubeconfig}")
    print("press Ctrl-C to stop", flush=True)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        while not stop.wait(1.0):
            pass
    finally:
        cluster.stop()
        print("cluster stopped", flush=True)
    return 0
