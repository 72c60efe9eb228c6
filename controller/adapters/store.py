"""The shared cache behind a lock: informer threads write, reconciler threads read."""

from __future__ import annotations

import builtins
import threading
from typing import Any, Iterable, Mapping

from controller.state.cache import Change, ObjectCache, ObjectKey, Obj


class SharedStore:
    def __init__(self) -> None:
        self._cache = ObjectCache()
        self._lock = threading.RLock()

    def apply(self, kind: str, event_type: str, obj: Obj) -> Change | None:
        with self._lock:
            return self._cache.apply(kind, event_type, obj)

    def replace(self, kind: str, items: Iterable[Obj]) -> list[Change]:
        with self._lock:
            return self._cache.replace(kind, items)

    def assume(self, kind: str, obj: Obj) -> None:
        with self._lock:
            self._cache.assume(kind, obj)

    def forget(self, key: ObjectKey) -> None:
        with self._lock:
            self._cache.forget(key)

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        with self._lock:
            return self._cache.get(kind, namespace, name)

    def list(self, kind: str, namespace: str | None = None) -> list[Obj]:
        with self._lock:
            return self._cache.list(kind, namespace)

    def labelled(self, kind: str, namespace: str, label: str, value: str) -> builtins.list[Obj]:
        with self._lock:
            return self._cache.labelled(kind, namespace, label, value)

    def snapshot(self, kinds: Iterable[str] | None = None) -> Mapping[str, Mapping[ObjectKey, Any]]:
        with self._lock:
            return self._cache.snapshot(kinds)
