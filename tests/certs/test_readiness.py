"""The keeper's readiness endpoint against the local cluster, with the real `kubernetes` client
and a real HTTP server: the verdict follows the configurations as they are at each probe.

We test these aspects: after a keeper pass the served certificate is trusted (200); a caBundle
edited to another CA makes /readyz answer 503 naming the webhook; putting it back makes it 200
again; the served file vanishing (its Secret deleted) keeps the last pair judged, as the gateway
keeps serving it; a configuration deleted is named in the body but the pod stays ready.
"""

from __future__ import annotations

import base64
import socket
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from kubernetes import client

from batchgate.clock import FakeClock
from certs.authority import CA_CERT, TLS_CERT, issue_secret_data
from certs.readiness import TrustProbe, serve
from tests.certs.test_keeper import START, keeper, secret_data, setup  # noqa: F401


def probe(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_readyz_follows_the_trust_of_the_served_certificate(
        kube_api: client.ApiClient, setup: dict[str, Any], tmp_path: Path) -> None:  # noqa: F811
    clock = FakeClock(START)
    keeper(kube_api, setup, clock).reconcile()
    data, _ = secret_data(kube_api, setup["namespace"])
    (tmp_path / TLS_CERT).write_bytes(data[TLS_CERT])
    stop, port = threading.Event(), free_port()
    serve(port, TrustProbe(kube_api, tmp_path, setup["configs"], clock).verdict, stop)
    try:
        assert probe(port)[0] == 200
        (tmp_path / TLS_CERT).unlink()  # the Secret deleted: the gateway keeps serving what it loaded
        assert probe(port)[0] == 200

        admission = client.AdmissionregistrationV1Api(kube_api)
        (_, mutating), (_, validating) = setup["configs"]
        config = admission.read_mutating_webhook_configuration(mutating)
        other = issue_secret_data(["gate"], START, ca_days=3650, cert_days=365)
        config.webhooks[0].client_config.ca_bundle = base64.b64encode(other[CA_CERT]).decode()
        admission.replace_mutating_webhook_configuration(mutating, config)
        status, body = probe(port)
        assert status == 503
        assert f"MutatingWebhookConfiguration/{mutating} webhook a.keeper.test: caBundle has no CA" in body

        keeper(kube_api, setup, clock).reconcile()  # the keeper puts the bundle back
        assert probe(port)[0] == 200

        admission.delete_validating_webhook_configuration(validating)
        status, body = probe(port)
        assert status == 200
        assert f"not found (re-apply the install): ValidatingWebhookConfiguration/{validating}" in body
    finally:
        stop.set()
