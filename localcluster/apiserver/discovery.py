"""Discovery documents: legacy (/api, /apis, /api/v1, /apis/G/V), aggregated (apidiscovery v2)
and /version, built from the registry each time so a new CRD shows up at once.
"""

from __future__ import annotations

import re
from typing import Any

from localcluster.resources import GROUP_ORDER, Registry, ResourceType

KUBE_VERSION = {
    "major": "1", "minor": "32", "gitVersion": "v1.32.4", "gitCommit": "59526cd4867447956156ae3a602fcbac5ee7fcb2",
    "gitTreeState": "clean", "buildDate": "2025-04-22T16:02:27Z", "goVersion": "go1.23.6", "compiler": "gc",
    "platform": "linux/amd64",
}

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes version order: GA > beta > alpha, higher numbers first, others last by name."""
    match = _VERSION_RE.match(version)
    if not match:
        return (0, 0, 0, version)
    major, stage, minor = match.groups()
    rank = {None: 3, "beta": 2, "alpha": 1}[stage]
    return (rank, int(major), int(minor or 0), "")


def sorted_versions(versions: list[str]) -> list[str]:
    return sorted(versions, key=version_priority, reverse=True)


def _subresource_kind(rt: ResourceType, sub: str) -> tuple[str, tuple[str, ...]]:
    if sub == "binding":
        return "Binding", ("create",)
    if sub == "log":
        return "Pod", ("get",)
    if sub == "finalize":
        return rt.kind, ("update",)
    if sub == "token":
        return "TokenRequest", ("create",)
    if sub == "scale":
        return "Scale", ("get", "patch", "update")
    return rt.kind, ("get", "patch", "update")


def api_resource_list(registry: Registry, group: str, version: str) -> dict[str, Any]:
    resources = []
    for rt in sorted(registry.in_group_version(group, version), key=lambda r: r.plural):
        entry: dict[str, Any] = {"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced,
                                 "kind": rt.kind, "verbs": list(rt.verbs)}
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        resources.append(entry)
        for sub in rt.subresources:
            kind, verbs = _subresource_kind(rt, sub)
            resources.append({"name": f"{rt.plural}/{sub}", "singularName": "", "namespaced": rt.namespaced,
                              "kind": kind, "verbs": list(verbs)})
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}


def api_versions(address: str) -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}]}


def _ordered_groups(registry: Registry) -> list[tuple[str, list[str]]]:
    groups = registry.group_versions()
    groups.pop("", None)
    known = [g for g in GROUP_ORDER if g in groups]
    extra = sorted(g for g in groups if g not in GROUP_ORDER)
    return [(g, sorted_versions(groups[g])) for g in known + extra]


def api_group_list(registry: Registry) -> dict[str, Any]:
    out = []
    for group, versions in _ordered_groups(registry):
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        out.append({"name": group, "versions": entries, "preferredVersion": entries[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": out}


def api_group(registry: Registry, group: str) -> dict[str, Any] | None:
    for name, versions in _ordered_groups(registry):
        if name == group:
            entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
            return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": entries,
                    "preferredVersion": entries[0]}
    return None


def _aggregated_resource(rt: ResourceType) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": rt.plural, "responseKind": {"group": "", "version": "", "kind": rt.kind},
        "scope": "Namespaced" if rt.namespaced else "Cluster", "singularResource": rt.singular,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    subs = []
    for sub in rt.subresources:
        kind, verbs = _subresource_kind(rt, sub)
        group, version = {"scale": ("autoscaling", "v1"), "token": ("authentication.k8s.io", "v1")}.get(sub, ("", ""))
        subs.append({"subresource": sub, "responseKind": {"group": group, "version": version, "kind": kind},
                     "verbs": list(verbs)})
    if subs:
        entry["subresources"] = subs
    return entry


def _aggregated_group(registry: Registry, group: str, versions: list[str]) -> dict[str, Any]:
    return {
        "metadata": {"name": group, "creationTimestamp": None},
        "versions": [{"version": v, "resources": [
            _aggregated_resource(rt) for rt in sorted(registry.in_group_version(group, v), key=lambda r: r.plural)
        ], "freshness": "Current"} for v in versions],
    }


def aggregated(registry: Registry, legacy_core: bool) -> dict[str, Any]:
    """apidiscovery.k8s.io/v2 APIGroupDiscoveryList for /api (core) or /apis (all groups)."""
    if legacy_core:
        items = [_aggregated_group(registry, "", ["v1"])]
    else:
        items = [_aggregated_group(registry, g, vs) for g, vs in _ordered_groups(registry)]
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items}


def wants_aggregated(accept: str) -> bool:
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")}
        if "as=APIGroupDiscoveryList" in params and "g=apidiscovery.k8s.io" in params and "v=v2" in params:
            return True
    return False
