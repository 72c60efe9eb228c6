"""Pod CREATE: give one pod of a framework job its host name and the env of its role and index.

Controllers create pods with generateName, so the pod's index comes from what its controller
wrote on it: the Job completion index (annotation or label) or the training operator's replica
index label. A pod whose index is missing or outside the layout is denied: no env is better than
a wrong rank.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from batchgate import keys

from batchgate.frameworks.env import EnvList, framework_env
from batchgate.frameworks.errors import FrameworkError
from .fields import check_metadata, edit_list, edit_map, mapping_at, objects_at, string_at
from batchgate.frameworks.layout import LAYOUT_PATH, Layout, Place, parse_layout
from batchgate.frameworks.objects import hostfile_mount, hostfile_volume, wait_for_workers

_INDEX_SOURCES = (
    ("annotations", keys.JOB_COMPLETION_INDEX_ANNOTATION),
    ("labels", keys.JOB_COMPLETION_INDEX_LABEL),
    ("labels", keys.KUBEFLOW_REPLICA_INDEX_LABEL),
)


@dataclass(frozen=True)
class PodPlan:
    layout: Layout
    place: Place
    env: EnvList


def pod_index(pod: dict[str, Any]) -> int:
    """The pod's index from its controller's labels or annotations; missing or malformed: denied."""
    meta = check_metadata(pod, "")
    for where, key in _INDEX_SOURCES:
        value = mapping_at(meta, where, f"metadata.{where}").get(key)
        if value is None:
            continue
        if not (value.isascii() and value.isdigit()):
            raise FrameworkError(f"metadata.{where}[{key}]", f"must be a non-negative integer, not {value!r}")
        return int(value)
    raise FrameworkError(
        "metadata",
        "a framework pod needs its index: none of "
        + ", ".join(f"{where[:-1]} {key}" for where, key in _INDEX_SOURCES)
        + " is set (was it created by an Indexed Job or a PyTorchJob?)",
    )


def check_pod_shape(pod: dict[str, Any]) -> None:
    """The parts of the pod spec the phase edits must have their API shape (or be absent)."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        raise FrameworkError("spec", "must be an object")
    objects_at(spec, "volumes", "spec.volumes")
    objects_at(spec, "initContainers", "spec.initContainers")
    string_at(spec, "hostname", "spec.hostname")
    string_at(spec, "subdomain", "spec.subdomain")
    for i, container in enumerate(objects_at(spec, "containers", "spec.containers")):
        for j, var in enumerate(objects_at(container, "env", f"spec.containers[{i}].env")):
            string_at(var, "name", f"spec.containers[{i}].env[{j}].name")
        objects_at(container, "volumeMounts", f"spec.containers[{i}].volumeMounts")


def plan_pod(pod: dict[str, Any]) -> PodPlan:
    annotations = mapping_at(check_metadata(pod, ""), "annotations", "metadata.annotations")
    raw = annotations.get(keys.FRAMEWORK_LAYOUT_ANNOTATION)
    if raw is None:
        raise FrameworkError(
            LAYOUT_PATH,
            f"missing: label {keys.FRAMEWORK_LABEL} on a pod is only for pods of an AppWrapper or "
            "Indexed Job that carries it (the gateway lays them out when the workload is created)",
        )
    layout = parse_layout(raw)
    prefix = annotations.get(keys.HOST_PREFIX_ANNOTATION)
    if prefix is None:
        raise FrameworkError(f"metadata.annotations[{keys.HOST_PREFIX_ANNOTATION}]", "missing")
    index = pod_index(pod)
    check_pod_shape(pod)
    place = layout.locate(prefix, index)
    if place is None:
        raise FrameworkError(
            f"metadata.annotations[{keys.HOST_PREFIX_ANNOTATION}]",
            f"the layout has no pod {prefix}{index}",
        )
    return PodPlan(layout, place, framework_env(layout, place))


def _add_env(container: dict[str, Any], env: EnvList) -> tuple[list[str], list[str]]:
    """Append the env the container lacks; return the names added and `NAME (batchgate: value)`
    where the user's (or the training operator's) value differs.

    The user wins. Comparing values keeps the phase idempotent: run again on its own output
    (reinvocation, or validation on the mutated pod) it changes and reports nothing.
    """
    current = edit_list(container, "env")
    present = {var.get("name"): var for var in current}
    kept = [
        f"{name} (batchgate: {value})"
        for name, value in env
        if name in present and (present[name].get("value") != value or "valueFrom" in present[name])
    ]
    added = [name for name, _ in env if name not in present]
    current += [{"name": name, "value": value} for name, value in env if name not in present]
    return added, kept


def apply_pod_plan(pod: dict[str, Any], plan: PodPlan) -> tuple[list[str], list[str]]:
    """Write the plan into the working copy; returns (changes, warnings)."""
    layout, place = plan.layout, plan.place
    spec = pod["spec"]
    warnings: list[str] = []
    hostname = place.slot.hostname(place.offset)
    if not spec.get("hostname"):
        spec["hostname"] = hostname
    elif spec["hostname"] != hostname:
        warnings.append(f"spec.hostname {spec['hostname']!r} is kept, but peers will look for {hostname!r}")
    if not spec.get("subdomain"):
        spec["subdomain"] = place.slot.subdomain
    changes = [f"{layout.framework} {place.role} {place.role_index} (rank {place.rank}) as {place.host}"]
    if layout.framework == "pytorch":
        edit_map(pod["metadata"], "annotations")[keys.RANK_ANNOTATION] = str(place.rank)
    containers = spec.get("containers") or []
    added_to: dict[str, None] = {}
    for container in containers:
        added, kept = _add_env(container, plan.env)
        added_to.update(dict.fromkeys(added))
        if kept:
            warnings.append(f"container {container.get('name', '?')} keeps its own {', '.join(kept)}")
    if added_to:
        changes.append(f"env {', '.join(added_to)} added")
    if layout.framework == "mpi":
        changes += _add_mpi_parts(spec, containers, plan)
    return changes, warnings


def _add_mpi_parts(spec: dict[str, Any], containers: list[dict[str, Any]], plan: PodPlan) -> list[str]:
    layout, place = plan.layout, plan.place
    volume = hostfile_volume(layout.service)
    volumes = edit_list(spec, "volumes")
    if not any(v.get("name") == volume["name"] for v in volumes):
        volumes.append(volume)
    mount = hostfile_mount(layout)
    for container in containers:
        mounts = edit_list(container, "volumeMounts")
        if not any(m.get("mountPath") == mount["mountPath"] for m in mounts):
            mounts.append(dict(mount))
    changes = [f"hostfile mounted at {layout.hostfile_path}"]
    if place.role == "master":
        init = wait_for_workers(layout)
        existing = edit_list(spec, "initContainers")
        if not any(c.get("name") == init["name"] for c in existing):
            existing.insert(0, init)
            changes.append(f"init container {init['name']} (timeout {layout.wait_timeout_seconds}s)")
    return changes
