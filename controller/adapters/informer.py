"""List + watch one kind into the shared store, resuming from the last resourceVersion.

Why our own and not `kubernetes.informer.SharedInformer` (kubernetes 37): its relist reads
`resp.items` as an attribute, so it cannot list custom resources (CustomObjectsApi returns
dicts) — and every kind we queue is a custom resource but Job; its `stop()` waits for the next
event on a quiet watch; it has no "synced" signal for readiness; and it reads `time` directly
instead of an injected Clock. This one keeps the last resourceVersion (bookmarks included),
resumes the watch from it after a stream ends or breaks, relists only when the server says the
version is too old (410, as an HTTP status or as an ERROR event), feeds the diff of a relist to
the handlers as ordinary changes, and stops promptly by closing the stream.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

from batchgate.api.objects import metadata
from controller.adapters.kube import ApiError, KubeClient, Resource, WatchStream
from controller.adapters.store import SharedStore
from controller.state.cache import Change

log = logging.getLogger(__name__)

Handler = Callable[[Change], None]


class Informer:
    def __init__(self, client: KubeClient, resource: Resource, store: SharedStore, handler: Handler, *,
                 namespace: str | None = None, watch_timeout: int = 300,
                 min_backoff: float = 0.2, max_backoff: float = 30.0, page_size: int = 500,
                 on_relist: Callable[[str], None] = lambda kind: None, field_selector: str | None = None,
                 label_selector: str | None = None, cache_kind: str | None = None) -> None:
        self.client, self.resource, self.store, self.handler = client, resource, store, handler
        self.namespace = namespace
        self.watch_timeout, self.page_size = watch_timeout, page_size
        self.min_backoff, self.max_backoff = min_backoff, max_backoff
        self.on_relist = on_relist
        self.field_selector, self.label_selector = field_selector, label_selector
        # A second informer on a kind (another selector) keeps its objects apart, or each relist
        # would drop the other's from the store.
        self.cache_kind = cache_kind or resource.kind
        self.synced = threading.Event()
        self.served = True  # False while the API server does not serve this kind (CRD not installed)
        self.resource_version: str | None = None
        self.lists = 0
        self.watches = 0
        self._stop = threading.Event()
        self._stream: WatchStream | None = None
        self._thread: threading.Thread | None = None

    @property
    def kind(self) -> str:
        return self.cache_kind

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name=f"informer-{self.kind}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        stream = self._stream
        if stream is not None:
            stream.close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def run(self) -> None:
        backoff = self.min_backoff
        while not self._stop.is_set():
            try:
                if self.resource_version is None:
                    self._relist()
                self._watch_once()
                backoff = self.min_backoff
            except ApiError as exc:
                if exc.gone:
                    log.info("%s: resourceVersion %s too old, relisting", self.kind, self.resource_version)
                    self.resource_version = None
                    continue
                if exc.not_found and self.resource_version is None:
                    self._not_served()
                    backoff = self.max_backoff
                else:
                    log.warning("%s: %s; retrying in %.1fs", self.kind, exc, backoff)
                self._stop.wait(backoff)
                backoff = min(self.max_backoff, backoff * 2)
            except Exception as exc:  # connection reset, server gone: retry from the last version
                if self._stop.is_set():
                    break
                log.warning("%s: watch failed (%s); retrying in %.1fs", self.kind, exc, backoff)
                self._stop.wait(backoff)
                backoff = min(self.max_backoff, backoff * 2)

    def _not_served(self) -> None:
        if self.served:
            log.warning("%s: not served by the API server (CRD not installed?); will look again", self.kind)
        self.served = False
        for change in self.store.replace(self.kind, []):
            self._emit(change)
        self.synced.set()

    def _relist(self) -> None:
        items: list = []
        token = None
        while True:
            page = self.client.list(self.resource, self.namespace, limit=self.page_size, fieldSelector=self.field_selector,
                                    labelSelector=self.label_selector,
                                    **({"continue": token} if token else {}))
            # kube-apiserver leaves kind and apiVersion out of a built-in list's items (a watch
            # event's object has them): set them, as client-go's unstructured lists do
            items.extend({"kind": self.resource.kind, "apiVersion": self.resource.api_version, **item}
                         for item in page.get("items") or [])
            token = metadata(page).get("continue")
            if not token:
                break
        self.lists += 1
        self.on_relist(self.kind)
        self.served = True
        version = metadata(page).get("resourceVersion") or "0"
        for change in self.store.replace(self.kind, items):
            self._emit(change)
        self.resource_version = version
        self.synced.set()

    def _watch_once(self) -> None:
        assert self.resource_version is not None
        stream = self.client.watch(self.resource, self.namespace, self.resource_version, self.watch_timeout,
                                   self.field_selector, self.label_selector)
        self._stream = stream
        self.watches += 1
        try:
            if self._stop.is_set():
                return
            for event in stream:
                if self._stop.is_set():
                    return
                self._handle(event)
        finally:
            self._stream = None
            stream.close()

    def _emit(self, change: Change) -> None:
        """A failing handler is logged; it must not cost the watch (the store already has the change)."""
        try:
            self.handler(change)
        except Exception:
            log.exception("%s: handler failed on %s %s", self.kind, change.type, change.key)

    def _handle(self, event: dict) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            raise ApiError(int(obj.get("code") or 500), str(obj.get("reason") or "Unknown"), str(obj.get("message") or ""), obj)
        version = metadata(obj).get("resourceVersion")
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            change = self.store.apply(self.kind, kind, obj)
            if version:
                self.resource_version = version
            if change is not None:
                self._emit(change)
        elif kind == "BOOKMARK" and version:
            self.resource_version = version
