"""One set of watches for every viewer: informers into a shared store, a digest per change batch.

Viewers never reach the API server: they read the latest digest and wait on its version. A kind
the caller may not list is recorded as that kind's problem (its panels say so, the rest works);
a transport failure marks the whole view stale until a list or watch succeeds again.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import threading
from typing import Any

from kubernetes import client as k8s_client

from batchgate.clock import Clock
from controller.adapters.informer import Informer
from controller.adapters.kube import RESOURCES, ApiError, KubeClient, Resource, WatchStream
from controller.adapters.store import SharedStore
from controller.state.cache import Change
from dashboard.views.digest import Digests, Published
from dashboard.views.observed import KINDS, Observed

log = logging.getLogger(__name__)

AUDIT_TAIL_BYTES = 256 * 1024
"""How much of the audit log's end is read: far more than the rows shown, bounded whatever its size."""
IDLE_RECHECK_SECONDS = 2.0
"""How often the audit log and the API server's reachability are looked at when no watch event comes."""


class Health:
    """Per kind: the last list/watch failure; and since when the API server has not answered."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self.problems: dict[str, str] = {}
        self.unreachable: dict[str, _dt.datetime] = {}
        self.changed = threading.Event()

    def ok(self, kind: str) -> None:
        with self._lock:
            had = self.problems.pop(kind, None) is not None or self.unreachable.pop(kind, None) is not None
        if had:
            self.changed.set()

    def failed(self, kind: str, exc: BaseException) -> None:
        with self._lock:
            if isinstance(exc, ApiError) and exc.status:
                self.unreachable.pop(kind, None)
                if exc.status == 403:
                    why = "forbidden: your account may not list or watch it"
                elif exc.not_found:
                    why = "not served by the API server (CRD not installed?)"
                else:
                    why = f"{exc.status} {exc.reason}"
                self.problems[kind] = why
            else:
                self.unreachable.setdefault(kind, self.clock.now())
        self.changed.set()

    def snapshot(self) -> tuple[dict[str, str], _dt.datetime | None]:
        with self._lock:
            return dict(self.problems), min(self.unreachable.values(), default=None)


class ObservingClient(KubeClient):
    """The informers' client: every list and watch outcome goes to `Health`, by kind."""

    def __init__(self, inner: KubeClient, health: Health) -> None:
        super().__init__(inner.api_client, inner.limiter, inner.request_timeout, inner.transport)
        self.health = health

    def list(self, res: Resource, namespace: str | None = None, **query: Any) -> dict[str, Any]:
        try:
            out = super().list(res, namespace, **query)
        except Exception as exc:
            self.health.failed(res.kind, exc)
            raise
        self.health.ok(res.kind)
        return out

    def watch(self, res: Resource, namespace: str | None, resource_version: str | None, timeout_seconds: int,
              field_selector: str | None = None, label_selector: str | None = None) -> WatchStream:
        try:
            out = super().watch(res, namespace, resource_version, timeout_seconds, field_selector, label_selector)
        except Exception as exc:
            self.health.failed(res.kind, exc)
            raise
        self.health.ok(res.kind)
        return out


class Hub:
    """Watches, brings the digest up to date when something changed, and wakes the viewers."""

    def __init__(self, client: KubeClient, clock: Clock, *, audit_log: str | None = None, fair_sharing: bool = False,
                 watch_timeout: int = 300) -> None:
        self.clock = clock
        self.health = Health(clock)
        self.store = SharedStore()
        self.audit_log = audit_log
        self.fair_sharing = fair_sharing
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._cond = threading.Condition()
        self._digests = Digests()  # touched by the digest thread only, after this first one
        self._published = Published(0, self._digests.next(Observed({}, reading=KINDS), clock.now()))
        self._audit_mark: tuple[float, int] | None = None
        observing = ObservingClient(client, self.health)
        self.informers = [Informer(observing, RESOURCES[kind], self.store, self._changed, watch_timeout=watch_timeout,
                                   max_backoff=5.0)
                          for kind in KINDS]
        self._thread = threading.Thread(target=self._run, name="dashboard-digest", daemon=True)

    def start(self) -> None:
        for informer in self.informers:
            informer.start()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._dirty.set()
        for informer in self.informers:
            informer.stop()

    @property
    def published(self) -> Published:
        return self._published

    def wait_newer(self, version: int, timeout: float) -> Published:
        """The digest once it is newer than `version`, or the current one after `timeout` seconds."""
        with self._cond:
            self._cond.wait_for(lambda: self._published.version > version, timeout)
            return self._published

    def _changed(self, change: Change) -> None:
        self._dirty.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._dirty.wait(IDLE_RECHECK_SECONDS)
            if self._stop.is_set():
                return
            audit_moved = self._audit_moved()
            synced_more = self._reading() != self._published.digest.observed.reading  # an empty kind lists no change
            if not (self._dirty.is_set() or self.health.changed.is_set() or audit_moved or synced_more):
                continue
            self._dirty.clear()
            self.health.changed.clear()
            try:
                fresh = self._digests.next(self._observe(), self.clock.now())
            except Exception:  # a digest bug must not stop the live view; the last good digest stays
                log.exception("dashboard: could not compute the view")
                continue
            with self._cond:
                self._published = Published(self._published.version + 1, fresh)
                self._cond.notify_all()

    def _observe(self) -> Observed:
        problems, stale_since = self.health.snapshot()
        snapshot = self.store.snapshot(KINDS)
        objects = {kind: tuple(snapshot.get(kind, {}).values()) for kind in KINDS}
        lines, audit_problem = self._audit_lines()
        return Observed(objects, problems, stale_since, lines, audit_problem, self.fair_sharing, self._reading())

    def _reading(self) -> tuple[str, ...]:
        return tuple(i.kind for i in self.informers if not i.synced.is_set())

    def _audit_moved(self) -> bool:
        if not self.audit_log:
            return False
        try:
            st = os.stat(self.audit_log)
            mark: tuple[float, int] | None = (st.st_mtime, st.st_size)
        except OSError:
            mark = None
        moved = mark != self._audit_mark
        self._audit_mark = mark
        return moved

    def _audit_lines(self) -> tuple[tuple[str, ...] | None, str]:
        if not self.audit_log:
            return None, "no audit log given (batchgate dashboard --audit-log FILE)"
        try:
            with open(self.audit_log, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(0, size - AUDIT_TAIL_BYTES))
                data = fh.read()
        except OSError as exc:
            return None, f"cannot read the audit log {self.audit_log}: {exc.strerror}"
        text = data.decode("utf-8", errors="replace").split("\n")
        if size > AUDIT_TAIL_BYTES:
            text = text[1:]  # the first line read is cut
        return tuple(text), ""


def hub_from_kubeconfig(kubeconfig: str | None, context: str | None, clock: Clock,
                        **options: Any) -> Hub:
    """Connect as `batchgate check` does (kubeconfig, else in-cluster); raises ClusterReadError."""
    from controller.adapters.cluster_reader import connect

    configuration = connect(kubeconfig, context).api_client.configuration
    configuration.connection_pool_maxsize = 2 * len(KINDS) + 4  # one connection per open watch, and the lists
    return Hub(KubeClient(k8s_client.ApiClient(configuration)), clock, **options)
