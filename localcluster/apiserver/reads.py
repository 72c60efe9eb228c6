"""GET of one object and LIST (JSON or Table), with selectors and limit/continue paging."""

from __future__ import annotations

import base64
import json
from typing import Any

from aiohttp import web

from localcluster.apiserver import scale, tables, views
from localcluster.apiserver.codec import parse_bool, parse_int, wants_table
from localcluster.errors import bad_request, expired, not_found
from localcluster.apiserver.responses import Context, json_response, raw_response
from localcluster.resources import ResourceType
from localcluster.apiserver.server_state import ServerState
from localcluster.apiserver.selectors import Predicate, both, parse_field_selector, parse_label_selector
from localcluster.store import Entry


def is_watch(ctx: Context) -> bool:
    return parse_bool(ctx.query.get("watch"))


def view_bytes(rt: ResourceType, entry: Entry) -> bytes:
    """The stored object as this resource version shows it, serialised."""
    if views.is_plain(rt):
        return entry.raw
    return json.dumps(views.from_storage(rt, entry.copy()), separators=(",", ":")).encode()


def view_obj(rt: ResourceType, entry: Entry) -> dict[str, Any]:
    """The object as this version shows it, without managedFields (tables, scale, selectors)."""
    return views.from_storage(rt, entry.obj) if not views.is_plain(rt) else entry.obj


def get_object(server: ServerState, ctx: Context) -> web.Response:
    t = ctx.target
    if t.subresource == "binding":
        raise bad_request("the server does not allow this method on the requested resource")
    entry = server.store.get(views.storage_key(t.rt), t.namespace or "", t.name)
    if entry is None:
        raise not_found(t.rt.group, t.rt.plural, t.name)
    if t.subresource == "scale":
        return json_response(scale.to_scale(t.rt, view_obj(t.rt, entry)))
    if wants_table(ctx.accept):
        return json_response(tables.table(t.rt, [view_obj(t.rt, entry)], server.clock.now(), str(entry.rv),
                                          ctx.query.get("includeObject", "Metadata")), "application/json")
    return raw_response(view_bytes(t.rt, entry))


def selector(ctx: Context) -> Predicate | None:
    rt = ctx.target.rt
    return both(parse_label_selector(ctx.query.get("labelSelector")),
                parse_field_selector(ctx.query.get("fieldSelector"), rt.group, rt.plural))


def _continue_token(rv: int, after: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps({"rv": rv, "start": list(after)}).encode()).decode()


def _parse_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        value = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(value["rv"]), (str(value["start"][0]), str(value["start"][1]))
    except (ValueError, KeyError, TypeError, IndexError):
        raise bad_request("continue key is not valid: illegal base64 data at input byte 0") from None


def _key(entry: Entry) -> tuple[str, str]:
    meta = entry.obj["metadata"]
    return (meta.get("namespace", ""), meta["name"])


def matching_entries(server: ServerState, ctx: Context, after: tuple[str, str] | None = None,
                     limit: int = 0) -> tuple[list[Entry], int | None]:
    """Objects in key order that the selectors match, after the `continue` key if one is given.

    With a limit, at most limit+1 are returned (the extra one says there is more), and the count
    of what remains after the page when no selector makes it unknowable without a full scan.
    """
    t = ctx.target
    key = views.storage_key(t.rt)
    keys = server.store.keys(key, t.namespace, after)
    match = selector(ctx)
    if match is None:
        if limit > 0 and len(keys) > limit:
            return server.store.entries(key, keys[:limit + 1]), len(keys) - limit
        return server.store.entries(key, keys), None
    plain = views.is_plain(t.rt)
    found = []
    for entry in server.store.entries(key, keys):
        if match(entry.obj if plain else views.from_storage(t.rt, entry.obj)):
            found.append(entry)
            if limit > 0 and len(found) > limit:
                break
    return found, None


def list_objects(server: ServerState, ctx: Context) -> web.Response:
    t = ctx.target
    rt = t.rt
    rv_param = ctx.query.get("resourceVersion", "")
    if rv_param not in ("", "0"):
        try:
            int(rv_param)
        except ValueError:
            raise bad_request(f'resourceVersion: Invalid value: "{rv_param}": strconv.ParseUint: parsing '
                              f'"{rv_param}": invalid syntax') from None
    limit = parse_int(ctx.query.get("limit"), "limit") or 0
    token = ctx.query.get("continue", "")
    list_rv = server.store.rv
    after: tuple[str, str] | None = None
    if token:
        list_rv, after = _parse_continue(token)
        if list_rv < server.store.rv - 100_000:
            raise expired("The provided continue parameter is too old to display a consistent list result. "
                          "You can start a new list without the continue parameter.")
    entries, remaining = matching_entries(server, ctx, after, limit)
    meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
    if limit > 0 and len(entries) > limit:
        entries = entries[:limit]
        meta["continue"] = _continue_token(list_rv, _key(entries[-1]))
        if remaining is not None:
            meta["remainingItemCount"] = remaining
    if wants_table(ctx.accept):
        objects = [view_obj(rt, e) for e in entries]
        doc = tables.table(rt, objects, server.clock.now(), str(list_rv), ctx.query.get("includeObject", "Metadata"))
        doc["metadata"].update({k: v for k, v in meta.items() if k != "resourceVersion"})
        return json_response(doc)
    head = json.dumps({"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta},
                      separators=(",", ":")).encode()
    body = head[:-1] + b',"items":[' + b",".join(view_bytes(rt, e) for e in entries) + b"]}"
    return raw_response(body)
