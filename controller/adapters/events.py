"""Events, so `kubectl describe` tells the story of a workload.

Written as core v1 Events: that is the list `kubectl describe` reads (involvedObject by uid).
A repeat of the same (object, type, reason, message) bumps `count` and `lastTimestamp` on the
existing Event instead of creating another, as client-go's recorder does; like its correlator,
the recorder remembers only the `REMEMBERED` most recent Events (an LRU), so its memory stays
flat however many objects pass through (a forgotten repeat is a new Event, nothing is lost).
Every Event is written: none is dropped for a full queue, as client-go's broadcaster drops them
(docs/realcluster.md, "Side by side").
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any, Mapping

from batchgate.api.objects import metadata
from batchgate.clock import Clock, format_time
from controller.adapters.kube import RESOURCES, ApiError
from controller.adapters.writer import NotLeader, Writer
from controller.decisions.leader_election import micro_time

log = logging.getLogger(__name__)
EVENTS = RESOURCES["Event"]
COMPONENT = "batchgate-controller"
MAX_MESSAGE = 1024
REMEMBERED = 4096  # client-go's correlator: maxLruCacheEntries


class EventRecorder:
    def __init__(self, writer: Writer, clock: Clock, instance: str) -> None:
        self.writer, self.clock, self.instance = writer, clock, instance
        self._seen: OrderedDict[tuple[str, str, str, str], tuple[str, str, int]] = OrderedDict()
        self._lock = threading.Lock()

    def normal(self, obj: Mapping[str, Any], reason: str, message: str) -> None:
        self.record(obj, "Normal", reason, message)

    def warning(self, obj: Mapping[str, Any], reason: str, message: str) -> None:
        self.record(obj, "Warning", reason, message)

    def record(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        """Best effort: an Event that cannot be written is logged, never fails the reconcile."""
        meta = metadata(obj)
        namespace = meta.get("namespace") or "default"
        message = message[:MAX_MESSAGE]
        key = (str(meta.get("uid")), type_, reason, message)
        now = self.clock.now()
        stamp = format_time(now)
        try:
            with self._lock:
                seen = self._seen.get(key)
            if seen is not None:
                name, ns, count = seen
                try:
                    self.writer.patch(EVENTS, name, ns, {"count": count + 1, "lastTimestamp": stamp})
                    self._remember(key, (name, ns, count + 1))
                    return
                except ApiError as exc:
                    if not exc.not_found:
                        raise
            name = f"{meta.get('name')}.{int(now.timestamp() * 1e9):x}"
            self.writer.create(EVENTS, {
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": name, "namespace": namespace},
                "involvedObject": {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"),
                                   "name": meta.get("name"), "namespace": meta.get("namespace"),
                                   "uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")},
                "type": type_, "reason": reason, "message": message,
                "source": {"component": COMPONENT},
                "reportingComponent": COMPONENT, "reportingInstance": self.instance,
                "firstTimestamp": stamp, "lastTimestamp": stamp,
                "eventTime": micro_time(now), "action": reason, "count": 1,
            })
            self._remember(key, (name, namespace, 1))
        except NotLeader:
            log.debug("not leading: event %s on %s dropped", reason, meta.get("name"))
        except Exception as exc:
            log.warning("could not record event %s on %s: %s", reason, meta.get("name"), exc)

    def _remember(self, key: tuple[str, str, str, str], written: tuple[str, str, int]) -> None:
        with self._lock:
            self._seen[key] = written
            self._seen.move_to_end(key)
            while len(self._seen) > REMEMBERED:
                self._seen.popitem(last=False)
