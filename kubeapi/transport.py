"""Plain request/response calls to the API server on kept-alive connections, one per thread.

urllib3's pool (the `kubernetes` client's transport) costs about twice the CPU of the standard
library's `http.client` for the same small request over the same TLS connection: URL parsing,
header merging, retry and timeout objects and its response wrapper, on every write (docs/
controller.md, "The HTTP client"). The controller makes tens of thousands of such writes in a
run and the gateway one SubjectAccessReview per review, so both send them here. Watches (long
streams read in chunks) and a configured proxy stay on urllib3's pool: `serves` says which.

The connection is the one the client configuration describes: its CA (file or data), client
certificate, `verify_ssl`, `assert_hostname` and `tls_server_name`, as `kubernetes.client.rest`
hands them to urllib3. A kept connection the server has closed meanwhile (kube-apiserver drops
one idle for 90 s) is found before it is reused; a request that fails on a reused connection
anyway is sent again on a new one only when that cannot repeat a change: an idempotent method,
or nothing of the request got out.
"""

from __future__ import annotations

import http.client
import os
import select
import socket
import ssl
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import urlsplit

from kubernetes.client.rest import should_bypass_proxies

IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
"""Methods RFC 9110 calls idempotent: safe to send again after a connection broke under them."""
STALE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, http.client.RemoteDisconnected,
         ssl.SSLEOFError)
"""How a connection the server closed shows itself when it is used."""


def serves(configuration: Any) -> bool:
    """Whether requests under `configuration` go through this transport: HTTP(S) with no proxy to
    pass through (urllib3's pool keeps that case, HTTP CONNECT and SOCKS included)."""
    if urlsplit(configuration.host).scheme not in ("http", "https"):
        return False
    return not configuration.proxy or should_bypass_proxies(configuration.host, configuration.no_proxy or "")


def tls_context(configuration: Any) -> ssl.SSLContext:
    """The TLS settings of a client configuration as an SSLContext (what urllib3 builds from the
    same fields): the CA from a file or inline data, the client certificate, and whether to verify
    the server's certificate and its name."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert, cadata=configuration.ca_cert_data)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif configuration.assert_hostname is False:
        context.check_hostname = False
    context.set_alpn_protocols(["http/1.1"])
    return context


@dataclass(frozen=True)
class Endpoint:
    """Where and how to connect, derived from a configuration; a new one when any field changes
    (a refreshed kubeconfig may name new certificate files)."""

    scheme: str
    host: str
    port: int
    prefix: str  # the server URL's path, e.g. a proxy's /k8s/clusters/c-1
    context: ssl.SSLContext | None
    server_hostname: str | None
    socket_options: tuple[tuple[int, int, int], ...]

    @classmethod
    def of(cls, configuration: Any) -> "Endpoint":
        parts = urlsplit(configuration.host)
        https = parts.scheme == "https"
        name = configuration.assert_hostname if isinstance(configuration.assert_hostname, str) else None
        return cls(parts.scheme, parts.hostname or "", parts.port or (443 if https else 80), parts.path.rstrip("/"),
                   tls_context(configuration) if https else None,
                   name or configuration.tls_server_name or None,
                   tuple(tuple(option) for option in configuration.socket_options or ()))

    def connect(self, timeout: float) -> "_Connection":
        return _Connection(self, timeout)


def _settings(configuration: Any) -> tuple[Any, ...]:
    return (configuration.host, configuration.ssl_ca_cert, configuration.ca_cert_data, configuration.cert_file,
            configuration.key_file, configuration.verify_ssl, configuration.assert_hostname,
            configuration.tls_server_name, tuple(map(tuple, configuration.socket_options or ())))


class _Connection(http.client.HTTPConnection):
    """One connection to the endpoint; TLS with its context, SNI and name check on its server name."""

    def __init__(self, endpoint: Endpoint, timeout: float) -> None:
        super().__init__(endpoint.host, endpoint.port, timeout=timeout)
        self.endpoint = endpoint

    def connect(self) -> None:
        super().connect()  # TCP, with TCP_NODELAY
        for level, option, value in self.endpoint.socket_options:
            self.sock.setsockopt(level, option, value)
        if self.endpoint.context is not None:
            self.sock = self.endpoint.context.wrap_socket(
                self.sock, server_hostname=self.endpoint.server_hostname or self.endpoint.host)

    def dropped(self) -> bool:
        """An idle kept-alive connection with something to read has been closed by the server (or
        holds bytes nobody asked for): either way it cannot carry another request."""
        if self.sock is None:
            return False
        poll = select.poll()
        poll.register(self.sock, select.POLLIN)
        return bool(poll.poll(0))


class Transport:
    """Requests under one client configuration; each thread keeps its own connection."""

    def __init__(self, configuration: Any) -> None:
        self.configuration = configuration
        self._settings: tuple[Any, ...] | None = None
        self._endpoint: Endpoint | None = None
        self._forked()
        _TRANSPORTS.add(self)

    def _forked(self) -> None:
        """Fresh connection state (also in a forked child: its parent's connections stay its parent's)."""
        self._lock = threading.Lock()
        self._local = threading.local()
        self._open: weakref.WeakSet[_Connection] = weakref.WeakSet()  # every thread's, for `close`

    def endpoint(self) -> Endpoint:
        settings = _settings(self.configuration)
        with self._lock:
            if self._endpoint is None or settings != self._settings:
                self._endpoint, self._settings = Endpoint.of(self.configuration), settings
            return self._endpoint

    def request(self, method: str, target: str, body: bytes | None, headers: Mapping[str, str],
                timeout: float) -> tuple[int, bytes]:
        """Send one request (`target`: path and query) and read the whole answer: (status, body).
        Transport failures raise OSError (ssl.SSLError, TimeoutError, ConnectionError), an answer
        that is not HTTP ConnectionError."""
        endpoint = self.endpoint()
        for attempt in (1, 2):
            conn: _Connection | None = getattr(self._local, "conn", None)
            if conn is not None and (conn.endpoint is not endpoint or conn.dropped()):
                conn.close()
                conn = None
            reused = conn is not None
            if conn is None:
                conn = self._local.conn = endpoint.connect(timeout)
                with self._lock:
                    self._open.add(conn)
            elif conn.sock is not None:
                conn.sock.settimeout(timeout)
            conn.timeout = timeout
            sent = False
            try:
                conn.request(method, endpoint.prefix + target, body=body, headers=dict(headers))
                sent = True
                response = conn.getresponse()
                data = response.read()
            except STALE as exc:
                self._drop()
                if reused and attempt == 1 and (method in IDEMPOTENT or not sent):
                    continue
                if isinstance(exc, ssl.SSLEOFError):  # a closed connection, not a TLS failure
                    raise ConnectionResetError(f"{endpoint.host}:{endpoint.port} closed the connection") from exc
                raise
            except http.client.HTTPException as exc:
                self._drop()
                raise ConnectionError(f"not an HTTP answer from {endpoint.host}:{endpoint.port}: {exc!r}") from exc
            except BaseException:
                self._drop()  # a timeout or an interruption leaves the connection mid-exchange
                raise
            if response.will_close:
                self._drop()
            return response.status, data
        raise AssertionError("unreachable: the second attempt returns or raises")

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            conn.close()

    def close(self) -> None:
        """Close every thread's connection (a thread's next request opens a new one)."""
        with self._lock:
            conns = list(self._open)
        for conn in conns:
            conn.close()


_TRANSPORTS: weakref.WeakSet[Transport] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """A forked child (gunicorn's workers, if a client was made before the fork) must not write on
    its parent's TLS connections: it opens its own."""
    for transport in list(_TRANSPORTS):
        transport._forked()


os.register_at_fork(after_in_child=_after_fork_in_child)
