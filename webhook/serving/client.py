"""A keep-alive HTTPS client for the gateway that verifies its certificate against our CA.

The demo and the tests talk to the real server the way the API server does: POST JSON over
TLS, HTTP/1.1, one connection reused for many reviews.
"""

from __future__ import annotations

import http.client
import json
import ssl
from pathlib import Path
from typing import Any

TIMEOUT_SECONDS = 10.0
"""The API server's default webhook timeout (admissionregistration/v1 timeoutSeconds)."""


def verifying_context(ca_file: str | Path, check_name: bool = True) -> ssl.SSLContext:
    """Verifies the chain to `ca_file`; and the name dialled unless `check_name` is off (a peer's
    certificate names its Service while the bench dials 127.0.0.1)."""
    context = ssl.create_default_context(cafile=str(ca_file))
    context.check_hostname = check_name
    context.set_alpn_protocols(["http/1.1"])
    return context


class GatewayClient:
    """One kept-alive connection to a gateway; reconnects once if the server closed it."""

    def __init__(self, host: str, port: int, ca_file: str | Path, timeout: float = TIMEOUT_SECONDS,
                 check_name: bool = True):
        self.host, self.port, self.timeout = host, port, timeout
        self.context = verifying_context(ca_file, check_name)
        self._conn: http.client.HTTPSConnection | None = None

    def _connection(self) -> http.client.HTTPSConnection:
        if self._conn is None:
            self._conn = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=self.timeout)
        return self._conn

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes, dict[str, str]]:
        headers = {"Content-Type": "application/json", "Accept": "application/json, */*"} if body is not None else {}
        for attempt in (1, 2):
            conn = self._connection()
            try:
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
            except (ConnectionError, http.client.RemoteDisconnected, http.client.BadStatusLine):
                self.close()
                if attempt == 2:
                    raise
                continue
            if response.getheader("Connection", "").lower() == "close":
                self.close()
            return response.status, data, {k.lower(): v for k, v in response.getheaders()}
        raise AssertionError("unreachable")

    def review(self, path: str, review: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        status, data, _ = self.request("POST", path, json.dumps(review).encode())
        return status, json.loads(data)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
