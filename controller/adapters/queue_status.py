"""ClusterQueue and LocalQueue status, written from the quota state (as Kueue's clusterqueue and
localqueue controllers write theirs): one writer for both kinds, each queue named by its ObjectKey.

The values come from `decisions/quota/queue_status.py`; this reconciler only diffs them against
what it last wrote and patches `/status`. Queue status is informative: it is written on its own
loop at most every `interval`, and only while the rate limiter has spare capacity (`has_spare`),
so it never delays an admission.
"""

from __future__ import annotations

import datetime as _dt
import logging
from functools import partial
from typing import Any, Callable, Mapping

from batchgate.clock import Clock
from controller.adapters.cycle_loop import CycleLoop
from controller.adapters.kube import RESOURCES, ApiError
from controller.adapters.store import SharedStore
from controller.adapters.writer import Writer
from controller.decisions.quota import admission_status, queue_status
from controller.state.cache import ObjectKey
from controller.state.quota_state import QuotaState

log = logging.getLogger(__name__)

Statuses = dict[ObjectKey, Mapping[str, Any]]


def wanted_statuses(state: QuotaState) -> Statuses:
    """What every ClusterQueue's and LocalQueue's status should say now (read under the state's lock); a
    ClusterQueue's is recalled while its `queue_version` stands (hundreds of queues, once a second)."""
    wanted: Statuses = {ObjectKey("ClusterQueue", "", name): state.queue_views.one(
                            ("status", name), state.queue_version(name), partial(queue_status.cluster_queue_status, state, name))
                        for name in state.cluster_queues}
    wanted.update((ObjectKey("LocalQueue", namespace, name), queue_status.local_queue_status(state, namespace, name))
                  for namespace, name in state.local_queues)
    return wanted


class QueueStatusReconciler:
    def __init__(self, store: SharedStore, writer: Writer, clock: Clock, wanted: Callable[[], Statuses],
                 has_spare: Callable[[], bool], is_leader: Callable[[], bool], *, interval: float = 1.0) -> None:
        self.store, self.writer, self.clock = store, writer, clock
        self.wanted, self.has_spare = wanted, has_spare
        self._written: Statuses = {}  # what was last written per queue: an unchanged status costs no request
        self._loop = CycleLoop("queue-status", self._step, is_leader, wait=lambda: interval)

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def _step(self) -> bool:
        self.write(self.clock.now())
        return False

    def write(self, now: _dt.datetime) -> None:
        """Write every queue status that changed since this reconciler last wrote it, while capacity lasts."""
        for key, wanted in self.wanted().items():
            written_before = self._written.get(key)
            if written_before is wanted or written_before == wanted:
                continue
            if not self.has_spare():
                return
            observed = self.store.get(key.kind, key.namespace, key.name)
            if observed is None:
                continue
            try:
                written = self.writer.update_status(RESOURCES[key.kind], observed, partial(_status_patch, wanted, now))
            except ApiError as exc:
                log.warning("%s status: %s", key, exc)
                continue
            self._written[key] = wanted
            if written is not None:
                self.store.assume(key.kind, written)


def _status_patch(wanted: Mapping[str, Any], now: _dt.datetime, current: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return admission_status.status_patch(current, wanted, now)
