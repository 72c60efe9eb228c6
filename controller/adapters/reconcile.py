"""The reconcile runtime: each reconciler gets its own work queue and workers (controller-runtime's
controller, over client-go's workqueue semantics).

A reconciler says which keys a change concerns and reconciles one key at a time, returning when to
look again. Because every reconciler has its own queue, the Job integration, the AppWrapper
lifecycle, the framework objects and the slack ClusterQueue each retry their own failures with
their own per-key backoff: one raising for a key no longer skips the others for it. Within one
queue a key is never worked on by two workers at once.

Outcomes, as controller-runtime's `reconcileHandler`: success forgets the key's failures (and
queues it again after `requeue_after`, if asked); a write refused because this process no longer
leads is dropped; a write the API server could not put before an admission webhook waits for the
webhook (`WebhookOutage`); any other failure comes back with the key's exponential backoff.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable, Generic, Iterable, Protocol, TypeVar

from batchgate.clock import Clock
from controller.adapters.kube import ApiError
from controller.adapters.metrics import ControllerMetrics
from controller.adapters.webhook_outage import WebhookOutage
from controller.adapters.workqueue import WorkQueue
from controller.adapters.writer import NotLeader
from controller.state.cache import Change, ObjectKey

log = logging.getLogger(__name__)

KeyT = TypeVar("KeyT", bound=ObjectKey)


@dataclass(frozen=True)
class Result:
    """What a reconcile asks of the runtime: nothing, or to be looked at again after `requeue_after` seconds."""

    requeue_after: float | None = None


DONE = Result()


class Reconciler(Protocol[KeyT]):
    def keys_for(self, change: Change) -> Iterable[KeyT]:
        """The keys this reconciler must look at after `change` (none if it is not concerned)."""

    def reconcile(self, key: KeyT) -> Result:
        """Bring the object named by `key` towards what it should be; raise to be retried with backoff."""


class ReconcileLoop(Generic[KeyT]):
    """One reconciler, its work queue and its worker threads, which act only while this process leads."""

    def __init__(self, name: str, reconciler: Reconciler[KeyT], clock: Clock, is_leader: Callable[[], bool],
                 metrics: ControllerMetrics, *, workers: int = 1) -> None:
        self.name, self.reconciler, self.is_leader, self.metrics = name, reconciler, is_leader, metrics
        self.workers = workers
        self.queue: WorkQueue[KeyT] = WorkQueue(clock)
        self.webhook_outage: WebhookOutage[KeyT] = WebhookOutage(self.queue)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def enqueue(self, change: Change) -> None:
        for key in self.reconciler.keys_for(change):
            self.queue.add(key)

    def start(self) -> None:
        for index in range(self.workers):
            thread = threading.Thread(target=self._work, name=f"reconcile-{self.name}-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        self.queue.shutdown()
        for thread in self._threads:
            thread.join(timeout=10)

    def _work(self) -> None:
        while not self._stop.is_set():
            self.process_next(timeout=0.5)

    def process_next(self, timeout: float | None = 0.0) -> bool:
        """Take one key (waiting up to `timeout` seconds) and reconcile it; False if none was ready."""
        key = self.queue.get(timeout=timeout)
        self.metrics.queue_depth.labels(self.name).set(len(self.queue))
        if key is None:
            return False
        try:
            self._handle(key)
        finally:
            self.queue.done(key)
        return True

    def _handle(self, key: KeyT) -> None:
        if not self.is_leader():
            self.queue.forget(key)
            return
        try:
            result = self.reconciler.reconcile(key)
        except NotLeader:
            self.queue.forget(key)
            return
        except ApiError as exc:
            if exc.webhook_unreachable:
                delay = self.webhook_outage.failed(key)
            else:
                self.webhook_outage.passed(key)
                delay = self.queue.add_rate_limited(key)
            self._failed(key, exc, delay)
            return
        except Exception as exc:
            self._failed(key, exc, self.queue.add_rate_limited(key))
            return
        self.metrics.reconciles.labels(self.name, key.kind, "ok").inc()
        self.queue.forget(key)
        self.webhook_outage.passed(key)
        if result.requeue_after is not None:
            self.queue.add_after(key, max(result.requeue_after, 0.0))

    def _failed(self, key: KeyT, exc: Exception, delay: float) -> None:
        self.metrics.reconciles.labels(self.name, key.kind, "error").inc()
        log.warning("%s: reconcile %s failed (%s); retry in %.3fs", self.name, key, exc, delay)
