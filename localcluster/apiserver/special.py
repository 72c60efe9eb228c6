"""Requests that act instead of storing: pods/binding, SelfSubjectReview, access reviews,
and the namespace finalize subresource.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from localcluster import lifecycle
from localcluster.apiserver import codec
from localcluster.authorization import REVIEWS
from localcluster.clock import rfc3339
from localcluster.apiserver.pipeline import dry_run
from localcluster.errors import ApiError, bad_request, conflict, not_found
from localcluster.apiserver.reads import view_bytes
from localcluster.apiserver.responses import Context, json_response, raw_response
from localcluster.apiserver.server_state import ServerState
from localcluster.store import Entry

VIRTUAL_CREATES = {("", "bindings"), ("authentication.k8s.io", "selfsubjectreviews"), *REVIEWS}


async def create(server: ServerState, ctx: Context) -> web.Response:
    gr = ctx.target.rt.group_resource
    if gr == ("authentication.k8s.io", "selfsubjectreviews"):
        return json_response({"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
                              "metadata": {"creationTimestamp": rfc3339(server.clock.now())},
                              "status": {"userInfo": ctx.user.info()}}, status=201)
    if gr in REVIEWS:
        body = codec.decode_object(ctx.request.headers.get("Content-Type"), ctx.body)
        return json_response(server.authorizer.review(gr, ctx.user, body, ctx.target.namespace or ""), status=201)
    return await bind(server, ctx)


async def bind(server: ServerState, ctx: Context) -> web.Response:
    """pods/binding and bindings: set spec.nodeName and PodScheduled=True, answer 201 Success."""
    body = codec.decode_object(ctx.request.headers.get("Content-Type"), ctx.body)
    if not isinstance(body, dict) or body.get("kind") not in (None, "Binding"):
        raise bad_request("the object provided is unrecognized (must be of type Binding)")
    meta = body.get("metadata") or {}
    if not isinstance(meta, dict) or not isinstance(body.get("target") or {}, dict):
        raise bad_request("json: cannot unmarshal into Go struct field Binding.target of type v1.ObjectReference")
    name = ctx.target.name or meta.get("name") or ""
    if ctx.target.name and meta.get("name") and meta["name"] != ctx.target.name:
        raise bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL ({ctx.target.name})")
    node = (body.get("target") or {}).get("name")
    namespace = ctx.target.namespace or ""
    if not node:
        raise ApiError(422, "Invalid", f'Binding "{name}" is invalid: target.name: Required value',
                       {"name": name, "kind": "Binding", "causes": [{"reason": "FieldValueRequired",
                                                                     "message": "Required value", "field": "target.name"}]})
    entry = server.store.get(("", "pods"), namespace, name)
    if entry is None:
        raise not_found("", "pods", name)
    pod = entry.copy()
    if pod["metadata"].get("deletionTimestamp"):
        raise conflict("", "pods", name, f"pod {name} is being deleted, cannot be assigned to a host")
    current = (pod.get("spec") or {}).get("nodeName")
    if current:
        raise conflict("", "pods", name, f'pod {name} is already assigned to node "{current}"')
    if meta.get("uid") and meta["uid"] != pod["metadata"].get("uid"):
        raise conflict("", "pods", name, "Precondition failed: UID in precondition: "
                       f"{meta['uid']}, UID in object meta: {pod['metadata'].get('uid')}")
    pod.setdefault("spec", {})["nodeName"] = node
    if meta.get("annotations"):
        pod["metadata"].setdefault("annotations", {}).update(meta["annotations"])
    status = pod.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                       "lastTransitionTime": rfc3339(server.clock.now())})
    status["conditions"] = conditions
    if not dry_run(ctx):
        server.store.put(("", "pods"), pod)
    return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201},
                         status=201)


async def finalize_namespace(server: ServerState, ctx: Context, current: Entry, obj: dict[str, Any]) -> web.Response:
    """PUT namespaces/NAME/finalize: replace spec.finalizers; the namespace goes when both lists are empty."""
    ns = current.copy()
    ns["spec"] = dict(ns.get("spec") or {})
    ns["spec"]["finalizers"] = list((obj.get("spec") or {}).get("finalizers") or [])
    rv = obj["metadata"].get("resourceVersion")
    if rv and rv != current.obj["metadata"]["resourceVersion"]:
        lifecycle.check_resource_version(ctx.target.rt, current.obj, obj)
    if ns["spec"] == current.obj.get("spec"):
        return raw_response(view_bytes(ctx.target.rt, current))
    if dry_run(ctx):
        return json_response(ns)
    entry = server.store.put(("", "namespaces"), ns)
    if ns["metadata"].get("deletionTimestamp") and not ns["spec"]["finalizers"] and not ns["metadata"].get("finalizers"):
        gone = server.store.remove(("", "namespaces"), "", ns["metadata"]["name"])
        if gone is not None:
            entry = gone
    return raw_response(view_bytes(ctx.target.rt, entry))
