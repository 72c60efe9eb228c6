"""The Workload a queued job needs: its name, podSets, priority and queue (Kueue's job framework).

A job is *queued* when it carries a queue label and no queued object controls it (the children
an AppWrapper creates are admitted with their parent, never on their own). The Workload is owned
by the job, so deleting the job lets garbage collection delete the Workload.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Mapping

from batchgate import keys
from batchgate.api.objects import controller_owner, metadata
from batchgate.kinds import Kind, QUEUED
from controller.decisions.jobs.pod_requests import PodSpecError, pod_requests, with_limits_as_requests
from controller.decisions.jobs.podsets import PodSetError, PodSetSource, pod_sets

WORKLOAD_PRIORITY_CLASS_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"
POD_PRIORITY_CLASS_SOURCE = "scheduling.k8s.io/priorityclass"
MAX_NAME_LENGTH = 253
HASH_LENGTH = 5


class WorkloadError(ValueError):
    """Why no Workload can be built for a job (shown to the user as a Warning event)."""


@dataclass(frozen=True)
class PriorityClasses:
    """The priority vocabulary of the cluster, read from WorkloadPriorityClasses and PriorityClasses."""

    workload: Mapping[str, int] = field(default_factory=dict)
    pod: Mapping[str, int] = field(default_factory=dict)
    global_default: str | None = None  # the PriorityClass with globalDefault: true


@dataclass(frozen=True)
class Priority:
    value: int
    class_name: str = ""
    source: str = ""


def queue_name(job: Mapping[str, Any]) -> str | None:
    """The LocalQueue a job asks for: the label, else the deprecated annotation of the same key."""
    meta = metadata(job)
    name = (meta.get("labels") or {}).get(keys.QUEUE_NAME_LABEL)
    name = name or (meta.get("annotations") or {}).get(keys.QUEUE_NAME_LABEL)
    return name or None


def owner_kind(ref: Mapping[str, Any]) -> Kind | None:
    kind = QUEUED.get(str(ref.get("kind")))
    return kind if kind and kind.api_version == ref.get("apiVersion") else None


def is_queued(job: Mapping[str, Any], owner: Mapping[str, Any] | None) -> bool:
    """Queue label present and no queued controller owner.

    `owner` is the controller owner object when it is a queueable kind and already observed.
    A job whose queueable owner has not been seen yet is not queued: it waits for its parent.
    """
    if queue_name(job) is None:
        return False
    ref = controller_owner(job)
    if ref is None or owner_kind(ref) is None:
        return True
    return owner is not None and queue_name(owner) is None


def workload_name(kind: Kind, job_name: str, job_uid: str) -> str:
    """`<kind>-<job name>-<5 hex>`, the hash over kind, group, name and uid as Kueue computes it."""
    digest = hashlib.sha1(f"{kind.kind}\n{kind.group}\n{job_name}\n{job_uid}".encode()).hexdigest()
    prefix = f"{kind.kind.lower()}-{job_name}"[: MAX_NAME_LENGTH - HASH_LENGTH - 1]
    return f"{prefix}-{digest[:HASH_LENGTH]}"


def resolve_priority(job: Mapping[str, Any], sets: list[PodSetSource], classes: PriorityClasses) -> Priority:
    """Label -> WorkloadPriorityClass; else the pods' PriorityClass; else the global default; else 0."""
    label = (metadata(job).get("labels") or {}).get(keys.PRIORITY_CLASS_LABEL)
    if label:
        if label not in classes.workload:
            raise WorkloadError(f'workload priority class "{label}" not found')
        return Priority(classes.workload[label], label, WORKLOAD_PRIORITY_CLASS_SOURCE)
    for ps in sets:
        pod_class = (ps.template.get("spec") or {}).get("priorityClassName")
        if pod_class:
            if pod_class not in classes.pod:
                raise WorkloadError(f'priority class "{pod_class}" not found')
            return Priority(classes.pod[pod_class], pod_class, POD_PRIORITY_CLASS_SOURCE)
    if classes.global_default and classes.global_default in classes.pod:
        name = classes.global_default
        return Priority(classes.pod[name], name, POD_PRIORITY_CLASS_SOURCE)
    return Priority(0)


def job_pod_sets(job: Mapping[str, Any], kind: Kind) -> list[PodSetSource]:
    """The job's podSets, with every pod spec checked to have readable resources."""
    try:
        sets = pod_sets(job, kind)
        for ps in sets:
            pod_requests(ps.template["spec"], f"podSets[{ps.name}].template.spec")
    except (PodSetError, PodSpecError) as exc:
        raise WorkloadError(str(exc)) from None
    return sets


def _template_for_workload(template: Mapping[str, Any]) -> dict[str, Any]:
    adjusted = with_limits_as_requests(template)
    meta = metadata(adjusted)
    kept = {k: meta[k] for k in ("labels", "annotations") if meta.get(k)}
    return {"metadata": kept, "spec": adjusted["spec"]} if kept else {"spec": adjusted["spec"]}


def desired_workload(
    job: Mapping[str, Any], kind: Kind, classes: PriorityClasses
) -> dict[str, Any]:
    """The Workload object for a queued job; WorkloadError says why there can be none."""
    meta = metadata(job)
    name, namespace, uid = meta.get("name"), meta.get("namespace"), meta.get("uid")
    if not (name and namespace and uid):
        raise WorkloadError("metadata: name, namespace and uid are required")
    sets = job_pod_sets(job, kind)
    priority = resolve_priority(job, sets, classes)
    spec: dict[str, Any] = {
        "podSets": [
            {"name": ps.name, "count": ps.count, "template": _template_for_workload(ps.template)} for ps in sets
        ],
        "queueName": queue_name(job),
        "priority": priority.value,
    }
    if priority.class_name:
        spec["priorityClassName"] = priority.class_name
        spec["priorityClassSource"] = priority.source
    return {
        "apiVersion": keys.KUEUE_API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": workload_name(kind, name, uid),
            "namespace": namespace,
            "labels": {keys.JOB_UID_LABEL: uid},
            "ownerReferences": [
                {
                    "apiVersion": kind.api_version,
                    "kind": kind.kind,
                    "name": name,
                    "uid": uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
    }


def pod_sets_match(workload: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Same podSet names and counts: a suspended job edited since has to get a fresh Workload."""
    def shape(obj: Mapping[str, Any]) -> list[tuple[Any, Any]]:
        return [(ps.get("name"), ps.get("count")) for ps in (obj.get("spec") or {}).get("podSets") or []]

    return shape(workload) == shape(desired)
