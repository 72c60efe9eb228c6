"""List + watch into a local cache, as client-go informers do, with a callback per change.

On a dropped stream it re-watches from the last resourceVersion; on `410 Expired` it relists and
reports the differences. Objects written by this process are folded in at once (`remember`),
so a controller does not act twice on its own write before the watch event arrives.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

import aiohttp

from localcluster.runtime.client import Api, ApiError, Resource

Obj = dict[str, Any]
Handler = Callable[[str, Obj], None]  # (event type, object)
log = logging.getLogger(__name__)
TOMBSTONES = 10_000


def key_of(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _rv(obj: Obj) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


class Informer:
    def __init__(self, api: Api, resource: Resource, *, namespace: str | None = None,
                 label_selector: str | None = None) -> None:
        self.api = api
        self.resource = resource
        self.handlers: list[Handler] = []
        self.path = resource.path(namespace)
        self.params = {"labelSelector": label_selector} if label_selector else {}
        self.cache: dict[str, Obj] = {}
        self.gone: dict[str, int] = {}  # key -> resourceVersion of its deletion: stale writes stay out
        self.synced = asyncio.Event()
        self._rv = ""

    def handler(self, kind: str, obj: Obj) -> None:
        for handle in self.handlers:
            handle(kind, obj)

    def get(self, namespace: str, name: str) -> Obj | None:
        return self.cache.get(f"{namespace}/{name}")

    def values(self) -> list[Obj]:
        return list(self.cache.values())

    def remember(self, obj: Obj | None) -> None:
        """Fold in an object this process just wrote (if newer than what the cache holds)."""
        if not obj or not isinstance(obj, dict) or "metadata" not in obj:
            return
        key = key_of(obj)
        old = self.cache.get(key)
        if _rv(obj) <= self.gone.get(key, -1):
            return
        if old is None or _rv(obj) >= _rv(old):
            self.cache[key] = obj

    def forget(self, namespace: str, name: str) -> None:
        key = f"{namespace}/{name}"
        old = self.cache.pop(key, None)
        if old is not None:
            self._bury(key, old)

    async def _list(self) -> None:
        body = await self.api.get(self.path, self.params)
        fresh = {key_of(o): o for o in body.get("items") or []}
        for key, old in list(self.cache.items()):
            if key not in fresh:
                del self.cache[key]
                self._bury(key, old)
                self.handler("DELETED", old)
        for key, obj in fresh.items():
            kind = "MODIFIED" if key in self.cache else "ADDED"
            self.cache[key] = obj
            self.handler(kind, obj)
        self._rv = (body.get("metadata") or {}).get("resourceVersion") or ""
        self.synced.set()

    async def run(self) -> None:
        while True:
            try:
                if not self.synced.is_set() or not self._rv:
                    await self._list()
                await self._watch()
            except asyncio.CancelledError:
                raise
            except _Expired:
                self.synced.clear()
            except (ApiError, aiohttp.ClientError, asyncio.TimeoutError, ValueError) as err:
                log.debug("informer %s: %s; retrying", self.path, err)
                await asyncio.sleep(0.2)

    async def _watch(self) -> None:
        async for event in self.api.watch(self.path, self._rv, extra=self.params):
            kind, obj = str(event.get("type") or ""), event.get("object") or {}
            if kind == "ERROR":
                if obj.get("code") == 410:
                    raise _Expired()
                raise ApiError(int(obj.get("code") or 500), obj.get("reason", ""), obj.get("message", ""))
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                self._rv = rv
            if kind == "BOOKMARK":
                continue
            key = key_of(obj)
            if kind == "DELETED":
                self.cache.pop(key, None)
                self._bury(key, obj)
            else:
                self.cache[key] = obj
            self.handler(kind, obj)

    def _bury(self, key: str, obj: Obj) -> None:
        if len(self.gone) >= TOMBSTONES:
            for stale in list(self.gone)[: TOMBSTONES // 2]:
                del self.gone[stale]
        self.gone[key] = max(_rv(obj), self.gone.get(key, 0))


class SharedInformers:
    """One list+watch per resource, shared by every simulated component (client-go's factory):
    a pod event is decoded once, not once per component."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self._made: dict[tuple[Resource, str | None], Informer] = {}

    def get(self, resource: Resource, handler: Handler, *, namespace: str | None = None) -> Informer:
        key = (resource, namespace)
        if key not in self._made:
            self._made[key] = Informer(self.api, resource, namespace=namespace)
        informer = self._made[key]
        informer.handlers.append(handler)
        return informer

    def all(self) -> list[Informer]:
        return list(self._made.values())


class _Expired(Exception):
    """The watch's resourceVersion is too old: relist."""
