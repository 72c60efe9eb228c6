"""A request's method, path and query to the attributes the authorizer judges.

Follows k8s.io/apiserver pkg/endpoints/request/requestinfo.go (RequestInfoFactory): the path
alone decides, before any routing, so a request for a resource that does not exist is still
judged (and answered 403 when not allowed, as kube-apiserver does).
"""

from __future__ import annotations

from collections.abc import Mapping

from localcluster.apiserver.codec import parse_bool
from localcluster.rbac.rules import Attributes

_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
_NAMESPACE_SUBRESOURCES = {"status", "finalize"}


def _name_from_field_selector(selector: str) -> str:
    for term in selector.split(","):
        key, sep, value = term.partition("=")
        key = key.rstrip("=!")
        if sep and key == "metadata.name" and not term.startswith(key + "!=") and value.lstrip("="):
            return value.lstrip("=")
    return ""


def request_attributes(method: str, path: str, query: Mapping[str, str]) -> Attributes:
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        rest = None
    if not rest:
        return Attributes(verb=method.lower(), resource_request=False, path=path or "/")
    verb = _VERBS.get(method.upper(), method.lower())
    if rest[0] == "watch":
        verb, rest = "watch", rest[1:]
    namespace = ""
    if rest and rest[0] == "namespaces":
        if len(rest) > 1:
            namespace = rest[1]
            if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
                rest = rest[2:]
    if not rest:
        return Attributes(verb=method.lower(), resource_request=False, path=path)
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if not name:
        if verb == "get":
            verb = "watch" if parse_bool(query.get("watch")) else "list"  # as the server decides to serve it
        elif verb == "delete":
            verb = "deletecollection"
        if verb in ("list", "watch"):
            name = _name_from_field_selector(query.get("fieldSelector", ""))
    return Attributes(verb=verb, api_group=group, resource=resource, subresource=subresource,
                      namespace=namespace, name=name)
