"""gthread that gives a request thread only to a connection holding a whole request.

Plain gthread hands every new connection to a pool thread, which does the TLS handshake and reads
the request with blocking calls and no deadline: eight connections that sent half a header held
all eight threads of a default gateway, and nothing else was answered until they left. Here the
poller (the worker's main thread) does the handshake and reads the request without blocking;
a connection goes to a thread only when `request_framing` says its request is complete, and
every connection is bounded:

- `REQUEST_TIMEOUT` from accept (handshake included), or from the first byte of the next request
  on a kept-alive connection, to a complete request; then the connection is closed;
- a cap per worker (`MAX_CONNECTIONS` unless `--max-connections` says otherwise): at the cap the oldest connection still sending a request
  (else the oldest idle one) is closed for the new one, so fresh clients are always served;
- a thread's blocking socket reads and writes time out after `REQUEST_TIMEOUT` too (a client
  that stops reading its reply);
- a connection we close lingers in the poller, not in a thread, reading and dropping what the
  client still sends (at most `LINGER_BYTES`, `LINGER_SECONDS`), so the client reads our reply
  instead of a reset.

This subclasses gthread internals gunicorn does not document; tests/webhook/serving/
test_gunicorn_contract.py pins each one it relies on and names it when a gunicorn upgrade changes
it (docs/webhook.md says why no supported worker class replaces this).
"""

from __future__ import annotations

import errno
import selectors
import socket
import ssl
import struct
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from gunicorn import http
from gunicorn import sock as gsock
from gunicorn.workers.gthread import TConn, ThreadWorker

from webhook.serving.admission_review import MAX_BODY_BYTES
from webhook.serving.framing import MAX_HEADER_BYTES, request_framing

REQUEST_TIMEOUT = 10.0
"""Seconds for a whole request to arrive. The API server gives a webhook at most 30 s (ours: 5 s)
and sends a review in one go, so a request not in after 10 s is from no honest client."""

MAX_CONNECTIONS = 2000
"""Connections one worker holds by default: the API server keeps a few per replica; the rest are
idle, slow or hostile, and each costs a buffer and a TLS session, not a thread. gunicorn's
`worker_connections` is set one above the cap, so the worker may accept one more and then close
one to make room."""

LINGER_SECONDS = 2.0
LINGER_BYTES = 32 * 1024 * 1024
"""How long and how much a closing connection's unread input is read and dropped."""

_READ_CHUNK = 256 * 1024
_MAX_BUFFER = MAX_HEADER_BYTES + MAX_BODY_BYTES + 1


def _kernel_timeouts(sock: socket.socket, seconds: float) -> None:
    """Blocking reads and writes on `sock` give up after `seconds` (SO_RCVTIMEO, SO_SNDTIMEO).

    gunicorn's request thread puts the socket in blocking mode; with these a client that stops
    reading its reply (or a body read past what we buffered) frees the thread. Set in the kernel
    rather than with `settimeout`, which polls before every call and cost about 30 µs a review."""
    whole = int(seconds)
    value = struct.pack("ll", whole, int((seconds - whole) * 1_000_000))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)


@dataclass(eq=False)
class Reading:
    """A connection whose request is still arriving."""

    conn: Any
    deadline: float
    handshaken: bool
    buffer: bytearray = field(default_factory=bytearray)
    polled: bool = False
    """Registered with the poller (only once a first read did not bring the whole request)."""


@dataclass(eq=False)
class Lingering:
    conn: Any
    deadline: float
    drained: int = 0


class ReadAheadThreadWorker(ThreadWorker):
    """gthread with the handshake and the request read in the poller (see the module doc)."""

    def init_process(self) -> None:
        self._reading: dict[Any, Reading] = {}  # insertion order is age: the oldest first
        self._lingering: dict[Any, Lingering] = {}
        super().init_process()

    # --- accepting ----------------------------------------------------------------------------
    def accept(self, listener: Any) -> None:
        try:
            client, address = listener.accept()
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                return
            raise
        self.nr_conns += 1
        _kernel_timeouts(client, REQUEST_TIMEOUT)
        client.setblocking(False)
        raw: Any = client
        if self.cfg.is_ssl:
            try:
                raw = gsock.ssl_context(self.cfg).wrap_socket(
                    client, server_side=True, do_handshake_on_connect=False,
                    suppress_ragged_eofs=self.cfg.suppress_ragged_eofs)
            except (OSError, ssl.SSLError):
                self.nr_conns -= 1
                client.close()
                return
        conn = TConn(self.cfg, raw, address, listener.getsockname())
        self._make_room()
        self._start_reading(conn, handshaken=not self.cfg.is_ssl)

    def _make_room(self) -> None:
        """At the cap, close the oldest connection still sending a request, else the oldest idle one."""
        if self.nr_conns < self.worker_connections:
            return
        if self._reading:
            self._drop(next(iter(self._reading.values())))
        elif self.keepalived_conns:
            self._close_oldest_idle()

    def _close_oldest_idle(self) -> None:
        conn = self.keepalived_conns.popleft()
        self._unregister(conn.sock)
        self.nr_conns -= 1
        conn.close()

    # --- reading a request in the poller -------------------------------------------------------
    def _start_reading(self, conn: Any, handshaken: bool, received: bytes = b"", readable: bool = False) -> None:
        """Track `conn` until its request is whole; read at once when bytes are known to be there."""
        reading = Reading(conn, time.monotonic() + REQUEST_TIMEOUT, handshaken, bytearray(received))
        self._reading[conn] = reading  # the socket is non-blocking: TConn made it so, or finish_request
        if received or readable:
            self._on_readable(reading)
        if conn in self._reading and not reading.polled:
            reading.polled = True
            self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_readable, reading))

    def on_client_socket_readable(self, conn: Any, client: Any) -> None:
        """A kept-alive connection's next request begins: read it here, not in a thread."""
        self.poller.unregister(client)
        self.keepalived_conns.remove(conn)
        self._start_reading(conn, handshaken=True, readable=True)

    def _on_readable(self, reading: Reading, _fileobj: Any = None) -> None:
        """Read what has arrived (never blocking) and hand the connection off once its request
        is whole. A review usually arrives in one read, checked before trying another."""
        sock = reading.conn.sock
        framing = request_framing(reading.buffer, MAX_BODY_BYTES)
        try:
            if not reading.handshaken:
                sock.do_handshake()
                reading.handshaken = True
            while not framing.complete and not framing.problem and len(reading.buffer) <= _MAX_BUFFER:
                chunk = sock.recv(_READ_CHUNK)
                if not chunk:
                    self._drop(reading)  # the client went away
                    return
                reading.buffer += chunk
                framing = request_framing(reading.buffer, MAX_BODY_BYTES)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
            pass
        except (OSError, ssl.SSLError):
            self._drop(reading)
            return
        if framing.complete:
            self._hand_off(reading)
        elif framing.problem or len(reading.buffer) > _MAX_BUFFER:
            self.log.debug("dropping %s: %s", reading.conn.client, framing.problem or "request too large")
            self._drop(reading)

    def _hand_off(self, reading: Reading) -> None:
        conn = reading.conn
        del self._reading[conn]
        if reading.polled:
            self.poller.unregister(conn.sock)
        if conn.parser is None:
            conn.parser = http.get_parser(self.cfg, conn.sock, conn.client)
        conn.parser.unreader.unread(bytes(reading.buffer))
        conn.initialized = conn.data_ready = True
        self.enqueue_req(conn)

    def _drop(self, reading: Reading) -> None:
        del self._reading[reading.conn]
        if reading.polled:
            self._unregister(reading.conn.sock)
        self.nr_conns -= 1
        reading.conn.close()

    # --- after a request ------------------------------------------------------------------------
    def finish_request(self, conn: Any, fs: Any) -> None:
        """Keep-alive: back to the poller, reading at once what the client already sent; else
        close without a thread (see `_linger`)."""
        try:
            keep = bool(fs.result()) if not fs.cancelled() else False
        except Exception:  # noqa: BLE001 - the thread's error was logged by gunicorn
            keep = False
        if not (keep and conn.parser is not None):
            self._linger(conn)
            return
        conn.sock.setblocking(False)
        ahead = conn.parser.unreader.take_buffered()
        if ahead:
            self._start_reading(conn, handshaken=True, received=ahead)
            return
        conn.set_timeout()
        if not self.alive:
            conn.timeout = min(conn.timeout, time.monotonic() + LINGER_SECONDS)
        self.keepalived_conns.append(conn)
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self.on_client_socket_readable, conn))

    def _linger(self, conn: Any) -> None:
        """Send FIN now, then read and drop what the client still sends until it closes too."""
        try:
            conn.sock.setblocking(False)
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            self.nr_conns -= 1
            conn.close()
            return
        lingering = Lingering(conn, time.monotonic() + LINGER_SECONDS)
        self._lingering[conn] = lingering
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_lingering_readable, lingering))

    def _on_lingering_readable(self, lingering: Lingering, _fileobj: Any = None) -> None:
        try:
            while lingering.drained <= LINGER_BYTES:
                chunk = lingering.conn.sock.recv(_READ_CHUNK)
                if not chunk:
                    break
                lingering.drained += len(chunk)
            else:
                self._close_lingering(lingering)
                return
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
            return
        except (OSError, ssl.SSLError):
            pass
        self._close_lingering(lingering)

    def _close_lingering(self, lingering: Lingering) -> None:
        del self._lingering[lingering.conn]
        self._unregister(lingering.conn.sock)
        self.nr_conns -= 1
        lingering.conn.close()

    # --- deadlines ------------------------------------------------------------------------------
    def murder_pending(self) -> None:
        """Close connections past their deadline (called by gunicorn's loop at least every second)."""
        super().murder_pending()
        now = time.monotonic()
        for reading in [r for r in self._reading.values() if r.deadline <= now]:
            self._drop(reading)
        for lingering in [c for c in self._lingering.values() if c.deadline <= now]:
            self._close_lingering(lingering)

    def _unregister(self, sock: Any) -> None:
        try:
            self.poller.unregister(sock)
        except (KeyError, ValueError, OSError):
            pass
