"""Create, update, patch and delete: decode the request, run it through the pipeline, answer.

Creates and updates of every kind (POST, PUT, PATCH, server-side apply, scale) go through the
one admit-and-store pipeline (pipeline.py); this module only turns requests into its inputs and
its results into responses. Deletes plan with the strategy (lifecycle) and ask the same webhooks.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from localcluster import lifecycle
from localcluster.apiserver import codec, patch_kinds, pipeline, scale, special, views
from localcluster.errors import ApiError, forbidden, not_found, unsupported_media_type
from localcluster.apiserver.pipeline import Written, dry_run
from localcluster.apiserver.reads import matching_entries, view_bytes
from localcluster.apiserver.responses import Context, json_response, raw_response, status_success
from localcluster.apiserver.server_state import ServerState
from localcluster.store import Entry

UNDELETABLE_NAMESPACES = ("default", "kube-system", "kube-public")


def _respond(ctx: Context, written: Written) -> web.Response:
    status = 201 if written.created else 200
    if ctx.target.subresource == "scale":
        return json_response(scale.to_scale(ctx.target.rt, written.view()), status=status, warnings=written.warnings)
    return raw_response(written.body(), status=status, warnings=written.warnings)


def _body(ctx: Context) -> Any:
    return codec.decode_object(ctx.request.headers.get("Content-Type"), ctx.body)


async def create(server: ServerState, ctx: Context) -> web.Response:
    t = ctx.target
    if t.rt.group_resource in special.VIRTUAL_CREATES or t.subresource == "binding":
        return await special.create(server, ctx)
    return _respond(ctx, await pipeline.create(server, ctx, pipeline.decode(ctx, _body(ctx))))


def _current(server: ServerState, ctx: Context) -> Entry:
    t = ctx.target
    entry = server.store.get(views.storage_key(t.rt), t.namespace or "", t.name)
    if entry is None:
        raise not_found(t.rt.group, t.rt.plural, t.name)
    return entry


async def update(server: ServerState, ctx: Context) -> web.Response:
    t = ctx.target
    if t.subresource == "scale":
        current = _current(server, ctx)
        scaled = scale.apply_scale(t.rt, views.from_storage(t.rt, current.copy()), _body(ctx))
        return _respond(ctx, await pipeline.update(server, ctx, current, pipeline.decode(ctx, scaled)))
    decoded = pipeline.decode(ctx, _body(ctx))
    current = _current(server, ctx)
    if t.subresource == "finalize":
        return await special.finalize_namespace(server, ctx, current, decoded.obj)
    if t.rt.group_resource == ("", "pods") and not t.subresource:
        spec = decoded.obj.get("spec")
        old_node = (current.obj.get("spec") or {}).get("nodeName")
        if isinstance(spec, dict) and not spec.get("nodeName") and old_node:
            spec["nodeName"] = old_node
    return _respond(ctx, await pipeline.update(server, ctx, current, decoded))


async def patch(server: ServerState, ctx: Context) -> web.Response:
    t = ctx.target
    kind, body = codec.decode_patch(ctx.request.headers.get("Content-Type"), ctx.body, t.rt.builtin)
    applied = kind == codec.APPLY_PATCH
    current = server.store.get(views.storage_key(t.rt), t.namespace or "", t.name)
    if current is None:  # only server-side apply creates; any other patch is a 404 here
        created = pipeline.decode(ctx, patch_kinds.apply_patch(ctx, kind, None, body, server.clock.now()))
        lifecycle.name_from_url(created.obj, t.name)
        return _respond(ctx, await pipeline.create(server, ctx, created, applied=True))
    live = views.from_storage(t.rt, current.copy())
    if t.subresource == "scale":
        if applied:
            raise unsupported_media_type(kind, [codec.JSON_PATCH, codec.MERGE_PATCH, codec.STRATEGIC_PATCH])
        patched_scale = patch_kinds.apply_patch(ctx, kind, scale.to_scale(t.rt, live), body, server.clock.now())
        scaled = scale.apply_scale(t.rt, live, patched_scale)
        return _respond(ctx, await pipeline.update(server, ctx, current, pipeline.decode(ctx, scaled)))
    decoded = pipeline.decode(ctx, patch_kinds.apply_patch(ctx, kind, live, body, server.clock.now()))
    if not decoded.obj["metadata"].get("resourceVersion"):
        decoded.obj["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
    return _respond(ctx, await pipeline.update(server, ctx, current, decoded, applied=applied))


def _delete_options(ctx: Context) -> dict[str, Any]:
    """The request's DeleteOptions: the body's fields, and the query's for those the body leaves out."""
    options = codec.decode_options(ctx.body, ctx.request.headers.get("Content-Type"))
    for key in ("propagationPolicy", "gracePeriodSeconds"):
        if key not in options and ctx.query.get(key) is not None:
            options[key] = ctx.query.get(key)
    if "orphanDependents" not in options and ctx.query.get("orphanDependents") is not None:
        options["orphanDependents"] = codec.parse_bool(ctx.query.get("orphanDependents"))
    if "dryRun" not in options and ctx.query.getall("dryRun", []):
        options["dryRun"] = list(ctx.query.getall("dryRun"))
    dry_run(ctx, options)  # an unsupported directive is refused before anything is looked up
    return options


async def delete(server: ServerState, ctx: Context) -> web.Response:
    t = ctx.target
    if t.subresource:
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    options = _delete_options(ctx)
    if t.rt.group_resource == ("", "namespaces") and t.name in UNDELETABLE_NAMESPACES:
        raise forbidden(f'namespaces "{t.name}" is forbidden: this namespace may not be deleted', "", "namespaces", t.name)
    current = _current(server, ctx)
    return await delete_entry(server, ctx, current, options)


async def delete_entry(server: ServerState, ctx: Context, current: Entry, options: dict[str, Any]) -> web.Response:
    """Plan, admit and carry out one delete; a dry run answers as the delete would and stores nothing."""
    t = ctx.target
    view = views.from_storage(t.rt, current.copy())
    plan = lifecycle.plan_delete(t.rt, view, options, server.clock.now())
    warnings: list[str] = []
    name = view["metadata"]["name"]
    await pipeline.mutate(server, ctx, "DELETE", None, view, name, warnings, options)
    await pipeline.validate(server, ctx, "DELETE", None, view, name, warnings, options)
    is_dry = dry_run(ctx, options)
    key = views.storage_key(t.rt)
    meta = view["metadata"]
    if plan.remove:
        gone = current if is_dry else server.store.remove(key, meta.get("namespace", ""), meta["name"])
        if t.rt.group_resource in (("", "pods"), ("", "services"), ("", "namespaces")) and gone is not None:
            return raw_response(view_bytes(t.rt, gone), warnings=warnings)
        details = {"name": meta["name"], "kind": t.rt.plural, "uid": meta.get("uid")}
        if t.rt.group:
            details["group"] = t.rt.group
        return json_response(status_success(details), warnings=warnings)
    if plan.obj is view:
        return raw_response(view_bytes(t.rt, current), warnings=warnings)
    if is_dry:
        return json_response(plan.obj, warnings=warnings)
    entry = server.store.put(key, views.to_storage(t.rt, plan.obj))
    return raw_response(view_bytes(t.rt, entry), warnings=warnings)


async def delete_collection(server: ServerState, ctx: Context) -> web.Response:
    t = ctx.target
    if "deletecollection" not in t.rt.verbs:
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    options = _delete_options(ctx)
    for entry in matching_entries(server, ctx)[0]:
        try:
            await delete_entry(server, ctx, entry, options)
        except ApiError as exc:
            if exc.code != 404:
                raise
    return json_response(status_success({"kind": t.rt.plural, "group": t.rt.group} if t.rt.group else {"kind": t.rt.plural}))
