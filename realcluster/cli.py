"""`batchgate cluster --kube real`: the real control plane until Ctrl-C, built first if needed."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from localcluster.cli import export_kubeconfig, serve_until_signalled
from localcluster.users import UsersFileError
from realcluster import toolchain
from realcluster.cluster import RealCluster, RealClusterError


def serve(args: argparse.Namespace, nodes: list[Any]) -> int:
    try:
        binaries = toolchain.build(toolchain.programs(toolchain.load_versions()), toolchain.cache_root(),
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
    kubeconfig = export_kubeconfig(cluster.kubeconfig, args.kubeconfig)
    versions = toolchain.load_versions()
    print(f"Kubernetes {versions.kubernetes} (etcd {versions.etcd}) listening on {cluster.url}")
    print(f"users: {', '.join(u.name for u in cluster.users)} (kubectl --context <user>)")
    if args.run_image:
        print(f"pods of {', '.join(args.run_image)} run as local processes")
    print(f"nodes: {len(nodes)} ({', '.join(n.name for n in nodes[:5])}{', ...' if len(nodes) > 5 else ''}); "
          f"logs in {cluster.workdir / 'logs'}")
    print(f"kubectl {versions.kubernetes}: {binaries['kubectl']}")
    print(f"export KUBECONFIG={kubeconfig}")
    serve_until_signalled(cluster.stop, "cluster stopped")
    return 0
