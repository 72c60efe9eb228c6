"""`batchgate certs`: make or rotate the gateway's CA and serving certificate."""

from __future__ import annotations

import argparse
import sys

from batchgate.clock import SystemClock
from certs.authority import service_names, write_serving_files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="batchgate certs",
        description="Make (init) or renew (rotate) a CA and a serving certificate for the gateway.",
    )
    sub = parser.add_subparsers(dest="action", required=True)
    for action, help_text in (
        ("init", "write a new CA and serving certificate"),
        ("rotate", "renew the serving certificate, keeping the CA (and so the caBundle)"),
    ):
        cmd = sub.add_parser(action, help=help_text)
        cmd.add_argument("--dir", required=True, help="directory for ca.crt, tls.crt, tls.key, caBundle")
        cmd.add_argument("--service", default="batchgate-webhook", help="webhook Service name")
        cmd.add_argument("--namespace", default="batchgate-system", help="webhook Service namespace")
        cmd.add_argument("--days", type=int, default=365, help="serving certificate lifetime")
    args = parser.parse_args(argv)
    if args.days <= 0:
        parser.error("--days must be positive")
    names = service_names(args.service, args.namespace)
    try:
        files = write_serving_files(
            args.dir, names, SystemClock().now(), cert_days=args.days, reuse_ca=args.action == "rotate"
        )
    except (OSError, ValueError) as exc:
        print(f"batchgate certs: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {files.ca_cert}, {files.cert}, {files.key}")
    print(f"SANs: {', '.join(names)}")
    print(f"caBundle: {files.ca_bundle}")
    return 0
