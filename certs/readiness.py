"""The keeper container's readiness endpoint: the gateway pod is Ready only when the certificate
it serves is trusted by the product's webhook configurations (certs/trust.py decides).

The keeper shares the gateway's Secret volume, so it reads the very files the gateway serves; it
can read its named configurations, which the gateway's RBAC cannot. A pod is Ready only when all
its containers are, so a failing probe here takes the pod out of the Service's endpoints.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from kubernetes import client
from kubernetes.client.rest import ApiException

from batchgate.clock import Clock
from certs.authority import TLS_CERT
from certs.trust import TrustVerdict, judge_trust

log = logging.getLogger("batchgate.certs")
MUTATING = "MutatingWebhookConfiguration"


def read_webhooks(admission: client.AdmissionregistrationV1Api, kind: str,
                  name: str) -> list[tuple[str, str]] | None:
    """A configuration's webhooks as (name, caBundle); None when it does not exist."""
    read = (admission.read_mutating_webhook_configuration if kind == MUTATING
            else admission.read_validating_webhook_configuration)
    try:
        config = read(name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return [(hook.name, str(hook.client_config.ca_bundle or "")) for hook in config.webhooks or []]


class TrustProbe:
    """Judges trust on each probe from the served file and the configurations as they are now."""

    def __init__(self, api: client.ApiClient, cert_dir: Path, configurations: list[tuple[str, str]], clock: Clock):
        self.admission = client.AdmissionregistrationV1Api(api)
        self.cert_dir, self.configurations, self.clock = cert_dir, configurations, clock
        self.last: TrustVerdict | None = None
        self.served = b""

    def verdict(self) -> TrustVerdict:
        try:
            served = (self.cert_dir / TLS_CERT).read_bytes()
        except OSError:
            served = b""
        # A Secret deleted empties the (optional) volume, yet the gateway keeps serving the pair it
        # loaded last until new files appear: judge that pair, as the API server meets it.
        if served.strip():
            self.served = served
        served = self.served
        try:
            webhooks = {f"{kind}/{name}": read_webhooks(self.admission, kind, name) for kind, name in self.configurations}
        except Exception as exc:  # noqa: BLE001 - the API server unreachable or refusing: not ready, said why
            return TrustVerdict(False, (f"webhook configurations unreadable: {exc}",))
        verdict = judge_trust(served, webhooks, self.clock.now())
        if verdict != self.last:
            (log.info if verdict.ready else log.error)(
                "readiness: %s%s", verdict.message(),
                "" if verdict.ready else " (the keeper puts the caBundle back each resync; if this persists, "
                "check that the keeper runs and may update the configurations)")
            self.last = verdict
        return verdict


def serve(port: int, verdict: Callable[[], TrustVerdict], stop: threading.Event) -> threading.Thread:
    """GET /readyz: 200 when trusted, else 503; the body is the verdict's message."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server interface
            if self.path != "/readyz":
                self.send_error(404)
                return
            result = verdict()
            body = (result.message() + "\n").encode()
            self.send_response(200 if result.ready else 503)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:  # probes every few seconds: the verdict's changes are logged
            return

    server = ThreadingHTTPServer(("", port), Handler)
    thread = threading.Thread(target=server.serve_forever, name="readyz", daemon=True)
    thread.start()

    def shutdown() -> None:
        stop.wait()
        server.shutdown()

    threading.Thread(target=shutdown, name="readyz-stop", daemon=True).start()
    return thread
