"""PATCH bodies by content type: JSON patch, merge patch, strategic merge, server-side apply.

Each turns the live object (None when server-side apply creates) into the object the patch asks
for; that object then goes through the one write pipeline (pipeline.py) like any other body.
Strategic merge and server-side apply come from `localcluster.apiserver.patching`; custom resources
accept no strategic merge (415, as kube-apiserver).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from localcluster import crd_schema, lifecycle
from localcluster.apiserver import codec
from localcluster.clock import rfc3339
from localcluster.errors import ApiError, bad_request, not_found
from localcluster.apiserver.patches import json_patch, merge_patch
from localcluster.apiserver.patching.apply import ApplyConflict, ApplyError, apply
from localcluster.apiserver.patching.strategic import PatchError, strategic_merge
from localcluster.resources import ResourceType
from localcluster.apiserver.responses import Context


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


def apply_patch(ctx: Context, kind: str, live: dict[str, Any] | None, body: Any, now: _dt.datetime) -> dict[str, Any]:
    """The object `body` (a patch of content type `kind`) makes of `live`; only an apply patch may create."""
    t = ctx.target
    if kind == codec.APPLY_PATCH:
        if not isinstance(body, dict):
            raise bad_request("error decoding YAML: expected an object")
        return _server_side_apply(ctx, live, body, now)
    if live is None:
        raise not_found(t.rt.group, t.rt.plural, t.name)
    if kind == codec.JSON_PATCH:
        return json_patch(live, body)
    if not isinstance(body, dict):
        raise bad_request("json: cannot unmarshal array into Go value of type map[string]interface {}")
    if kind == codec.MERGE_PATCH:
        return merge_patch(live, body)
    try:
        return strategic_merge(live, body, kind_key(t.rt))
    except PatchError as exc:
        raise ApiError(422, "Invalid", f"the server rejected our request due to an error in our request: {exc}") from None


def _server_side_apply(ctx: Context, live: dict[str, Any] | None, body: dict[str, Any],
                       now: _dt.datetime) -> dict[str, Any]:
    """The applied configuration merged into `live`, managedFields included. A field the schema does
    not declare is refused whatever fieldValidation says, as kube-apiserver refuses it when it
    types the patch (an apply is never pruned)."""
    manager = _field_manager(ctx, required=True)
    force = codec.parse_bool(ctx.query.get("force"))
    rt = ctx.target.rt
    meta = lifecycle.check_type(rt, body)["metadata"]
    typed_error = (f"failed to create typed patch object ({meta.get('namespace', '')}/{meta.get('name', '')}; "
                   f"{rt.group}/{rt.version}, Kind={rt.kind}): ")
    undeclared = crd_schema.undeclared_fields(rt, body)
    if undeclared:
        raise bad_request(typed_error + "\n".join(f".{path}: field not declared in schema" for path in undeclared))
    try:
        return apply(live, body, manager, force, rfc3339(now), kind_key(rt), ctx.target.subresource, rt.schema)
    except ApplyConflict as exc:
        raise ApiError.from_status(exc.status) from None
    except ApplyError as exc:
        raise bad_request(typed_error + str(exc)) from None
