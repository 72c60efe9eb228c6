"""`batchgate webhook`: serve the admission gateway under gunicorn over TLS."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from batchgate.policy import PolicyError
from webhook.authorization.cache import ANSWER_TTL


def _namespaced_name(text: str) -> tuple[str, str]:
    namespace, _, name = text.partition("/")
    if not namespace or not name or "/" in name:
        raise argparse.ArgumentTypeError(f"expected NAMESPACE/NAME, got {text!r}")
    return namespace, name


def _port(text: str) -> int:
    port = int(text)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0..65535, got {port}")
    return port


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"must be 0..3600 seconds, got {text}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="batchgate webhook", description=__doc__)
    p.add_argument("--cert-dir", required=True, type=Path, help="directory with tls.crt and tls.key (batchgate certs init)")
    p.add_argument("--port", required=True, type=_port, help="HTTPS port (0 picks a free one and prints it)")
    p.add_argument("--host", default="0.0.0.0", help="address to bind (default 0.0.0.0)")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--policy-file", type=Path, help="policy.yaml or a ConfigMap manifest; reloaded on change")
    source.add_argument("--policy-configmap", type=_namespaced_name, metavar="NS/NAME",
                        help="watch this ConfigMap (key policy.yaml) with the kubernetes client")
    p.add_argument("--workers", type=_positive, default=2, help="gunicorn worker processes (default 2)")
    p.add_argument("--threads", type=_positive, default=8, help="threads per worker (default 8)")
    p.add_argument("--worker-class", choices=["gthread", "sync"], default="gthread",
                   help="gunicorn worker class: gthread keeps connections alive (default); sync is for comparison")
    p.add_argument("--max-connections", type=_positive, default=None,
                   help="connections per worker; past it the oldest one still sending a request is closed (default 2000)")
    p.add_argument("--audit-log", help="append audit lines to this file (default stdout)")
    p.add_argument("--policy-cache", type=Path,
                   help="file where workers keep the last good policy, for a restart that finds the policy invalid "
                        "(default: in the run's temporary directory; a volume makes it outlive the process)")
    p.add_argument("--kubeconfig", help="kubeconfig for --policy-configmap and for the per-component authorization "
                        "SubjectAccessReviews (default in-cluster or ~/.kube/config)")
    p.add_argument("--authorization-cache-ttl", type=_seconds, default=ANSWER_TTL, metavar="SECONDS",
                   help=f"how long a per-component authorization answer is reused (default {ANSWER_TTL:g}; "
                        "0 asks every time)")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument("--cert-wait", type=int, default=0, metavar="SECONDS",
                   help="wait this long for tls.crt/tls.key to appear (a certificate keeper makes them); default 0")
    return p


def _wait_for_certs(cert_dir: Path, seconds: int) -> list[Path]:
    """The serving files still missing after waiting up to `seconds` for them (polled each second)."""
    deadline = time.monotonic() + seconds
    while True:
        missing = [cert_dir / name for name in ("tls.crt", "tls.key") if not (cert_dir / name).is_file()]
        if not missing or time.monotonic() >= deadline:
            return missing
        print(f"batchgate webhook: waiting for {', '.join(map(str, missing))} (made by `batchgate certs manage`)",
              file=sys.stderr, flush=True)
        time.sleep(min(5.0, max(0.0, deadline - time.monotonic())))


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    for path in _wait_for_certs(args.cert_dir, args.cert_wait):
        print(f"batchgate webhook: {path} not found (run `batchgate certs init --dir {args.cert_dir}`, or let "
              f"`batchgate certs manage` make the Secret)", file=sys.stderr)
        return 2
    if args.policy_file is not None:
        from webhook.policy.file import read_policy_file

        try:
            loaded = read_policy_file(args.policy_file)
        except (PolicyError, OSError, UnicodeDecodeError) as exc:
            print(f"batchgate webhook: invalid policy: {exc}", file=sys.stderr)
            return 2
        print(f"batchgate webhook: policy {loaded.version} from {args.policy_file} (reloaded on change)", file=sys.stderr)
    elif args.policy_configmap is not None:
        # Imported (and the kubeconfig checked) once in the master: workers inherit the modules
        # instead of each importing the kubernetes client after fork.
        from webhook.policy.reloader import api_client

        try:
            api_client(args.kubeconfig).close()
        except Exception as exc:  # noqa: BLE001 - any kubeconfig problem is bad input here
            print(f"batchgate webhook: cannot use the kubeconfig: {exc}", file=sys.stderr)
            return 2
        namespace, name = args.policy_configmap
        print(f"batchgate webhook: policy from ConfigMap {namespace}/{name} (watched)", file=sys.stderr)
    else:
        print("batchgate webhook: no --policy-file or --policy-configmap given: using the built-in default policy",
              file=sys.stderr)
    # Before anything imports prometheus_client: every worker must write to this run's directory.
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="batchgate-metrics-")
    from webhook.serving.readahead import MAX_CONNECTIONS
    from webhook.serving.server import GatewayServer, ServerOptions

    GatewayServer(ServerOptions(
        cert_dir=args.cert_dir, port=args.port, host=args.host, workers=args.workers, threads=args.threads,
        worker_class=args.worker_class,
        policy_file=args.policy_file, policy_configmap=args.policy_configmap, audit_log=args.audit_log,
        kubeconfig=args.kubeconfig, log_level=args.log_level, policy_cache=args.policy_cache,
        max_connections=args.max_connections or MAX_CONNECTIONS, authorization_ttl=args.authorization_cache_ttl,
    )).run()
    return 0
