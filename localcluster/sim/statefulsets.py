"""StatefulSet -> pods with stable names, as kube-controller-manager's StatefulSet controller makes them.

What MLBatch workloads rely on (kubernetes pkg/controller/statefulset/stateful_set_control.go,
stateful_set_utils.go, v1.32): pod `i` is `<set>-<i>`, with hostname `<set>-<i>` and subdomain
`spec.serviceName`, the labels `statefulset.kubernetes.io/pod-name`, `apps.kubernetes.io/pod-index`
and `controller-revision-hash`. Ordinals `0..replicas-1` are wanted; higher ones are condemned.
With `podManagementPolicy: OrderedReady` (the default) one pod is created at a time, lowest first,
each only once every lower one is Running and Ready, and condemned pods go highest first, one at a
time, only while every wanted pod is Running and Ready; `Parallel` creates and deletes them all at
once. A pod that Failed or Succeeded is deleted, so that it is made again. Not modelled:
volumeClaimTemplates, rolling updates of the template (pods keep the template they were made with),
ordinals.start and minReadySeconds.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from localcluster.sim.conditions import controlled_by, controller_ref, deleting, ended, running_and_ready
from localcluster.sim.replicasets import template_hash

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"

Obj = Mapping[str, Any]


@dataclass
class StatefulSetStep:
    status: dict[str, Any]
    creates: list[dict[str, Any]] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)


def reconcile_statefulset(sts: Obj, pods: Sequence[Obj]) -> StatefulSetStep:
    """What to create and delete next, and the status to report, from the set's pods as observed."""
    meta, spec = sts["metadata"], sts.get("spec") or {}
    name = meta["name"]
    wanted = max(int(spec.get("replicas", 1)), 0)
    parallel = spec.get("podManagementPolicy") == "Parallel"
    revision = f"{name}-{template_hash(spec.get('template') or {})}"
    by_ordinal = {}
    for pod in pods:
        ordinal = _ordinal(pod, name)
        if ordinal is not None and controlled_by(pod, meta.get("uid", "")):
            by_ordinal[ordinal] = pod
    step = StatefulSetStep({})
    blocked = False
    for ordinal in range(wanted):
        existing = by_ordinal.get(ordinal)
        if existing is None:
            if not blocked:
                step.creates.append(_pod(sts, ordinal, revision))
            blocked = blocked or not parallel
            continue
        if deleting(existing):
            blocked = blocked or not parallel
            continue
        if ended(existing):
            step.deletes.append(existing["metadata"]["name"])  # made again once it is gone
            blocked = blocked or not parallel
            continue
        if not running_and_ready(existing):
            blocked = blocked or not parallel
    condemned = sorted((o for o in by_ordinal if o >= wanted), reverse=True)
    for ordinal in condemned:
        pod = by_ordinal[ordinal]
        if deleting(pod):
            if not parallel:
                break  # one at a time: wait for it to go
            continue
        if blocked and not parallel:
            break
        step.deletes.append(pod["metadata"]["name"])
        if not parallel:
            break
    live = [p for p in by_ordinal.values() if not deleting(p) and p["metadata"]["name"] not in step.deletes]
    ready = sum(1 for p in live if running_and_ready(p))
    current = sum(1 for p in live if (p["metadata"].get("labels") or {}).get(REVISION_LABEL) == revision)
    step.status = {
        "observedGeneration": meta.get("generation", 1),
        "replicas": len(live),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "currentReplicas": current,
        "updatedReplicas": current,
        "currentRevision": revision,
        "updateRevision": revision,
        "collisionCount": 0,
    }
    return step


def _pod(sts: Obj, ordinal: int, revision: str) -> dict[str, Any]:
    meta, spec = sts["metadata"], sts.get("spec") or {}
    template = copy.deepcopy(spec.get("template") or {})
    tmeta = template.get("metadata") or {}
    name = f"{meta['name']}-{ordinal}"
    labels = {**(tmeta.get("labels") or {}), POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal),
              REVISION_LABEL: revision}
    pod_spec = dict(template.get("spec") or {})
    pod_spec["hostname"] = name
    if spec.get("serviceName"):
        pod_spec["subdomain"] = spec["serviceName"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": meta.get("namespace", ""), "labels": labels,
                     "annotations": dict(tmeta.get("annotations") or {}), "ownerReferences": [controller_ref(sts)]},
        "spec": pod_spec,
    }


def _ordinal(pod: Obj, set_name: str) -> int | None:
    name = str((pod.get("metadata") or {}).get("name", ""))
    prefix, _, suffix = name.rpartition("-")
    return int(suffix) if prefix == set_name and suffix.isdigit() and str(int(suffix)) == suffix else None
