"""The TokenRequest API (`POST .../serviceaccounts/NAME/token`), as the kubelet calls it for a
pod's projected token: a signed token for `system:serviceaccount:NS:NAME`, optionally bound to
a pod (it stops working when that pod goes), valid for `expirationSeconds` (at least 10 min,
default 1 h), for the API server's audience unless others are asked for.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from aiohttp import web

from localcluster.apiserver import codec
from localcluster.clock import rfc3339
from localcluster.errors import FieldError, bad_request, conflict, invalid, not_found
from localcluster.apiserver.responses import Context, json_response
from localcluster.apiserver.server_state import ServerState
from localcluster.store import Store
from localcluster.users import API_AUDIENCE, TokenClaims


MIN_SECONDS = 600
DEFAULT_SECONDS = 3600
MAX_SECONDS = 2 ** 32  # kube-apiserver's --service-account-max-token-expiration is unset by default


def _spec(body: Any, name: str) -> tuple[tuple[str, ...], int, dict[str, Any]]:
    if not isinstance(body, dict) or body.get("kind") not in (None, "TokenRequest"):
        raise bad_request("the object provided is unrecognized (must be of type TokenRequest)")
    spec = body.get("spec") or {}
    if not isinstance(spec, dict):
        raise bad_request("json: cannot unmarshal into Go struct field TokenRequest.spec")
    audiences = spec.get("audiences") or [API_AUDIENCE]
    seconds = spec.get("expirationSeconds", DEFAULT_SECONDS)
    errors = []
    if not isinstance(audiences, list) or not all(isinstance(a, str) and a for a in audiences):
        errors.append(FieldError("Invalid", "spec.audiences", "must be a list of non-empty strings", audiences))
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        errors.append(FieldError("Invalid", "spec.expirationSeconds", "must be an integer", seconds))
    elif seconds < MIN_SECONDS:
        errors.append(FieldError("Invalid", "spec.expirationSeconds",
                                 "may not specify a duration less than 10 minutes", seconds))
    elif seconds > MAX_SECONDS:
        errors.append(FieldError("TooLong", "spec.expirationSeconds", "may not specify a duration larger than 2^32 seconds"))
    bound = spec.get("boundObjectRef") or {}
    if not isinstance(bound, dict):
        errors.append(FieldError("Invalid", "spec.boundObjectRef", "must be an object", bound))
    elif bound and bound.get("kind") != "Pod":
        errors.append(FieldError("NotSupported", "spec.boundObjectRef.kind", value=bound.get("kind"),
                                 supported=("Pod",)))
    if errors:
        raise invalid("authentication.k8s.io", "TokenRequest", name, errors)
    return tuple(audiences), seconds, bound


async def create(server: ServerState, ctx: Context) -> web.Response:
    namespace, name = ctx.target.namespace or "", ctx.target.name
    body = codec.decode_object(ctx.request.headers.get("Content-Type"), ctx.body)
    audiences, seconds, bound = _spec(body, name)
    account = server.store.get(("", "serviceaccounts"), namespace, name)
    if account is None:
        raise not_found("", "serviceaccounts", name)
    pod_name = pod_uid = ""
    if bound:
        pod = server.store.get(("", "pods"), namespace, str(bound.get("name", "")))
        if pod is None:
            raise not_found("", "pods", str(bound.get("name", "")))
        pod_name, pod_uid = pod.obj["metadata"]["name"], pod.obj["metadata"].get("uid", "")
        if bound.get("uid") and bound["uid"] != pod_uid:
            raise conflict("", "pods", pod_name, f"the UID in the bound object reference ({bound['uid']}) does not "
                           f"match the UID in record. The object might have been deleted and then recreated")
    now = server.clock.now()
    expires = now + dt.timedelta(seconds=seconds)
    claims = TokenClaims(namespace, name, account.obj["metadata"].get("uid", ""), audiences, expires, now,
                         pod_name, pod_uid)
    token = server.auth.issue(claims)
    spec: dict[str, Any] = {"audiences": list(audiences), "expirationSeconds": seconds, "boundObjectRef": None}
    if bound:
        spec["boundObjectRef"] = {"kind": "Pod", "apiVersion": "v1", "name": pod_name, "uid": pod_uid}
    reply = {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
             "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
             "spec": spec, "status": {"token": token, "expirationTimestamp": rfc3339(expires)}}
    return json_response(reply, status=201)


def still_bound(store: Store, claims: TokenClaims) -> bool:
    """A token is good while its ServiceAccount (and bound pod) exist with the uids it names."""
    account = store.get(("", "serviceaccounts"), claims.namespace, claims.service_account)
    if account is None or account.obj["metadata"].get("uid", "") != claims.service_account_uid:
        return False
    if not claims.pod_name:
        return True
    pod = store.get(("", "pods"), claims.namespace, claims.pod_name)
    return pod is not None and pod.obj["metadata"].get("uid", "") == claims.pod_uid
