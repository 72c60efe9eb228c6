"""Plain request/response calls to the API server on kept-alive connections, one per thread.

urllib3's pool (the `kubernetes` client's transport) costs about twice the CPU of the standard
library's `http.client` for the same small request over the same TLS connection (URL parsing,
header merging, retry and timeout objects and its response wrapper, on every write), and
`http.client` itself a third more than writing the request in one block and reading the response
with `kubeapi.http11` (docs/controller.md, "The HTTP client"). The controller makes tens of
thousands of such writes in a run and the gateway one SubjectAccessReview per review, so both send
them here. Watches (long streams read in chunks) and a configured proxy stay on urllib3's pool:
`serves` says which.

The connection is the one the client configuration describes: its CA (file or data), client
certificate, `verify_ssl`, `assert_hostname` and `tls_server_name`, as `kubernetes.client.rest`
hands them to urllib3. A kept connection the server has closed meanwhile (kube-apiserver drops
one idle for 90 s) is found before it is reused; a request that fails on a reused connection
anyway is sent again on a new one only when that cannot repeat a change: an idempotent method,
or nothing of the request got out. An idempotent request answered 429 or 503 with a Retry-After
waits and goes again, a bounded number of times, as urllib3's default retries did; a connection
that cannot be made fails at once (urllib3 tried three times in a row, without waiting): the
callers back off as they do from any failure.
"""

from __future__ import annotations

import os
import select
import socket
import ssl
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Mapping
from urllib.parse import urlsplit

from kubernetes.client.rest import should_bypass_proxies

from kubeapi.http11 import BadResponse, Disconnected, SocketReader, read_response, request_bytes

IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
"""Methods RFC 9110 calls idempotent: safe to send again after a connection broke under them."""
STALE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, Disconnected, ssl.SSLEOFError)
"""How a connection the server closed shows itself when it is used."""
RETRIES_AFTER = 3
MAX_RETRY_AFTER = 10.0
"""Bounds on waiting for a server that asked to be asked again later (Retry-After), per request."""


class Stale(Exception):
    """A kept connection broke under a request: `error` to raise, unless it `may_resend`."""

    def __init__(self, error: OSError, may_resend: bool) -> None:
        super().__init__(str(error))
        self.error, self.may_resend = error, may_resend


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
    context.hostname_checks_common_name = False  # a certificate's name is in its SANs (urllib3, client-go)
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
    (a refreshed kubeconfig may name new certificate files) or a certificate file is rewritten in
    place (a rotated service-account CA): looked at before each new connection, as urllib3 loads
    the files for each. A string `assert_hostname` (which no kubeconfig sets) is checked as
    the name the server's certificate must have and also sent as SNI."""

    scheme: str
    host: str
    port: int
    prefix: str  # the server URL's path, e.g. a proxy's /k8s/clusters/c-1
    host_field: str  # the Host field: the name (an IPv6 address in brackets), the port unless the scheme's
    context: ssl.SSLContext | None
    server_hostname: str | None
    socket_options: tuple[tuple[int, int, int], ...]
    files: tuple[float | None, ...]  # the certificate files' modification times when it was made

    @classmethod
    def of(cls, configuration: Any) -> "Endpoint":
        parts = urlsplit(configuration.host)
        https = parts.scheme == "https"
        name = configuration.assert_hostname if isinstance(configuration.assert_hostname, str) else None
        host, port = parts.hostname or "", parts.port or (443 if https else 80)
        field = f"[{host}]" if ":" in host else host
        return cls(parts.scheme, host, port, parts.path.rstrip("/"),
                   field if port == (443 if https else 80) else f"{field}:{port}",
                   tls_context(configuration) if https else None,
                   name or configuration.tls_server_name or None,
                   tuple(tuple(option) for option in configuration.socket_options or ()),
                   _stamps(configuration))

    def connect(self, timeout: float) -> "_Connection":
        return _Connection(self, timeout)


def _stamps(configuration: Any) -> tuple[float | None, ...]:
    out: list[float | None] = []
    for path in (configuration.ssl_ca_cert, configuration.cert_file, configuration.key_file):
        try:
            out.append(os.stat(path).st_mtime if path else None)
        except OSError:
            out.append(None)  # gone: the context made from it stands until the file comes back
    return tuple(out)


def _settings(configuration: Any) -> tuple[Any, ...]:
    return (configuration.host, configuration.ssl_ca_cert, configuration.ca_cert_data, configuration.cert_file,
            configuration.key_file, configuration.verify_ssl, configuration.assert_hostname,
            configuration.tls_server_name, tuple(map(tuple, configuration.socket_options or ())))


class _Connection:
    """One connection to the endpoint: TCP (no Nagle, the configuration's socket options), then
    TLS with the endpoint's context, SNI and name check on its server name."""

    def __init__(self, endpoint: Endpoint, timeout: float) -> None:
        self.endpoint = endpoint
        sock = socket.create_connection((endpoint.host, endpoint.port), timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for level, option, value in endpoint.socket_options:
                sock.setsockopt(level, option, value)
            if endpoint.context is not None:
                sock = endpoint.context.wrap_socket(sock, server_hostname=endpoint.server_hostname or endpoint.host)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
        self.reader = SocketReader(sock)
        self.closed = False  # shut down by `Transport.close`; its own thread releases it
        self._readable = select.poll()
        self._readable.register(sock, select.POLLIN)

    def dropped(self) -> bool:
        """Whether this idle connection cannot carry another request: shut down, holding bytes
        nobody asked for (here or in TLS), or readable, which for an idle kept-alive connection
        means the server has closed it."""
        pending = isinstance(self.sock, ssl.SSLSocket) and self.sock.pending()
        return self.closed or bool(self.reader.buffered or pending or self._readable.poll(0))

    def shut_down(self) -> None:
        """From any thread: end the connection. A request under way on it fails with an OSError at
        once (a blocked read wakes; closing alone would not wake it); the descriptor stays open
        until the connection's own thread releases it, so no other socket can take its number
        while that thread may still use it."""
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # not connected any more

    def release(self) -> None:
        """From the connection's own thread: close the socket."""
        self.closed = True
        self.sock.close()


class Transport:
    """Requests under one client configuration; each thread keeps its own connection."""

    def __init__(self, configuration: Any, sleep: Callable[[float], None] = time.sleep) -> None:
        self.configuration, self.sleep = configuration, sleep
        self._settings: tuple[Any, ...] | None = None
        self._endpoint: Endpoint | None = None
        self._forked()
        _TRANSPORTS.add(self)

    def _forked(self) -> None:
        """Fresh connection state (also in a forked child: its parent's connections stay its parent's)."""
        self._lock = threading.Lock()
        self._local = threading.local()
        self._open: weakref.WeakSet[_Connection] = weakref.WeakSet()  # every thread's, for `close`

    def endpoint(self, connecting: bool = False) -> Endpoint:
        """The endpoint for the configuration as it is now; `connecting`: also as its certificate
        files are now."""
        settings = _settings(self.configuration)
        with self._lock:
            if (self._endpoint is None or settings != self._settings
                    or (connecting and _stamps(self.configuration) != self._endpoint.files)):
                self._endpoint, self._settings = Endpoint.of(self.configuration), settings
            return self._endpoint

    def request(self, method: str, target: str, body: bytes | None, headers: Mapping[str, str],
                timeout: float) -> tuple[int, bytes]:
        """Send one request (`target`: path and query) and read the whole answer: (status, body).
        Transport failures raise OSError (ssl.SSLError, TimeoutError, ConnectionError), an answer
        that is not HTTP ConnectionError. An idempotent request the server turns away for now (429
        or 503 with a Retry-After, as its priority and fairness does) is sent again after the wait
        it asks for, at most `RETRIES_AFTER` times and `MAX_RETRY_AFTER` seconds a wait, as
        urllib3's default retries did; anything else is the caller's to retry."""
        resent, waits = False, 0
        while True:
            try:
                status, data, retry_after = self._exchange(method, target, body, headers, timeout)
            except Stale as stale:
                if resent or not stale.may_resend:
                    raise stale.error from stale.error.__cause__
                resent = True
                continue
            if retry_after is None or method not in IDEMPOTENT or waits == RETRIES_AFTER:
                return status, data
            waits += 1
            self.sleep(min(retry_after, MAX_RETRY_AFTER))

    def _exchange(self, method: str, target: str, body: bytes | None, headers: Mapping[str, str],
                  timeout: float) -> tuple[int, bytes, float | None]:
        """One attempt on this thread's connection: the status, the body and the Retry-After
        seconds of a 429 or 503 that has one."""
        endpoint = self.endpoint()
        conn: _Connection | None = getattr(self._local, "conn", None)
        if conn is not None and (conn.endpoint is not endpoint or conn.dropped()):
            self._drop()
            conn = None
        reused = conn is not None
        if conn is None:
            endpoint = self.endpoint(connecting=True)
            conn = self._local.conn = endpoint.connect(timeout)
            with self._lock:
                self._open.add(conn)
        request = request_bytes(method, endpoint.prefix + target, endpoint.host_field, headers, body)
        sent = False
        try:
            conn.sock.settimeout(timeout)
            conn.sock.sendall(request)
            sent = True
            response = read_response(conn.reader, method)
        except STALE as exc:
            shut_down = conn.closed  # by `close`, from another thread: not a server's doing, not to resend
            self._drop()
            error: OSError = exc
            if isinstance(exc, ssl.SSLEOFError):  # a closed connection, not a TLS failure
                error = ConnectionResetError(f"{endpoint.host}:{endpoint.port} closed the connection")
                error.__cause__ = exc
            raise Stale(error, reused and not shut_down and (method in IDEMPOTENT or not sent)) from exc
        except BadResponse as exc:
            self._drop()
            raise ConnectionError(f"not an HTTP answer from {endpoint.host}:{endpoint.port}: {exc}") from exc
        except BaseException:
            self._drop()  # a timeout or an interruption leaves the connection mid-exchange
            raise
        if not response.keep_alive:
            self._drop()
        wait = None
        if response.status in (429, 503):
            raw = response.fields.get("retry-after", "")
            wait = float(raw) if raw.isascii() and raw.isdigit() else None  # seconds; an HTTP date is not waited for
        return response.status, response.body, wait

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            conn.release()

    def close(self) -> None:
        """Shut every thread's connection down: a request under way fails with an OSError (not sent
        again), and each thread's next request opens a new connection."""
        with self._lock:
            conns = list(self._open)
        for conn in conns:
            conn.shut_down()


_TRANSPORTS: weakref.WeakSet[Transport] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """A forked child (gunicorn's workers, if a client was made before the fork) must not write on
    its parent's TLS connections: it opens its own."""
    for transport in list(_TRANSPORTS):
        transport._forked()


os.register_at_fork(after_in_child=_after_fork_in_child)
