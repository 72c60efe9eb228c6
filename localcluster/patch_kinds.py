"""PATCH bodies by content type: JSON patch, merge patch, strategic merge, server-side apply.

Strategic merge and server-side apply come from `localcluster.patching`; custom resources
accept no strategic merge (415, as kube-apiserver).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from localcluster import codec, lifecycle, shapes, views
from localcluster.clock import rfc3339
from localcluster.errors import ApiError, already_exists
from localcluster.patching.apply import ApplyConflict, ApplyError, apply
from localcluster.patches import json_patch, merge_patch
from localcluster.patching.strategic import PatchError, strategic_merge
from localcluster.reads import view_bytes
from localcluster.resources import ResourceType
from localcluster.responses import Context, raw_response
from localcluster.store import Entry, dumps

if TYPE_CHECKING:
    from localcluster.apiserver import ApiServer


def kind_key(rt: ResourceType) -> str:
    """`apps/v1/Deployment`, `v1/Pod`: how the patching modules name a kind."""
    return f"{rt.api_version}/{rt.kind}"


def _field_manager(ctx: Context, required: bool) -> str:
    manager = ctx.query.get("fieldManager", "")
    if required and not manager:
        raise ApiError(422, "Invalid", "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: "
                       "is required for apply patch", {"kind": "PatchOptions", "group": "meta.k8s.io",
                                                        "causes": [{"reason": "FieldValueRequired",
                                                                    "message": "Required value: is required for apply patch",
                                                                    "field": "fieldManager"}]})
    return manager


def apply_patch(server: ApiServer, ctx: Context, kind: str, live: dict[str, Any], body: Any) -> dict[str, Any]:
    if kind == codec.JSON_PATCH:
        return json_patch(live, body)
    if not isinstance(body, dict):
        raise ApiError(400, "BadRequest", "json: cannot unmarshal array into Go value of type map[string]interface {}")
    if kind == codec.MERGE_PATCH:
        return merge_patch(live, body)
    if kind == codec.STRATEGIC_PATCH:
        try:
            return strategic_merge(live, body, kind_key(ctx.target.rt))
        except PatchError as exc:
            raise ApiError(422, "Invalid", f"the server rejected our request due to an error in our request: {exc}") from None
    return _server_side_apply(server, ctx, live, body)


def _server_side_apply(server: ApiServer, ctx: Context, live: dict[str, Any] | None, body: dict[str, Any]) -> dict[str, Any]:
    manager = _field_manager(ctx, required=True)
    force = codec.parse_bool(ctx.query.get("force"), "force")
    rt = ctx.target.rt
    lifecycle.check_type(rt, body)
    try:
        return apply(live, body, manager, force, rfc3339(server.clock.now()), kind_key(rt), ctx.target.subresource,
                     rt.schema)
    except ApplyConflict as exc:
        raise ApiError.from_status(exc.status) from None
    except ApplyError as exc:
        raise ApiError(400, "BadRequest", f"failed to create typed patch object ({rt.api_version}, Kind={rt.kind}): "
                       f"{exc}") from None


async def apply_create(server: ApiServer, ctx: Context, body: Any) -> web.Response:
    """Server-side apply of an object that does not exist yet: create it."""
    from localcluster import writes  # writes imports this module for patches

    t = ctx.target
    if not isinstance(body, dict):
        raise ApiError(400, "BadRequest", "error decoding YAML: expected an object")
    obj = _server_side_apply(server, ctx, None, body)
    obj = lifecycle.check_type(t.rt, obj)
    shapes.check(t.rt, obj)
    meta = obj["metadata"]
    if meta.get("name") and meta["name"] != t.name:
        raise ApiError(400, "BadRequest", f"the name of the object ({meta['name']}) does not match the name on the URL ({t.name})")
    meta["name"] = t.name
    lifecycle.place_in_namespace(t.rt, obj, t.namespace)
    writes.check_namespace(server, t.rt, meta.get("namespace", ""), t.name)
    warnings: list[str] = []
    admitted = await writes.mutate(server, ctx, "CREATE", obj, None, t.name, "CreateOptions", warnings)
    obj = lifecycle.prepare_create(t.rt, lifecycle.check_type(t.rt, admitted), server.clock.now())
    await writes.validate(server, ctx, "CREATE", obj, None, t.name, "CreateOptions", warnings)
    if writes.dry_run(ctx):
        return raw_response(view_bytes(t.rt, _fake_entry(obj)), status=201, warnings=warnings)
    if server.store.get(views.storage_key(t.rt), meta.get("namespace", ""), t.name) is not None:
        raise already_exists(t.rt.group, t.rt.plural, t.name)
    entry = server.store.put(views.storage_key(t.rt), views.to_storage(t.rt, obj))
    return raw_response(view_bytes(t.rt, entry), status=201, warnings=warnings)


def _fake_entry(obj: dict[str, Any]) -> Entry:
    return Entry(obj, dumps(obj), 0)

