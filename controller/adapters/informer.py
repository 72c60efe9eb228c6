"""One kind followed into the shared store: kubeapi's list + watch, its lists and events as changes.

The loop (resume from the last resourceVersion, relist on 410, backoff, periodic relist) is
kubeapi/listwatch.py's; this adds the store. A list replaces the kind's objects and the diff goes
to the handler as ordinary changes; a kind the API server does not serve has no objects.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from batchgate.api.objects import metadata
from batchgate.clock import Clock, SystemClock
from controller.adapters.kube import KubeClient, Resource
from controller.adapters.store import SharedStore
from controller.state.cache import Change
from kubeapi.listwatch import MAX_BACKOFF, MIN_BACKOFF, PAGE_SIZE, WATCH_SECONDS, ListReason, ListWatch

log = logging.getLogger(__name__)

Handler = Callable[[Change], None]
MISSED_SHOWN = 5
"""Keys a log line names when a periodic relist finds changes its watch should have delivered."""


def delivered_by(change: Change, version: str | None) -> bool:
    """Whether a watch that had reached `version` should have told of `change`: the object's
    resourceVersion is not newer. A change made after the watch ended is not one; nor is a
    deletion (its version is not in the list). resourceVersions are etcd revisions on
    kube-apiserver and the stand-in; where either is not a number, nothing is claimed."""
    new = metadata(change.new or {}).get("resourceVersion")
    if change.new is None or not str(new).isdigit() or not str(version).isdigit():
        return False
    return int(str(new)) <= int(str(version))


class Informer(ListWatch):
    def __init__(self, client: KubeClient, resource: Resource, store: SharedStore, handler: Handler, *,
                 namespace: str | None = None, watch_timeout: int = WATCH_SECONDS,
                 min_backoff: float = MIN_BACKOFF, max_backoff: float = MAX_BACKOFF, page_size: int = PAGE_SIZE,
                 on_relist: Callable[[str], None] = lambda kind: None, field_selector: str | None = None,
                 label_selector: str | None = None, cache_kind: str | None = None,
                 clock: Clock | None = None, relist_every: float | None = None,
                 on_missed: Callable[[str, int], None] = lambda kind, changes: None) -> None:
        # A second informer on a kind (another selector) keeps its objects apart, or each relist
        # would drop the other's from the store.
        self.cache_kind = cache_kind or resource.kind
        super().__init__(client, resource, self._listed, self._changed, clock=clock or SystemClock(),
                         name=self.cache_kind, namespace=namespace, field_selector=field_selector,
                         label_selector=label_selector, watch_timeout=watch_timeout, relist_every=relist_every,
                         min_backoff=min_backoff, max_backoff=max_backoff, page_size=page_size)
        self.store, self.handler = store, handler
        self.on_relist, self.on_missed = on_relist, on_missed

    @property
    def kind(self) -> str:
        return self.cache_kind

    def _listed(self, items: list[dict[str, Any]], why: ListReason) -> None:
        if why != "unserved":
            self.on_relist(self.kind)
        watched = self.resource_version  # how far the watch had come; the list's version is set after
        changes = self.store.replace(self.kind, items)
        missed = [c for c in changes if why == "periodic" and delivered_by(c, watched)]
        if missed:
            keys = ", ".join(f"{c.type} {c.key.namespace}/{c.key.name}" for c in missed[:MISSED_SHOWN])
            log.warning("%s: a periodic relist found %d changes its watch should have delivered (it had reached "
                        "resourceVersion %s): %s%s", self.kind, len(missed), watched, keys,
                        " ..." if len(missed) > MISSED_SHOWN else "")
            self.on_missed(self.kind, len(missed))
        for change in changes:
            self._emit(change)

    def _changed(self, event_type: str, obj: dict[str, Any]) -> None:
        change = self.store.apply(self.kind, event_type, obj)
        if change is not None:
            self._emit(change)

    def _emit(self, change: Change) -> None:
        """A failing handler is logged; it must not cost the watch (the store already has the change)."""
        try:
            self.handler(change)
        except Exception:
            log.exception("%s: handler failed on %s %s", self.kind, change.type, change.key)
