"""Request paths to resources: /api/v1/namespaces/ns/pods/name/status and friends."""

from __future__ import annotations

from dataclasses import dataclass

from localcluster.errors import ApiError
from localcluster.resources import Registry, ResourceType

_NAMESPACE_SUBRESOURCES = {"status", "finalize"}


@dataclass(frozen=True)
class Target:
    """What a resource request addresses."""

    rt: ResourceType
    namespace: str | None  # None = all namespaces (or cluster-scoped)
    name: str
    subresource: str


def not_found_path() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def resolve(registry: Registry, path: str) -> Target | None:
    """A resource path to its Target; None if the path is not a resource path (discovery etc.)."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 3 and parts[0] == "api" and parts[1] == "v1":
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in _NAMESPACE_SUBRESOURCES:
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        raise not_found_path()
    rt = registry.lookup(group, version, rest[0])
    if rt is None:
        raise not_found_path()
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if namespace is not None and not rt.namespaced:
        raise not_found_path()
    if sub and sub not in rt.subresources:
        raise not_found_path()
    return Target(rt, namespace, name, sub)
