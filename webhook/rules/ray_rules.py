"""Ray shapes the gateway refuses, so a queued RayCluster or RayJob is one KubeRay can run as counted.

KubeRay's own validation (ray-operator utils/validation.go ValidateRayClusterSpec) refuses a
cluster without a head container, a worker group without containers, and negative or crossed
min/max replicas; such an object would sit queued or admitted with nothing running. A worker
group whose `replicas` lies outside `minReplicas..maxReplicas` is refused too, though KubeRay
would clamp it: Kueue counts `replicas` against the quota (its RayCluster integration), so the
quota held and the pods run would disagree. Kueue's own RayCluster webhook refuses in-tree
autoscaling for a queued cluster, for the same reason: the pods would no longer be the ones counted.
"""

from __future__ import annotations

from typing import Any, Mapping

from batchgate.api.errors import FieldError
from batchgate.api.paths import format_steps, get_at
from batchgate.kinds import RAYCLUSTER, RAYJOB, raycluster, rayjob

RAY_KINDS = {RAYCLUSTER.qualified: raycluster.CLUSTER, RAYJOB.qualified: rayjob.CLUSTER}
"""Where each Ray kind keeps its cluster spec."""
INT32_MAX = 2**31 - 1


def ray_shape_errors(kind: str, obj: Any, prefix: str = "") -> list[FieldError]:
    """Every problem of a RayCluster's or RayJob's cluster spec, each with its field path."""
    path = RAY_KINDS.get(kind)
    if path is None or not isinstance(obj, Mapping):
        return []
    spec = get_at(obj, path)
    if kind == RAYJOB.qualified and spec is None and _selects(obj):
        return []  # runs on a cluster someone else made
    where = prefix + format_steps(path)
    if not isinstance(spec, Mapping):
        return [FieldError(where, "a Ray cluster spec is required")]
    errors: list[FieldError] = []
    if spec.get("enableInTreeAutoscaling") is True:
        errors.append(FieldError(f"{where}.enableInTreeAutoscaling",
                                 "a queued Ray cluster cannot autoscale: the quota counts its replicas"))
    head = spec.get("headGroupSpec")
    if not _has_containers(head):
        errors.append(FieldError(f"{where}.headGroupSpec.template.spec.containers",
                                 "the head group needs at least one container"))
    groups = spec.get("workerGroupSpecs") or []
    if not isinstance(groups, list):
        return errors + [FieldError(f"{where}.workerGroupSpecs", "must be a list")]
    for index, group in enumerate(groups):
        errors += _group_errors(group, f"{where}.workerGroupSpecs[{index}]")
    return errors


def _group_errors(group: Any, where: str) -> list[FieldError]:
    if not isinstance(group, Mapping):
        return [FieldError(where, "must be a mapping")]
    errors = []
    if not _has_containers(group):
        errors.append(FieldError(f"{where}.template.spec.containers", "a worker group needs at least one container"))
    low, high, replicas = (_int(group.get(k)) for k in ("minReplicas", "maxReplicas", "replicas"))
    for name, value in (("minReplicas", low), ("maxReplicas", high), ("replicas", replicas)):
        if value is not None and value < 0:
            errors.append(FieldError(f"{where}.{name}", f"must not be negative, got {value}"))
    lowest, highest = low or 0, INT32_MAX if high is None else high
    if lowest > highest:
        errors.append(FieldError(f"{where}.minReplicas", f"{lowest} is greater than maxReplicas {highest}"))
    elif replicas is not None and not lowest <= replicas <= highest:
        errors.append(FieldError(f"{where}.replicas", f"{replicas} is outside minReplicas..maxReplicas "
                                 f"({lowest}..{highest}): KubeRay would run a different count than the quota holds"))
    return errors


def _has_containers(group: Any) -> bool:
    template = group.get("template") if isinstance(group, Mapping) else None
    spec = template.get("spec") if isinstance(template, Mapping) else None
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    return isinstance(containers, list) and bool(containers)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _selects(obj: Mapping[str, Any]) -> bool:
    spec = obj.get("spec")
    selector = spec.get("clusterSelector") if isinstance(spec, Mapping) else None
    return isinstance(selector, Mapping) and bool(selector)
