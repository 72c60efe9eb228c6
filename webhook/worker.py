"""gunicorn's gthread worker, accepting only its share of the connections (webhook/balance.py).

The master hands each worker its `connection_table` and `connection_slot` in `pre_fork`; a
worker without them (no slot left) behaves exactly like gthread.
"""

from __future__ import annotations

import time
from typing import Any

from gunicorn.workers.gthread import ThreadWorker

from webhook.balance import ACCEPT_DEFER_PAUSE, ConnectionTable, defer_accept

EPISODE_GAP = 0.01
"""Seconds between two deferrals after which the second is about a new connection."""


class BalancedThreadWorker(ThreadWorker):
    """gthread that leaves a waiting connection to a peer holding fewer connections."""

    connection_table: ConnectionTable | None = None
    connection_slot: int | None = None

    def init_process(self) -> None:
        self._deferring_since = 0.0
        self._last_deferral = float("-inf")
        super().init_process()

    def _publish(self) -> None:
        if self.connection_table is not None and self.connection_slot is not None:
            self.connection_table.publish(self.connection_slot, self.nr_conns)

    def accept(self, listener: Any) -> None:
        table, slot = self.connection_table, self.connection_slot
        if table is not None and slot is not None:
            now = time.monotonic()
            if now - self._last_deferral > EPISODE_GAP:
                self._deferring_since = now
            if defer_accept(self.nr_conns, table.peers(slot), now - self._deferring_since):
                self._last_deferral = now
                time.sleep(ACCEPT_DEFER_PAUSE)  # the listener stays readable: asked again after this
                return
            self._last_deferral = float("-inf")
        super().accept(listener)
        self._publish()

    def finish_request(self, conn: Any, fs: Any) -> None:
        super().finish_request(conn, fs)
        self._publish()

    def murder_keepalived(self, force: bool = False) -> None:
        super().murder_keepalived(force)
        self._publish()

    def murder_pending(self) -> None:
        super().murder_pending()
        self._publish()
