"""The `/scale` subresource (autoscaling/v1 Scale) of Deployments, ReplicaSets, StatefulSets and
custom resources whose CRD declares it, so `kubectl scale` works as on a real cluster."""

from __future__ import annotations

import copy
from typing import Any

from localcluster.errors import FieldError, invalid
from localcluster.resources import ResourceType

# specReplicasPath, statusReplicasPath, labelSelectorPath (the selector object for built-ins)
_BUILTIN = (".spec.replicas", ".status.replicas", "")


def paths(rt: ResourceType) -> tuple[str, str, str]:
    return rt.scale_paths if not rt.builtin else _BUILTIN


def _get(obj: Any, dotted: str) -> Any:
    for part in [p for p in dotted.split(".") if p]:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def format_selector(selector: Any) -> str:
    """metav1.FormatLabelSelector: `a=b,c in (d,e),!f`."""
    if not isinstance(selector, dict):
        return ""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), ",".join(sorted(expr.get("values") or []))
        parts.append({"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": f"{key}",
                      "DoesNotExist": f"!{key}"}.get(op, ""))
    return ",".join(p for p in parts if p)


def to_scale(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    spec_path, status_path, selector_path = paths(rt)
    meta = obj["metadata"]
    scale_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta}
    if rt.builtin:
        selector = format_selector((obj.get("spec") or {}).get("selector"))
    else:
        selector = _get(obj, selector_path) if selector_path else ""
    status: dict[str, Any] = {"replicas": _get(obj, status_path) or 0}
    if selector:
        status["selector"] = selector
    return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": scale_meta,
            "spec": {"replicas": _get(obj, spec_path) or 0}, "status": status}


def apply_scale(rt: ResourceType, obj: dict[str, Any], scale: Any) -> dict[str, Any]:
    """`obj` with the replicas a Scale asks for; a Scale without a valid count is Invalid."""
    replicas = ((scale or {}).get("spec") or {}).get("replicas") if isinstance(scale, dict) else None
    name = obj["metadata"]["name"]
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise invalid("autoscaling", "Scale", name, [FieldError(
            "Invalid", "spec.replicas", "must be greater than or equal to 0", replicas)])
    rv = ((scale.get("metadata") or {}).get("resourceVersion")) if isinstance(scale, dict) else None
    result = copy.deepcopy(obj)
    target: Any = result
    parts = [p for p in paths(rt)[0].split(".") if p]
    for part in parts[:-1]:
        if target.get(part) is None:
            target[part] = {}
        target = target[part]
        if not isinstance(target, dict):
            raise invalid(rt.group, rt.kind, name, [FieldError(
                "Invalid", paths(rt)[0].strip("."), "the scale subresource's replicas path is not an object path", target)])
    target[parts[-1]] = replicas
    result["metadata"]["resourceVersion"] = rv or obj["metadata"]["resourceVersion"]
    return result
