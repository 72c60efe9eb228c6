"""The loop every simulated controller shares: informers feed a work queue, workers sync keys,
a sync may ask to be called again after some simulated time."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from typing import Any, Mapping

import aiohttp

from localcluster.runner import ControllerContext
from localcluster.runtime.client import Api, ApiError
from localcluster.runtime.informers import Informer, SharedInformers
from localcluster.runtime.workqueue import WorkQueue

log = logging.getLogger(__name__)
RETRY_WALL_SECONDS = 0.5


def merge_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON merge patch turning `old` into `new` at the top level (removed keys become null)."""
    patch: dict[str, Any] = {k: v for k, v in new.items() if old.get(k) != v}
    patch.update({k: None for k in old if k not in new})
    return patch


def object_key(obj: Mapping[str, Any]) -> str:
    """The work-queue key of a namespaced object: `namespace/name`."""
    return f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"


def owner_key(obj: Mapping[str, Any], kind: str) -> str | None:
    """The work-queue key of the object's controlling owner of `kind`, or None."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == kind:
            return f"{obj['metadata'].get('namespace', '')}/{ref['name']}"
    return None


class Controller:
    """Subclasses set `component`, build informers in `__init__` and implement `sync(key)`."""

    component = "controller"
    workers = 4

    def __init__(self, ctx: ControllerContext, api: Api, shared: SharedInformers) -> None:
        self.ctx = ctx
        self.api = api
        self.shared = shared
        self.queue = WorkQueue()
        self.informers: list[Informer] = []

    def now(self) -> dt.datetime:
        return self.ctx.clock.now()

    def wall_seconds(self, simulated: dt.timedelta) -> float:
        """Real seconds to wait for `simulated` time to pass on the cluster's sped-up clock."""
        return max(simulated.total_seconds(), 0.0) / self.ctx.speed

    def enqueue(self, kind: str, obj: dict[str, Any]) -> None:
        """The informer handler of the kind the controller syncs: sync that object."""
        self.queue.add(object_key(obj))

    def informer(self, *args: Any, **kwargs: Any) -> Informer:
        made = self.shared.get(*args, **kwargs)
        self.informers.append(made)
        return made

    async def sync(self, key: str) -> dt.timedelta | None:
        raise NotImplementedError

    async def started(self) -> None:
        """Runs once every informer has listed; for work that needs the caches."""

    async def run(self) -> None:
        """Work once the (shared, separately started) informers have listed."""
        try:
            await asyncio.gather(*(i.synced.wait() for i in self.informers))
            await self.started()
            await asyncio.gather(*(self._work() for _ in range(self.workers)))
        finally:
            self.queue.close()

    async def _work(self) -> None:
        while True:
            key = await self.queue.get()
            try:
                again = await self.sync(key)
            except asyncio.CancelledError:
                raise
            except (ApiError, aiohttp.ClientError, asyncio.TimeoutError) as err:  # a write failed: try again
                log.info("%s: sync %s: %s", self.component, key, err or type(err).__name__)
                self.queue.add_after(key, RETRY_WALL_SECONDS)
            except Exception:  # a bug in one object's sync must not stop the component
                log.exception("%s: sync %s failed", self.component, key)
                self.queue.add_after(key, RETRY_WALL_SECONDS * 4)
            else:
                if again is not None:
                    self.queue.add_after(key, self.wall_seconds(again))
            finally:
                self.queue.done(key)
