"""List + watch one collection: the one loop behind every process that follows API objects.

The controller's informers, the gateway's policy reloader and the certificate keeper all run it.
It lists (in pages), then watches from the list's resourceVersion with bookmarks; a watch that
ends or breaks is resumed from the last version seen (bookmarks included); when the server says
that version is too old (410, as an HTTP status or as an ERROR event) it lists again; other
errors back off exponentially, and `stop()` ends it promptly by closing the stream.

`relist_every` bounds how long a watch that went silent or lost an event can go unnoticed: each
watch asks the server to end it by the time a relist is due (and the client gives up ten seconds
after that), then the loop lists again and hands the list to `on_list` like any other, whose
owner diffs it against what it has, so a change no event delivered is seen late but not lost.

Why our own and not `kubernetes.informer.SharedInformer` (kubernetes 37): its relist reads
`resp.items` as an attribute, so it cannot list custom resources (CustomObjectsApi returns
dicts); its `stop()` waits for the next event on a quiet watch; it has no "synced" signal for
readiness; and it reads `time` directly instead of an injected Clock.
"""

from __future__ import annotations

import logging
import math
import threading
from typing import Any, Callable, Literal

from batchgate.api.objects import metadata
from batchgate.clock import Clock
from kubeapi.client import ApiError, KubeClient, Resource, WatchStream

log = logging.getLogger(__name__)

ListReason = Literal["start", "expired", "periodic", "unserved"]
"""Why `on_list` is called: the first list, after a 410, a due relist, or the kind is not served
(a 404 on the list: the CRD is not installed; the list is then empty)."""
OnList = Callable[[list[dict[str, Any]], ListReason], None]
OnEvent = Callable[[str, dict[str, Any]], None]

WATCH_SECONDS = 300
"""Each watch asks the server to end it after this long; it is then resumed from its last version."""
MIN_BACKOFF, MAX_BACKOFF = 0.2, 30.0
"""Seconds to wait after a failed list or watch, doubling up to the maximum."""
PAGE_SIZE = 500
RELIST_SECONDS = 600.0
"""The processes' `relist_every`: a silent or lossy watch costs at most this long (plus ten seconds)."""


class ListWatch:
    """Lists then watches `resource` until stopped: `on_list(items, why)` with every list (items
    carry kind and apiVersion), `on_event(type, obj)` with every ADDED, MODIFIED or DELETED."""

    def __init__(self, client: KubeClient, resource: Resource, on_list: OnList, on_event: OnEvent, *, clock: Clock,
                 name: str | None = None, namespace: str | None = None, field_selector: str | None = None,
                 label_selector: str | None = None, watch_timeout: int = WATCH_SECONDS,
                 relist_every: float | None = None, min_backoff: float = MIN_BACKOFF,
                 max_backoff: float = MAX_BACKOFF, page_size: int = PAGE_SIZE, watch_only: bool = False) -> None:
        self.client, self.resource, self.clock = client, resource, clock
        self.on_list, self.on_event = on_list, on_event
        self.name = name or resource.kind
        self.namespace, self.field_selector, self.label_selector = namespace, field_selector, label_selector
        self.watch_timeout, self.relist_every, self.page_size = watch_timeout, relist_every, page_size
        self.min_backoff, self.max_backoff = min_backoff, max_backoff
        self.watch_only = watch_only
        """For a caller with no right to list: a watch without a resourceVersion stands for the list
        (the server sends the objects there are as ADDED events first); no `on_list`, no relist."""
        self.synced = threading.Event()
        self.served = True  # False while the API server does not serve this kind (CRD not installed)
        self.resource_version: str | None = None
        self.lists = self.watches = self.expired = 0
        self._listed_at = clock.monotonic()
        self._stop = threading.Event()
        self._stream: WatchStream | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name=f"watch-{self.name}", daemon=True)
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
        why: ListReason = "start"
        while not self._stop.is_set():
            try:
                if self.resource_version is None and not self.watch_only:
                    self._list(why)
                elif self.resource_version is not None and self._relist_in() <= 0:
                    self._list("periodic")
                self._watch_once()
                backoff = self.min_backoff
            except ApiError as exc:
                if exc.gone:
                    log.info("%s: resourceVersion %s too old, listing again", self.name, self.resource_version)
                    self.expired += 1
                    self.resource_version, why = None, "expired"
                    continue
                if exc.not_found and self.resource_version is None:
                    self._not_served()
                    backoff = self.max_backoff
                else:
                    log.warning("%s: %s; retrying in %.1fs", self.name, exc, backoff)
                self._stop.wait(backoff)
                backoff = min(self.max_backoff, backoff * 2)
            except Exception as exc:  # connection reset, server gone: retry from the last version
                if self._stop.is_set():
                    break
                log.warning("%s: list or watch failed (%s); retrying in %.1fs", self.name, exc, backoff)
                self._stop.wait(backoff)
                backoff = min(self.max_backoff, backoff * 2)

    def _relist_in(self) -> float:
        """Seconds until a periodic relist is due (infinity without one)."""
        if self.relist_every is None:
            return math.inf
        return self._listed_at + self.relist_every - self.clock.monotonic()

    def _not_served(self) -> None:
        if self.served:
            log.warning("%s: not served by the API server (CRD not installed?); will look again", self.name)
        self.served = False
        self.on_list([], "unserved")
        self.synced.set()

    def _list(self, why: ListReason) -> None:
        items: list[dict[str, Any]] = []
        token = None
        while True:
            page = self.client.list(self.resource, self.namespace, limit=self.page_size,
                                    fieldSelector=self.field_selector, labelSelector=self.label_selector,
                                    **({"continue": token} if token else {}))
            # kube-apiserver leaves kind and apiVersion out of a built-in list's items (a watch
            # event's object has them): set them, as client-go's unstructured lists do
            items.extend({"kind": self.resource.kind, "apiVersion": self.resource.api_version, **item}
                         for item in page.get("items") or [])
            token = metadata(page).get("continue")
            if not token:
                break
        self.lists += 1
        self._listed_at = self.clock.monotonic()
        self.served = True
        self.on_list(items, why)
        self.resource_version = metadata(page).get("resourceVersion") or "0"
        self.synced.set()

    def _watch_once(self) -> None:
        timeout = self.watch_timeout
        if self.relist_every is not None:  # the server ends the watch when the relist falls due
            timeout = max(1, min(timeout, math.ceil(self._relist_in())))
        stream = self.client.watch(self.resource, self.namespace, self.resource_version, timeout,
                                   self.field_selector, self.label_selector)
        self._stream = stream
        self.watches += 1
        self.synced.set()  # (watch_only: the stream opened; otherwise already set by the list)
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

    def _handle(self, event: dict[str, Any]) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            raise ApiError(int(obj.get("code") or 500), str(obj.get("reason") or "Unknown"),
                           str(obj.get("message") or ""), obj)
        version = metadata(obj).get("resourceVersion")
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            self.on_event(kind, obj)
        if version and kind in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK"):
            self.resource_version = version
