"""Admit and store: the one path of every create and update (POST, PUT, PATCH, server-side apply).

In kube-apiserver's order:
1. decode (`decode`): the body, or the object a patch produced, is typed as its resource, its
   JSON shapes checked as the Go decoder checks them, and a custom resource pruned of the fields
   its schema does not declare (fieldValidation Strict makes them a 400, Warn a warning), then
   defaulted;
2. mutating admission webhooks; what they return is pruned and defaulted again, so a webhook
   cannot store an undeclared field either;
3. the registry strategy (`lifecycle`): system fields, generation, status, validation;
4. validating admission webhooks;
5. managedFields for the writer (server-side apply wrote its own), then the store, checked
   against what is stored at that moment: nothing awaits between that check and the write.

`create` and `update` run stages 2-5; a `Decoded` object, which only `decode` makes, is what they
take, so no verb can skip stage 1. Deletes share the admission calls (`mutate`, `validate`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from localcluster import crd_schema, lifecycle
from localcluster.apiserver import shapes, views
from localcluster.apiserver.admission import AdmissionAttributes, AdmissionDenied, WebhookDispatcher
from localcluster.clock import rfc3339
from localcluster.errors import ApiError, FieldError, already_exists, bad_request, forbidden, invalid, not_found
from localcluster.apiserver.patching.apply import record_update
from localcluster.rbac.rules import Attributes
from localcluster.apiserver.reads import view_bytes, view_obj
from localcluster.resources import ResourceType
from localcluster.apiserver.responses import Context
from localcluster.apiserver.server_state import ServerState
from localcluster.store import Entry, dumps

NO_ADMISSION = {("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
                ("admissionregistration.k8s.io", "validatingwebhookconfigurations")}
NAME_ATTEMPTS = 8  # draws of a generateName before a create gives up with AlreadyExists


@dataclass(frozen=True)
class Decoded:
    """A request's object after stage 1, with the field-validation warnings it earned."""

    obj: dict[str, Any]
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class Written:
    """The outcome of a create or update: the stored (or removed) entry, or a dry run's object."""

    rt: ResourceType
    entry: Entry | None
    warnings: list[str]
    created: bool = False
    dry: dict[str, Any] | None = None

    def view(self) -> dict[str, Any]:
        if self.dry is not None or self.entry is None:
            return self.dry or {}
        return view_obj(self.rt, self.entry)

    def body(self) -> bytes:
        if self.dry is not None or self.entry is None:
            return dumps(self.dry or {})
        return view_bytes(self.rt, self.entry)


def decode(ctx: Context, value: Any) -> Decoded:
    """Stage 1 for the request's resource: type, shapes, pruning under fieldValidation, defaults."""
    rt = ctx.target.rt
    obj = lifecycle.check_type(rt, value)
    shapes.check(rt, obj, ctx.target.subresource)
    pruned = crd_schema.decode_custom(rt, obj)
    mode = ctx.query.get("fieldValidation", "")
    if pruned and mode == "Strict":
        raise bad_request("strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in pruned))
    return Decoded(obj, tuple(f'unknown field "{p}"' for p in pruned) if mode == "Warn" else ())


_OPTIONS_OF_METHOD = {"POST": "CreateOptions", "PUT": "UpdateOptions", "PATCH": "PatchOptions",
                      "DELETE": "DeleteOptions"}


def dry_run_values(ctx: Context, delete_options: dict[str, Any] | None = None) -> list[str]:
    """The request's dryRun directives: a delete's DeleteOptions (body, then query), else the query's.

    An unknown directive is refused as kube-apiserver's Validate*Options refuse it: 422 on the options kind.
    """
    if delete_options is not None and "dryRun" in delete_options:
        values = delete_options["dryRun"] or []
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise bad_request("json: cannot unmarshal into Go struct field DeleteOptions.dryRun of type []string")
    else:
        values = list(ctx.query.getall("dryRun", []))
    if any(value != "All" for value in values):
        kind = _OPTIONS_OF_METHOD.get(ctx.request.method, "CreateOptions")
        raise invalid("meta.k8s.io", kind, "", [FieldError("NotSupported", "dryRun", value=values, supported=("All",))])
    return values


def dry_run(ctx: Context, delete_options: dict[str, Any] | None = None) -> bool:
    """Whether nothing may be stored: kube-apiserver honours dryRun on every verb, in the query or a
    delete's body, and still runs admission (webhooks see `dryRun: true`)."""
    return bool(dry_run_values(ctx, delete_options))


def check_namespace(server: ServerState, rt: ResourceType, namespace: str, name: str) -> None:
    """A namespaced object needs its namespace to exist and not be terminating."""
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


async def create(server: ServerState, ctx: Context, decoded: Decoded, applied: bool = False) -> Written:
    """Stages 2-5 for a new object; `applied` when server-side apply already wrote managedFields."""
    rt = ctx.target.rt
    is_dry = dry_run(ctx)
    warnings = list(decoded.warnings)
    obj = decoded.obj
    lifecycle.place_in_namespace(rt, obj, ctx.target.namespace)
    name = str(obj["metadata"].get("name") or "")
    check_namespace(server, rt, obj["metadata"].get("namespace", ""), name)
    obj = await _mutated(server, ctx, "CREATE", obj, None, name, warnings)
    lifecycle.place_in_namespace(rt, obj, ctx.target.namespace)
    candidate = _prepared_create(server, rt, obj)
    meta = candidate["metadata"]
    namespace, name = meta.get("namespace", ""), meta["name"]
    await validate(server, ctx, "CREATE", candidate, None, name, warnings)
    if server.store.get(views.storage_key(rt), namespace, name) is not None:
        raise already_exists(rt.group, rt.plural, name)
    check_namespace(server, rt, namespace, name)
    if not applied:
        candidate = record_write(server, ctx, None, candidate)
    if is_dry:
        return Written(rt, None, warnings, created=True, dry=candidate)
    return Written(rt, server.store.put(views.storage_key(rt), views.to_storage(rt, candidate)), warnings, created=True)


def _prepared_create(server: ServerState, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """The create strategy; a generated name that is taken is drawn again, as kube-apiserver does."""
    meta = obj["metadata"]
    key, namespace = views.storage_key(rt), meta.get("namespace", "")
    name = str(meta.get("name") or "")
    for _attempt in range(NAME_ATTEMPTS):
        candidate = lifecycle.prepare_create(rt, copy.deepcopy(obj), server.clock.now())
        name = candidate["metadata"]["name"]
        existing = server.store.get(key, namespace, name)
        if existing is None:
            return candidate
        if not meta.get("generateName") or meta.get("name"):
            raise already_exists(rt.group, rt.plural, name, bool(existing.obj["metadata"].get("deletionTimestamp")))
    raise already_exists(rt.group, rt.plural, name)


async def update(server: ServerState, ctx: Context, old_entry: Entry, decoded: Decoded,
                 applied: bool = False) -> Written:
    """Stages 2-5 for a change to `old_entry`; `applied` when server-side apply already wrote managedFields."""
    t = ctx.target
    is_dry = dry_run(ctx)
    warnings = list(decoded.warnings)
    applied_fields = decoded.obj["metadata"].get("managedFields") if applied else None
    old_view = views.from_storage(t.rt, old_entry.copy())
    admitted = await _mutated(server, ctx, "UPDATE", decoded.obj, old_view, t.name, warnings)
    new = lifecycle.prepare_update(t.rt, old_view, admitted, t.subresource)
    await validate(server, ctx, "UPDATE", new, old_view, t.name, warnings)
    if not applied:
        new = record_write(server, ctx, old_view, new)
    elif applied_fields:
        new["metadata"]["managedFields"] = applied_fields  # a status write starts from the old object
    key = views.storage_key(t.rt)
    latest = server.store.get(key, t.namespace or "", t.name)
    if latest is None:
        raise not_found(t.rt.group, t.rt.plural, t.name)
    if latest.rv != old_entry.rv:
        lifecycle.check_resource_version(t.rt, views.from_storage(t.rt, latest.copy()), new)
    if is_dry:
        return Written(t.rt, None, warnings, dry=new)
    if _unchanged(new, old_view):
        return Written(t.rt, latest, warnings)
    if lifecycle.finished_deleting(new) and not _namespace_held(t.rt, new):
        server.store.put(key, views.to_storage(t.rt, new))
        return Written(t.rt, server.store.remove(key, t.namespace or "", t.name), warnings)
    return Written(t.rt, server.store.put(key, views.to_storage(t.rt, new)), warnings)


def _unchanged(new: dict[str, Any], old: dict[str, Any]) -> bool:
    a, b = dict(new), dict(old)
    a["metadata"] = {k: v for k, v in new["metadata"].items() if k != "resourceVersion"}
    b["metadata"] = {k: v for k, v in old["metadata"].items() if k != "resourceVersion"}
    return a == b


def _namespace_held(rt: ResourceType, obj: dict[str, Any]) -> bool:
    return rt.group_resource == ("", "namespaces") and bool((obj.get("spec") or {}).get("finalizers"))


def field_manager(ctx: Context) -> str:
    """The manager of a write: `fieldManager`, else the User-Agent's product, as kube-apiserver derives it."""
    return ctx.query.get("fieldManager") or ctx.request.headers.get("User-Agent", "").split("/")[0]


def record_write(server: ServerState, ctx: Context, old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """`new` with the writer's Update entry in managedFields (server-side apply writes its own)."""
    rt = ctx.target.rt
    return record_update(old, new, field_manager(ctx), rfc3339(server.clock.now()), f"{rt.api_version}/{rt.kind}",
                         ctx.target.subresource, rt.schema)


# admission


_OPTIONS_KIND = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


def _written(ctx: Context, obj: dict[str, Any] | None, old: dict[str, Any] | None, name: str) -> Attributes:
    """The write as an authorizer sees it (what OwnerReferencesPermissionEnforcement asks about)."""
    rt = ctx.target.rt
    namespace = ctx.target.namespace or ((obj or old or {}).get("metadata") or {}).get("namespace", "") or ""
    return Attributes("update", api_group=rt.group, resource=rt.plural, subresource=ctx.target.subresource,
                      namespace=namespace, name=name)


def _served_as(server: ServerState, api_version: str, kind: str) -> list[tuple[str, str]]:
    """The (group, plural) resources a kind is served as, for an ownerReference's apiVersion and kind."""
    group, _, version = api_version.rpartition("/")
    return [(rt.group, rt.plural) for rt in server.registry.in_group_version(group, version)
            if rt.kind == kind]


def _attributes(ctx: Context, operation: str, obj: dict[str, Any] | None, old: dict[str, Any] | None,
                name: str, delete_options: dict[str, Any] | None) -> AdmissionAttributes:
    rt = ctx.target.rt
    namespace = ctx.target.namespace or (obj or old or {}).get("metadata", {}).get("namespace", "")
    if rt.group_resource == ("", "namespaces"):
        namespace = name
    return AdmissionAttributes(
        operation=operation, group=rt.group, version=rt.version, kind=rt.kind, resource=rt.plural,
        subresource=ctx.target.subresource, namespace=namespace, name=name, user_info=ctx.user.info(),
        dry_run=dry_run(ctx, delete_options), options=_options(ctx, _OPTIONS_KIND[operation], delete_options))


def _options(ctx: Context, kind: str, delete_options: dict[str, Any] | None) -> dict[str, Any]:
    """The Create/Update/DeleteOptions an AdmissionReview carries: a delete's own, else from the query."""
    options: dict[str, Any] = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    dry = dry_run_values(ctx, delete_options)
    if dry:
        options["dryRun"] = dry
    if kind == "DeleteOptions":
        options.update({k: v for k, v in (delete_options or {}).items()
                        if k in ("gracePeriodSeconds", "propagationPolicy", "orphanDependents", "preconditions")})
    else:
        for key in ("fieldManager", "fieldValidation"):
            if ctx.query.get(key):
                options[key] = ctx.query[key]
    return options


def _webhooks(server: ServerState, ctx: Context) -> WebhookDispatcher | None:
    """The webhooks that judge this write: none for webhook configurations themselves."""
    return None if ctx.target.rt.group_resource in NO_ADMISSION else server.webhooks


async def mutate(server: ServerState, ctx: Context, operation: str, obj: dict[str, Any] | None,
                 old: dict[str, Any] | None, name: str, warnings: list[str],
                 delete_options: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Mutating webhooks (if any match): the object as they patched it."""
    webhooks = _webhooks(server, ctx)
    if webhooks is None:
        return obj
    try:
        return await webhooks.mutate(_attributes(ctx, operation, obj, old, name, delete_options), obj, old, warnings)
    except AdmissionDenied as exc:
        raise ApiError.from_status(exc.status) from None


async def _mutated(server: ServerState, ctx: Context, operation: str, obj: dict[str, Any],
                   old: dict[str, Any] | None, name: str, warnings: list[str]) -> dict[str, Any]:
    """Stage 2: the object after mutating webhooks; if they changed it, typed, pruned and defaulted again."""
    admitted = await mutate(server, ctx, operation, obj, old, name, warnings)
    if admitted is obj:
        return obj
    rt = ctx.target.rt
    redone = lifecycle.check_type(rt, admitted)
    crd_schema.decode_custom(rt, redone)
    return redone


async def validate(server: ServerState, ctx: Context, operation: str, obj: dict[str, Any] | None,
                   old: dict[str, Any] | None, name: str, warnings: list[str],
                   delete_options: dict[str, Any] | None = None) -> None:
    """Stage 4: RBAC's escalation check on roles and bindings (kube-apiserver does it in their
    strategy) and OwnerReferencesPermissionEnforcement, then validating webhooks (if any match), after the server's own validation."""
    if operation != "DELETE":
        server.authorizer.check_write(ctx.user, views.storage_key(ctx.target.rt), obj, old)
        server.authorizer.check_owner_references(ctx.user, _written(ctx, obj, old, name), obj, old,
                                                 lambda api_version, kind: _served_as(server, api_version, kind))
    webhooks = _webhooks(server, ctx)
    if webhooks is None:
        return
    try:
        await webhooks.validate(_attributes(ctx, operation, obj, old, name, delete_options), obj, old, warnings)
    except AdmissionDenied as exc:
        raise ApiError.from_status(exc.status) from None
