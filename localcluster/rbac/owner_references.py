"""The OwnerReferencesPermissionEnforcement admission plugin (kubernetes/kubernetes
plugin/pkg/admission/gc/gc_admission.go), on in OpenShift, the platform MLBatch targets.

Whoever sets or changes an object's ownerReferences must be allowed to delete that object; whoever
makes an ownerReference block its owner's deletion (`blockOwnerDeletion: true`, new or flipped
from false) must be allowed to `update` the owner's `finalizers` subresource, by the owner's name.
Without these rights an install that works on a permissive cluster fails on one that enforces
them, which is what a least-privilege role must be tested against.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from localcluster.rbac.rules import Attributes

# The pods/status endpoint is exempt upstream: the pod status strategy keeps ownerReferences.
EXEMPT = {("", "pods", "status")}

# (apiVersion, kind) -> the (group, plural) resources that kind is served as; empty: not served.
Resolve = Callable[[str, str], Sequence[tuple[str, str]]]


def _refs(obj: dict[str, Any] | None) -> list[dict[str, Any]]:
    refs = ((obj or {}).get("metadata") or {}).get("ownerReferences") or []
    return [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []


def _changing(obj: dict[str, Any], old: dict[str, Any] | None) -> bool:
    return bool(_refs(obj)) if old is None else _refs(obj) != _refs(old)


def newly_blocking(obj: dict[str, Any], old: dict[str, Any] | None) -> list[dict[str, Any]]:
    """References that block their owner's deletion and did not before (matched by uid)."""
    before = {r.get("uid"): r for r in _refs(old)}
    return [r for r in _refs(obj) if r.get("blockOwnerDeletion") is True
            and (r.get("uid") not in before or before[r.get("uid")].get("blockOwnerDeletion") is not True)]


def required(target: Attributes, obj: dict[str, Any], old: dict[str, Any] | None,
             resolve: Resolve) -> list[tuple[Attributes | None, str]]:
    """What the writer must be allowed, in order, each with the refusal's wording if not.

    `target` describes the write (group, resource, subresource, namespace, name). An owner kind the
    server does not serve yields `(None, reason)`: refused whatever the writer holds."""
    if (target.api_group, target.resource, target.subresource) in EXEMPT or not _changing(obj, old):
        return []
    delete = Attributes("delete", api_group=target.api_group, resource=target.resource,
                        subresource=target.subresource, namespace=target.namespace, name=target.name)
    needs: list[tuple[Attributes | None, str]] = [(delete, "cannot set an ownerRef on a resource you can't delete")]
    for ref in newly_blocking(obj, old):
        api_version, kind = str(ref.get("apiVersion", "")), str(ref.get("kind", ""))
        served = resolve(api_version, kind)
        if not served:
            needs.append((None, f"cannot set blockOwnerDeletion in this case because cannot find RESTMapping for "
                                f"APIVersion {api_version} Kind {kind}: no matches for kind \"{kind}\""))
        for group, plural in served:
            finalize = Attributes("update", api_group=group, resource=plural, subresource="finalizers",
                                  namespace=target.namespace, name=str(ref.get("name", "")))
            needs.append((finalize, "cannot set blockOwnerDeletion if an ownerReference refers to a resource "
                                    "you can't set finalizers on"))
    return needs
