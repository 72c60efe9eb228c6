"""Create, update, patch and delete: decode, admit, apply the strategy, store, answer.

Order on every write, as kube-apiserver: decode -> mutating admission -> defaults and
validation (lifecycle/kinds) -> store. Conflicts and missing objects are checked against the
store at the moment of the write; nothing awaits between that check and the store call.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

from localcluster import codec, crd_schema, lifecycle, patch_kinds, scale, shapes, special, views
from localcluster.admission import AdmissionAttributes, AdmissionDenied
from localcluster.clock import rfc3339
from localcluster.errors import ApiError, already_exists, bad_request, forbidden, not_found, unsupported_media_type
from localcluster.patching.apply import record_update
from localcluster.reads import matching_entries, view_bytes, view_obj
from localcluster.responses import Context, json_response, raw_response, status_success
from localcluster.resources import ResourceType
from localcluster.store import Entry, dumps

if TYPE_CHECKING:
    from localcluster.apiserver import ApiServer

UNDELETABLE_NAMESPACES = ("default", "kube-system", "kube-public")
NO_ADMISSION = {("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
                ("admissionregistration.k8s.io", "validatingwebhookconfigurations")}


def dry_run(ctx: Context) -> bool:
    values = ctx.query.getall("dryRun", [])
    for value in values:
        if value != "All":
            raise bad_request(f'dryRun: Unsupported value: "{value}": supported values: "All"')
    return bool(values)


def check_namespace(server: ApiServer, rt: ResourceType, namespace: str, name: str) -> None:
    if not rt.namespaced:
        return
    entry = server.store.get(("", "namespaces"), "", namespace)
    if entry is None:
        raise not_found("", "namespaces", namespace)
    if entry.obj["metadata"].get("deletionTimestamp"):
        err = forbidden(f'{rt.qualified} "{name}" is forbidden: unable to create new content in namespace '
                        f'{namespace} because it is being terminated', rt.group, rt.plural, name)
        err.details["causes"] = [{"reason": "NamespaceTerminating", "message": f"namespace {namespace} is being "
                                  "terminated", "field": "metadata.namespace"}]
        raise err


def _prune_custom(ctx: Context, rt: ResourceType, obj: dict[str, Any]) -> list[str]:
    """Drop unknown fields of a custom resource; Strict field validation makes them a 400."""
    if rt.builtin:
        return []
    pruned = crd_schema.prune_custom(rt, obj)
    mode = ctx.query.get("fieldValidation", "")
    if pruned and mode == "Strict":
        unknown = ", ".join(f'unknown field "{p}"' for p in pruned)
        raise bad_request(f"strict decoding error: {unknown}")
    return [f'unknown field "{p}"' for p in pruned] if mode == "Warn" else []


def _attributes(ctx: Context, operation: str, obj: dict[str, Any] | None, old: dict[str, Any] | None,
                name: str, options_kind: str) -> AdmissionAttributes:
    rt = ctx.target.rt
    namespace = ctx.target.namespace or (obj or old or {}).get("metadata", {}).get("namespace", "")
    if rt.group_resource == ("", "namespaces"):
        namespace = name
    return AdmissionAttributes(
        operation=operation, group=rt.group, version=rt.version, kind=rt.kind, resource=rt.plural,
        subresource=ctx.target.subresource, namespace=namespace, name=name, user_info=ctx.user.info(),
        dry_run=bool(ctx.query.getall("dryRun", [])), options=_options(ctx, options_kind))


def _options(ctx: Context, kind: str) -> dict[str, Any]:
    """The Create/Update/DeleteOptions an AdmissionReview carries, from the request's query."""
    options: dict[str, Any] = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    dry = ctx.query.getall("dryRun", [])
    if dry:
        options["dryRun"] = list(dry)
    if kind != "DeleteOptions":
        for key in ("fieldManager", "fieldValidation"):
            if ctx.query.get(key):
                options[key] = ctx.query[key]
    return options


def field_manager(ctx: Context) -> str:
    """The manager of a write: `fieldManager`, else the User-Agent's product, as kube-apiserver derives it."""
    return ctx.query.get("fieldManager") or ctx.request.headers.get("User-Agent", "").split("/")[0]


def record_write(server: ApiServer, ctx: Context, old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """`new` with the writer's Update entry in managedFields (server-side apply writes its own)."""
    rt = ctx.target.rt
    return record_update(old, new, field_manager(ctx), rfc3339(server.clock.now()), f"{rt.api_version}/{rt.kind}",
                         ctx.target.subresource, rt.schema)


def _skips_admission(server: ApiServer, ctx: Context) -> bool:
    return server.webhooks is None or ctx.target.rt.group_resource in NO_ADMISSION


async def mutate(server: ApiServer, ctx: Context, operation: str, obj: dict[str, Any] | None,
                 old: dict[str, Any] | None, name: str, options_kind: str, warnings: list[str]) -> dict[str, Any] | None:
    """Mutating webhooks (if any match): the object as they patched it."""
    if _skips_admission(server, ctx):
        return obj
    try:
        return await server.webhooks.mutate(_attributes(ctx, operation, obj, old, name, options_kind), obj, old, warnings)
    except AdmissionDenied as exc:
        raise ApiError.from_status(exc.status) from None


async def validate(server: ApiServer, ctx: Context, operation: str, obj: dict[str, Any] | None,
                   old: dict[str, Any] | None, name: str, options_kind: str, warnings: list[str]) -> None:
    """RBAC's escalation check on roles and bindings, then validating webhooks (if any match)."""
    if operation != "DELETE":
        server.authorizer.check_write(ctx.user, views.storage_key(ctx.target.rt), obj, old)
    if _skips_admission(server, ctx):
        return
    try:
        await server.webhooks.validate(_attributes(ctx, operation, obj, old, name, options_kind), obj, old, warnings)
    except AdmissionDenied as exc:
        raise ApiError.from_status(exc.status) from None


async def create(server: ApiServer, ctx: Context) -> web.Response:
    t = ctx.target
    if t.rt.group_resource in special.VIRTUAL_CREATES or t.subresource == "binding":
        return await special.create(server, ctx)
    obj = lifecycle.check_type(t.rt, codec.decode_object(ctx.request.headers.get("Content-Type"), ctx.body))
    shapes.check(t.rt, obj)
    lifecycle.place_in_namespace(t.rt, obj, t.namespace)
    namespace = obj["metadata"].get("namespace", "")
    check_namespace(server, t.rt, namespace, str(obj["metadata"].get("name") or ""))
    warnings = _prune_custom(ctx, t.rt, obj)
    is_dry = dry_run(ctx)
    name = str(obj["metadata"].get("name") or "")
    admitted = await mutate(server, ctx, "CREATE", obj, None, name, "CreateOptions", warnings)
    obj = lifecycle.check_type(t.rt, admitted)
    lifecycle.place_in_namespace(t.rt, obj, t.namespace)
    if obj["metadata"].get("name"):
        check_namespace(server, t.rt, namespace, obj["metadata"]["name"])
    for _attempt in range(8):
        candidate = lifecycle.prepare_create(t.rt, copy.deepcopy(obj), server.clock.now())
        name = candidate["metadata"]["name"]
        existing = server.store.get(views.storage_key(t.rt), namespace, name)
        if existing is None:
            break
        if not obj["metadata"].get("generateName") or obj["metadata"].get("name"):
            raise already_exists(t.rt.group, t.rt.plural, name, bool(existing.obj["metadata"].get("deletionTimestamp")))
    else:
        raise already_exists(t.rt.group, t.rt.plural, name)
    await validate(server, ctx, "CREATE", candidate, None, name, "CreateOptions", warnings)
    if server.store.get(views.storage_key(t.rt), namespace, name) is not None:
        raise already_exists(t.rt.group, t.rt.plural, name)
    check_namespace(server, t.rt, namespace, name)
    candidate = record_write(server, ctx, None, candidate)
    if is_dry:
        return json_response(candidate, status=201, warnings=warnings)
    entry = server.store.put(views.storage_key(t.rt), views.to_storage(t.rt, candidate))
    return raw_response(view_bytes(t.rt, entry), status=201, warnings=warnings)


def _current(server: ApiServer, ctx: Context) -> Entry:
    t = ctx.target
    entry = server.store.get(views.storage_key(t.rt), t.namespace or "", t.name)
    if entry is None:
        raise not_found(t.rt.group, t.rt.plural, t.name)
    return entry


def _unchanged(new: dict[str, Any], old: dict[str, Any]) -> bool:
    a, b = dict(new), dict(old)
    a["metadata"] = {k: v for k, v in new["metadata"].items() if k != "resourceVersion"}
    b["metadata"] = {k: v for k, v in old["metadata"].items() if k != "resourceVersion"}
    return a == b


@dataclass(frozen=True)
class Written:
    """The outcome of an update: the stored (or removed) entry, or a dry run's object."""

    rt: ResourceType
    entry: Entry | None
    dry: dict[str, Any] | None = None

    def view(self) -> dict[str, Any]:
        if self.dry is not None or self.entry is None:
            return self.dry or {}
        return view_obj(self.rt, self.entry)

    def body(self) -> bytes:
        if self.dry is not None or self.entry is None:
            return dumps(self.dry or {})
        return view_bytes(self.rt, self.entry)


async def store_update(server: ApiServer, ctx: Context, old_entry: Entry, new: dict[str, Any],
                       warnings: list[str] | None = None, applied: bool = False) -> web.Response:
    """Admit and store an updated object (PUT and PATCH end here); `applied` when server-side
    apply already wrote managedFields."""
    warnings = [] if warnings is None else warnings
    written = await commit_update(server, ctx, old_entry, new, warnings, applied)
    if ctx.target.subresource == "scale":
        return json_response(scale.to_scale(ctx.target.rt, written.view()), warnings=warnings)
    return raw_response(written.body(), warnings=warnings)


async def commit_update(server: ApiServer, ctx: Context, old_entry: Entry, new: dict[str, Any],
                        warnings: list[str], applied: bool) -> Written:
    t = ctx.target
    applied_fields = new.get("metadata", {}).get("managedFields") if applied else None
    old_view = views.from_storage(t.rt, old_entry.copy())
    new = lifecycle.prepare_update(t.rt, old_view, new, t.subresource)
    admitted = await mutate(server, ctx, "UPDATE", new, old_view, t.name, "UpdateOptions", warnings)
    if admitted is not new:
        new = lifecycle.prepare_update(t.rt, old_view, lifecycle.check_type(t.rt, admitted), t.subresource)
    await validate(server, ctx, "UPDATE", new, old_view, t.name, "UpdateOptions", warnings)
    if not applied:
        new = record_write(server, ctx, old_view, new)
    elif applied_fields:
        new["metadata"]["managedFields"] = applied_fields  # a status write starts from the old object
    latest = server.store.get(views.storage_key(t.rt), t.namespace or "", t.name)
    if latest is None:
        raise not_found(t.rt.group, t.rt.plural, t.name)
    if latest.rv != old_entry.rv:
        lifecycle.check_resource_version(t.rt, views.from_storage(t.rt, latest.copy()), new)
    if dry_run(ctx):
        return Written(t.rt, None, new)
    if _unchanged(new, old_view):
        return Written(t.rt, latest)
    key = views.storage_key(t.rt)
    if lifecycle.finished_deleting(new) and not _namespace_held(t.rt, new):
        server.store.put(key, views.to_storage(t.rt, new))
        return Written(t.rt, server.store.remove(key, t.namespace or "", t.name))
    return Written(t.rt, server.store.put(key, views.to_storage(t.rt, new)))


def _namespace_held(rt: ResourceType, obj: dict[str, Any]) -> bool:
    return rt.group_resource == ("", "namespaces") and bool((obj.get("spec") or {}).get("finalizers"))


async def update(server: ApiServer, ctx: Context) -> web.Response:
    t = ctx.target
    if t.subresource == "scale":
        current = _current(server, ctx)
        body = codec.decode_object(ctx.request.headers.get("Content-Type"), ctx.body)
        return await store_update(server, ctx, current, scale.apply_scale(t.rt, views.from_storage(t.rt, current.copy()), body))
    obj = lifecycle.check_type(t.rt, codec.decode_object(ctx.request.headers.get("Content-Type"), ctx.body))
    shapes.check(t.rt, obj, t.subresource)
    current = _current(server, ctx)
    if t.subresource == "finalize":
        return await special.finalize_namespace(server, ctx, current, obj)
    warnings = _prune_custom(ctx, t.rt, obj)
    if t.rt.group_resource == ("", "pods") and not t.subresource:
        spec = obj.get("spec")
        old_node = (current.obj.get("spec") or {}).get("nodeName")
        if isinstance(spec, dict) and not spec.get("nodeName") and old_node:
            spec["nodeName"] = old_node
    return await store_update(server, ctx, current, obj, warnings)


async def patch(server: ApiServer, ctx: Context) -> web.Response:
    t = ctx.target
    kind, body = codec.decode_patch(ctx.request.headers.get("Content-Type"), ctx.body, t.rt.builtin)
    current = server.store.get(views.storage_key(t.rt), t.namespace or "", t.name)
    if current is None:
        if kind == codec.APPLY_PATCH:
            return await patch_kinds.apply_create(server, ctx, body)
        raise not_found(t.rt.group, t.rt.plural, t.name)
    live = views.from_storage(t.rt, current.copy())
    if t.subresource == "scale":
        if kind == codec.APPLY_PATCH:
            raise unsupported_media_type(kind, [codec.JSON_PATCH, codec.MERGE_PATCH, codec.STRATEGIC_PATCH])
        patched_scale = patch_kinds.apply_patch(server, ctx, kind, scale.to_scale(t.rt, live), body)
        return await store_update(server, ctx, current, scale.apply_scale(t.rt, live, patched_scale))
    patched = patch_kinds.apply_patch(server, ctx, kind, live, body)
    patched = lifecycle.check_type(t.rt, patched)
    shapes.check(t.rt, patched, t.subresource)
    warnings = _prune_custom(ctx, t.rt, patched)
    if not patched["metadata"].get("resourceVersion"):
        patched["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
    return await store_update(server, ctx, current, patched, warnings, applied=kind == codec.APPLY_PATCH)


async def delete(server: ApiServer, ctx: Context) -> web.Response:
    t = ctx.target
    if t.subresource:
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    options = codec.decode_options(ctx.body, ctx.request.headers.get("Content-Type"))
    for key in ("propagationPolicy", "gracePeriodSeconds"):
        if key not in options and ctx.query.get(key) is not None:
            options[key] = ctx.query.get(key)
    if "orphanDependents" not in options and ctx.query.get("orphanDependents") is not None:
        options["orphanDependents"] = codec.parse_bool(ctx.query.get("orphanDependents"), "orphanDependents")
    if t.rt.group_resource == ("", "namespaces") and t.name in UNDELETABLE_NAMESPACES:
        raise forbidden(f'namespaces "{t.name}" is forbidden: this namespace may not be deleted', "", "namespaces", t.name)
    current = _current(server, ctx)
    return await delete_entry(server, ctx, current, options)


async def delete_entry(server: ApiServer, ctx: Context, current: Entry, options: dict[str, Any]) -> web.Response:
    t = ctx.target
    view = views.from_storage(t.rt, current.copy())
    plan = lifecycle.plan_delete(t.rt, view, options, server.clock.now())
    warnings: list[str] = []
    name = view["metadata"]["name"]
    await mutate(server, ctx, "DELETE", None, view, name, "DeleteOptions", warnings)
    await validate(server, ctx, "DELETE", None, view, name, "DeleteOptions", warnings)
    if dry_run(ctx):
        return json_response(view, warnings=warnings)
    key = views.storage_key(t.rt)
    meta = view["metadata"]
    if plan.remove:
        gone = server.store.remove(key, meta.get("namespace", ""), meta["name"])
        if t.rt.group_resource in (("", "pods"), ("", "services"), ("", "namespaces")) and gone is not None:
            return raw_response(view_bytes(t.rt, gone), warnings=warnings)
        details = {"name": meta["name"], "kind": t.rt.plural, "uid": meta.get("uid")}
        if t.rt.group:
            details["group"] = t.rt.group
        return json_response(status_success(details), warnings=warnings)
    if plan.obj is view:
        return raw_response(view_bytes(t.rt, current), warnings=warnings)
    entry = server.store.put(key, views.to_storage(t.rt, plan.obj))
    return raw_response(view_bytes(t.rt, entry), warnings=warnings)


async def delete_collection(server: ApiServer, ctx: Context) -> web.Response:
    t = ctx.target
    if "deletecollection" not in t.rt.verbs:
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    options = codec.decode_options(ctx.body, ctx.request.headers.get("Content-Type"))
    if "propagationPolicy" not in options and ctx.query.get("propagationPolicy"):
        options["propagationPolicy"] = ctx.query.get("propagationPolicy")
    for entry in matching_entries(server, ctx)[0]:
        try:
            await delete_entry(server, ctx, entry, options)
        except ApiError as exc:
            if exc.code != 404:
                raise
    return json_response(status_success({"kind": t.rt.plural, "group": t.rt.group} if t.rt.group else {"kind": t.rt.plural}))
