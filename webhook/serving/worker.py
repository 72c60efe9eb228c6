"""Our gthread worker: requests read without a thread (webhook/serving/readahead.py), and only
its share of the connections accepted (webhook/serving/balance.py).

The master hands each worker its `connection_table` and `connection_slot` in `pre_fork`; a
worker without them (no slot left) accepts every connection it is offered. The gunicorn
internals both modules rely on are pinned by tests/webhook/serving/test_gunicorn_contract.py.
"""

from __future__ import annotations

import time
from typing import Any

from webhook.serving.balance import ACCEPT_DEFER_PAUSE, ConnectionTable, defer_accept
from webhook.serving.readahead import ReadAheadThreadWorker

EPISODE_GAP = 0.01
"""Seconds between two deferrals after which the second is about a new connection."""


def honour_connection_close(app: Any) -> Any:
    """WSGI wrapper: a response the app marks `Connection: close` really closes the connection.

    gunicorn drops hop-by-hop headers from the app and decides keep-alive itself, so a
    connection whose stream the app gave up on (an unreadable or oversized body) would
    otherwise be kept for the next request. `start_response` is gunicorn's Response method.
    """
    def wsgi(environ: Any, start_response: Any) -> Any:
        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            if any(k.lower() == "connection" and v.lower() == "close" for k, v in headers):
                response = getattr(start_response, "__self__", None)
                if response is not None and hasattr(response, "force_close"):
                    response.force_close()
            return start_response(status, headers, exc_info)
        return app(environ, start)
    return wsgi


class BalancedThreadWorker(ReadAheadThreadWorker):
    """Read-ahead gthread that leaves a waiting connection to a peer holding fewer connections.

    It counts the connections it holds itself: each is, at any moment, either with a request
    thread (`enqueue_req` until `finish_request`), reading a request, kept alive, lingering or
    pending in the poller, or gone.
    gthread's own `nr_conns` drifts below zero when a client closes first (a connection that
    the thread already closed is counted down again), so it cannot be compared across workers.
    """

    connection_table: ConnectionTable | None = None
    connection_slot: int | None = None

    def init_process(self) -> None:
        self._with_threads: set[Any] = set()
        self._deferring_since = 0.0
        self._last_deferral = float("-inf")
        super().init_process()

    wsgi: Any  # set by gunicorn's load_wsgi (gunicorn is untyped)

    def load_wsgi(self) -> None:
        super().load_wsgi()
        self.wsgi = honour_connection_close(self.wsgi)

    def held_connections(self) -> int:
        return (len(self._with_threads) + len(self._reading) + len(self.keepalived_conns) + len(self._lingering)
                + len(self.pending_conns))

    def _publish(self) -> None:
        if self.connection_table is not None and self.connection_slot is not None:
            self.connection_table.publish(self.connection_slot, self.held_connections())

    def accept(self, listener: Any) -> None:
        table, slot = self.connection_table, self.connection_slot
        if table is not None and slot is not None:
            now = time.monotonic()
            if now - self._last_deferral > EPISODE_GAP:
                self._deferring_since = now
            if defer_accept(self.held_connections(), table.peers(slot), now - self._deferring_since):
                self._last_deferral = now
                time.sleep(ACCEPT_DEFER_PAUSE)  # the listener stays readable: asked again after this
                return
            self._last_deferral = float("-inf")
        super().accept(listener)
        self._publish()

    def enqueue_req(self, conn: Any) -> None:
        self._with_threads.add(conn)
        super().enqueue_req(conn)

    def finish_request(self, conn: Any, fs: Any) -> None:
        self._with_threads.discard(conn)
        super().finish_request(conn, fs)  # may hand it straight back to a thread (enqueue_req)
        self._publish()

    def murder_keepalived(self, force: bool = False) -> None:
        super().murder_keepalived(force)
        self._publish()

    def murder_pending(self) -> None:
        super().murder_pending()
        self._publish()
