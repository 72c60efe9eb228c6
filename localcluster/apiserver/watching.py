"""Watch streams: chunked JSON events, each newline-terminated, fed by a per-watch queue.

resourceVersion "" or "0" starts with synthetic ADDED events for what exists; an exact version
replays history after it, or, if that history is gone, sends one ERROR event (a Status with
code 410, reason Expired) on a 200 stream, as kube-apiserver's watch cache does; a version the
server has not reached (a client of an earlier cluster) gets the cache's 504 "Too large
resource version" ERROR event instead. Selectors turn
objects that start or stop matching into ADDED or DELETED. A watcher that cannot keep up is
dropped (its client re-watches) so writers never wait for readers.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from aiohttp import web

from localcluster.apiserver import tables, views
from localcluster.apiserver.codec import parse_bool, parse_int, wants_table
from localcluster.errors import ApiError, bad_request
from localcluster.apiserver.reads import selector, view_bytes, view_obj
from localcluster.apiserver.responses import Context
from localcluster.apiserver.server_state import ServerState
from localcluster.store import Entry, Event, TooOld, Watcher, dumps


def _transitions(ctx: Context) -> Any:
    """An Event -> [(type, entry)] filter for this watch's namespace and selectors."""
    namespace = ctx.target.namespace
    rt = ctx.target.rt
    match = selector(ctx)
    plain = views.is_plain(rt)

    def visible(obj: dict[str, Any] | None) -> bool:
        if obj is None:
            return False
        if namespace is not None and obj["metadata"].get("namespace", "") != namespace:
            return False
        if match is None:
            return True
        return match(obj if plain else views.from_storage(rt, obj))

    def accepts(event: Event) -> list[tuple[str, Entry]]:
        now_visible = visible(event.entry.obj)
        if event.type == "ADDED":
            return [("ADDED", event.entry)] if now_visible else []
        was_visible = visible(event.old)
        if event.type == "DELETED":
            return [("DELETED", event.entry)] if was_visible else []
        if now_visible:
            return [("MODIFIED" if was_visible else "ADDED", event.entry)]
        return [("DELETED", event.entry)] if was_visible else []

    return accepts


def _parse_rv(text: str) -> int | None:
    if text in ("", "0"):
        return None
    try:
        value = int(text)
    except ValueError:
        raise bad_request(f'resourceVersion: Invalid value: "{text}": strconv.ParseUint: parsing "{text}": '
                          f'invalid syntax') from None
    if value < 0:
        raise bad_request(f'resourceVersion: Invalid value: "{text}": must be non-negative')
    return value


async def watch(server: ServerState, ctx: Context) -> web.StreamResponse:
    rt = ctx.target.rt
    store = server.store
    key = views.storage_key(rt)
    since = _parse_rv(ctx.query.get("resourceVersion", ""))
    timeout = parse_int(ctx.query.get("timeoutSeconds"), "timeoutSeconds")
    bookmarks = parse_bool(ctx.query.get("allowWatchBookmarks"))
    as_table = wants_table(ctx.accept)
    include = ctx.query.get("includeObject", "Metadata")
    accepts = _transitions(ctx)
    watcher = Watcher(accepts)
    initial: list[tuple[str, Entry]] = []
    error: ApiError | None = None
    # No await between reading the state and registering: no event can fall in between.
    start = store.rv if since is None else since  # a BOOKMARK must carry a later version than this
    if since is None:
        for entry in store.list(key, ctx.target.namespace):
            initial += accepts(Event("ADDED", entry.rv, entry, None))
    elif since > store.rv:
        error = ApiError(504, "Timeout", f"Too large resource version: {since}, current: {store.rv}",
                         {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                          "retryAfterSeconds": 1})
    else:
        try:
            for event in store.since(key, since):
                initial += accepts(event)
        except TooOld as exc:
            error = ApiError(410, "Expired", str(exc))
    if error is None:
        store.watch(key, watcher)
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json",
                                                       "Cache-Control": "no-cache, private"})
    response.enable_chunked_encoding()
    await response.prepare(ctx.request)
    encoder = _Encoder(server, rt, as_table, include)
    try:
        if error is not None:
            await response.write(b'{"type":"ERROR","object":' + dumps(error.status()) + b"}\n")
            return response
        if initial:
            await response.write(b"".join(encoder.event(kind, entry) for kind, entry in initial))
        loop = asyncio.get_running_loop()
        low, high = server.watch_timeout_range
        # timeoutSeconds=0 is no timeout at all: kube-apiserver's default applies, as when absent
        deadline = loop.time() + (timeout if timeout else random.uniform(low, high))
        next_bookmark = loop.time() + server.bookmark_interval
        while not watcher.closed:
            now = loop.time()
            if now >= deadline:
                break
            wait = min(deadline, next_bookmark) - now if bookmarks else deadline - now
            try:
                await asyncio.wait_for(watcher.ready.wait(), timeout=max(wait, 0.0))
            except asyncio.TimeoutError:
                pass
            watcher.ready.clear()
            if watcher.events:
                batch = list(watcher.events)
                watcher.events.clear()
                await response.write(b"".join(encoder.event(kind, entry) for kind, entry in batch))
            if bookmarks and loop.time() >= next_bookmark:
                if store.rv > start:  # the watch cache sends none that would not move the client on
                    await response.write(encoder.bookmark(store.rv))
                next_bookmark = loop.time() + server.bookmark_interval
    except (ConnectionResetError, RuntimeError):
        pass  # the client went away; a cancelled handler (server stopping) propagates after the finally
    finally:
        store.unwatch(key, watcher)
    try:
        await response.write_eof()
    except (ConnectionResetError, RuntimeError):
        pass
    return response


class _Encoder:
    """Turns queued entries into event lines: raw JSON, or single-row Tables for kubectl get -w."""

    def __init__(self, server: ServerState, rt: Any, as_table: bool, include: str) -> None:
        self.server, self.rt, self.as_table, self.include = server, rt, as_table, include
        self.headers_sent = False

    def event(self, kind: str, entry: Entry) -> bytes:
        if self.as_table:
            doc = tables.table(self.rt, [view_obj(self.rt, entry)], self.server.clock.now(), str(entry.rv),
                               self.include, headers=not self.headers_sent)
            self.headers_sent = True
            body = dumps(doc)
        else:
            body = view_bytes(self.rt, entry)
        return b'{"type":"' + kind.encode() + b'","object":' + body + b"}\n"

    def bookmark(self, rv: int) -> bytes:
        obj = {"kind": self.rt.kind, "apiVersion": self.rt.api_version, "metadata": {"resourceVersion": str(rv)}}
        if self.as_table:
            obj = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": str(rv)},
                   "rows": []}
        return b'{"type":"BOOKMARK","object":' + dumps(obj) + b"}\n"
