"""Writes refused because an admission webhook was unreachable wait for the gateway, not for a
growing backoff.

kube-apiserver answers such a write with an InternalError ("failed calling webhook ...", the
webhook's failurePolicy being Fail): the write was never judged. Backing those keys off
exponentially (5 ms doubling to 300 s) made a Job admitted during a 100 s gateway outage start
64 s after the gateway returned. Instead, the first key that fails so becomes the *probe*: it is
retried every `probe_every` seconds, and the others wait with their backoff capped at
`max_delay`. As soon as the probe (or any waiting key) gets a write through, or fails for another
reason, every waiting key is queued at once: admitted work starts within a probe interval of the
gateway's return.
"""

from __future__ import annotations

import logging
import threading
from typing import Generic

from controller.adapters.workqueue import K, WorkQueue

log = logging.getLogger(__name__)

PROBE_EVERY_SECONDS = 1.0
"""How often the probe key retries its write while the webhook is unreachable."""
MAX_DELAY_SECONDS = 10.0
"""The longest any other waiting key backs off, should the probe itself go away (its object deleted)."""


class WebhookOutage(Generic[K]):
    def __init__(self, queue: WorkQueue[K], *, probe_every: float = PROBE_EVERY_SECONDS,
                 max_delay: float = MAX_DELAY_SECONDS) -> None:
        self.queue, self.probe_every, self.max_delay = queue, probe_every, max_delay
        self._lock = threading.Lock()
        self._waiting: set[K] = set()
        self._probe: K | None = None

    @property
    def waiting(self) -> int:
        with self._lock:
            return len(self._waiting)

    def failed(self, key: K) -> float:
        """`key`'s write met an unreachable webhook: requeue it; the delay until it is tried again."""
        with self._lock:
            first = not self._waiting
            self._waiting.add(key)
            probe = self._probe in (None, key)
            if probe:
                self._probe = key
        if first:
            log.warning("an admission webhook is unreachable; writes wait for it (probing every %.1fs)", self.probe_every)
        if probe:
            self.queue.add_after(key, self.probe_every)
            return self.probe_every
        return self.queue.add_rate_limited(key, max_delay=self.max_delay)

    def passed(self, key: K) -> None:
        """`key` was reconciled without meeting an unreachable webhook: if it was waiting, all waiting keys go now."""
        with self._lock:
            if key not in self._waiting:
                return
            released, self._waiting, self._probe = self._waiting - {key}, set(), None
        log.info("admission webhooks answer again; %d waiting keys queued", len(released))
        for waiting in released:
            self.queue.forget(waiting)
            self.queue.add(waiting)
