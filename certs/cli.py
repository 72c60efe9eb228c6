"""`batchgate certs`: make or rotate the gateway's CA and serving certificate (offline, into a
directory), or keep them in the cluster (`manage`: the Secret and every caBundle, continuously)."""

from __future__ import annotations

import argparse
import datetime as _dt
import logging
import signal
import sys
import threading

from batchgate.clock import SystemClock
from batchgate.durations import DurationError, parse_duration
from certs.authority import service_names, write_serving_files

CONFIGURATIONS = ("MutatingWebhookConfiguration/batchgate-mutating",
                  "MutatingWebhookConfiguration/batchgate-pod-frameworks",
                  "ValidatingWebhookConfiguration/batchgate-validating")
"""The product's webhook configurations (manifests/webhook), each given the caBundle."""
KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def _duration(text: str) -> _dt.timedelta:
    try:
        value = parse_duration(text)
    except DurationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value <= _dt.timedelta(0):
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return value


def _pair(text: str) -> tuple[str, str]:
    first, _, second = text.partition("/")
    if not first or not second or "/" in second:
        raise argparse.ArgumentTypeError(f"expected A/B, got {text!r}")
    return first, second


def _configuration(text: str) -> tuple[str, str]:
    kind, name = _pair(text)
    if kind not in KINDS:
        raise argparse.ArgumentTypeError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    return kind, name


def _manage_parser(sub: argparse._SubParsersAction) -> None:
    cmd = sub.add_parser("manage", help="keep the serving Secret valid and its CA in the webhook configurations")
    cmd.add_argument("--secret", type=_pair, default=("batchgate-system", "batchgate-webhook-tls"), metavar="NS/NAME")
    cmd.add_argument("--service", default="batchgate-webhook", help="webhook Service name")
    cmd.add_argument("--namespace", default="batchgate-system", help="webhook Service namespace")
    cmd.add_argument("--webhook-configuration", type=_configuration, action="append", metavar="KIND/NAME",
                     help=f"a configuration to keep the caBundle in (repeatable; default {', '.join(CONFIGURATIONS)})")
    cmd.add_argument("--renew-before", type=_duration, default=_dt.timedelta(days=90),
                     help="renew a certificate this long before it expires (default 2160h, 90 days)")
    cmd.add_argument("--serving-validity", type=_duration, default=_dt.timedelta(days=365), help="default 8760h")
    cmd.add_argument("--ca-validity", type=_duration, default=_dt.timedelta(days=3650), help="default 87600h")
    cmd.add_argument("--resync", type=_duration, default=_dt.timedelta(minutes=10),
                     help="the longest time between two passes; changes to the Secret, the configurations and "
                          "the policy are watched and handled at once (default 10m)")
    cmd.add_argument("--switch-grace", type=_duration, default=_dt.timedelta(minutes=5),
                     help="after a new CA replaces a lost one, keep the old CA in the caBundle this long, for pods "
                          "still serving its certificate until the kubelet updates their volume (default 5m)")
    cmd.add_argument("--policy-configmap", type=_pair, metavar="NS/NAME",
                     help="keep each governed webhook's namespaceSelector equal to this policy's managed namespaces")
    cmd.add_argument("--kubeconfig", help="default in-cluster, else ~/.kube/config")
    cmd.add_argument("--once", action="store_true", help="one pass, then exit (0 when everything is in place)")
    cmd.add_argument("--ready-port", type=int, metavar="PORT",
                     help="serve GET /readyz: 200 only when the certificate in --cert-dir is trusted by every "
                          "configuration's caBundle (the gateway pod's readiness)")
    cmd.add_argument("--cert-dir", default="/certs", help="the gateway's served certificate files (for --ready-port)")


def manage(args: argparse.Namespace) -> int:
    """Run the certificate keeper until SIGTERM (or one pass with --once)."""
    from certs.keeper import CertKeeper  # the kubernetes client, only for this action
    from certs.lifecycle import CertSettings
    from webhook.policy.reloader import api_client

    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = CertSettings(
            dns_names=tuple(service_names(args.service, args.namespace)[:4]),
            ca_validity=args.ca_validity, serving_validity=args.serving_validity,
            serving_renew_before=args.renew_before, ca_renew_before=args.renew_before,
            switch_grace=args.switch_grace)
        api = api_client(args.kubeconfig)
    except Exception as exc:  # noqa: BLE001 - bad settings or kubeconfig: bad input, said plainly
        print(f"batchgate certs manage: {exc}", file=sys.stderr)
        return 2
    configurations = args.webhook_configuration or [_configuration(c) for c in CONFIGURATIONS]
    keeper = CertKeeper(api, settings, args.secret, configurations, SystemClock(), args.policy_configmap)
    if args.once:
        result = keeper.reconcile()
        print(f"secret {'/'.join(args.secret)}: {result.plan.action} ({result.plan.reason}); "
              f"caBundle injected into {len(result.injected)} webhooks; "
              f"namespaceSelector set on {len(result.scoped)}; missing: {', '.join(result.missing) or 'none'}")
        return 1 if result.missing else 0
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    if args.ready_port is not None:
        from pathlib import Path

        from certs.readiness import TrustProbe, serve

        serve(args.ready_port, TrustProbe(api, Path(args.cert_dir), configurations, SystemClock()).verdict, stop)
    keeper.run(stop, args.resync.total_seconds())
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="batchgate certs",
        description="Make (init) or renew (rotate) a CA and a serving certificate for the gateway, "
                    "or keep them in the cluster (manage).",
    )
    sub = parser.add_subparsers(dest="action", required=True)
    _manage_parser(sub)
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
    if args.action == "manage":
        return manage(args)
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
