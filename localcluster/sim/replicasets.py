"""Deployment -> ReplicaSet -> pods, enough that a user's Deployment gets its pods and reports them.

A Deployment owns one ReplicaSet per pod template, named `<deployment>-<pod-template-hash>`;
the current one is scaled to `replicas` and older ones to zero (the end state of a rollout).
A ReplicaSet keeps `replicas` live pods named `<replicaset>-xxxxx`, removing not-ready then
newest pods first when it has too many.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from localcluster.sim.conditions import controlled_by, controller_ref, deleting, ended, pod_ready

HASH_LABEL = "pod-template-hash"
_SAFE = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet Kubernetes uses for generated suffixes

Obj = Mapping[str, Any]


def template_hash(template: Obj) -> str:
    digest = int.from_bytes(hashlib.sha256(json.dumps(template, sort_keys=True).encode()).digest()[:8], "big")
    out = ""
    while len(out) < 10:
        digest, rem = divmod(digest, len(_SAFE))
        out += _SAFE[rem]
    return out


def _live(pod: Obj) -> bool:
    return not deleting(pod) and not ended(pod)


@dataclass
class ReplicaSetStep:
    status: dict[str, Any]
    creates: list[dict[str, Any]] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)


def reconcile_replicaset(rs: Obj, pods: Sequence[Obj]) -> ReplicaSetStep:
    uid = rs["metadata"].get("uid", "")
    owned = [p for p in pods if controlled_by(p, uid)]
    live = [p for p in owned if _live(p)]
    wanted = int((rs.get("spec") or {}).get("replicas", 1))
    step = ReplicaSetStep({})
    if len(live) > wanted:
        newest_first = sorted(live, key=lambda p: (p.get("metadata") or {}).get("creationTimestamp") or "", reverse=True)
        ranked = sorted(newest_first, key=pod_ready)
        step.deletes = [p["metadata"]["name"] for p in ranked[: len(live) - wanted]]
    elif len(live) < wanted:
        step.creates = [_pod(rs) for _ in range(wanted - len(live))]
    kept = [p for p in live if p["metadata"]["name"] not in step.deletes]
    ready = sum(1 for p in kept if pod_ready(p))
    step.status = {
        "replicas": len(kept),
        "fullyLabeledReplicas": len(kept),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "observedGeneration": rs["metadata"].get("generation", 1),
    }
    return step


def _pod(rs: Obj) -> dict[str, Any]:
    template = copy.deepcopy((rs.get("spec") or {}).get("template") or {})
    tmeta = template.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"{rs['metadata']['name']}-",
            "namespace": rs["metadata"].get("namespace", ""),
            "labels": dict(tmeta.get("labels") or {}),
            "annotations": dict(tmeta.get("annotations") or {}),
            "ownerReferences": [controller_ref(rs)],
        },
        "spec": template.get("spec") or {},
    }


@dataclass
class DeploymentStep:
    status: dict[str, Any]
    create: dict[str, Any] | None = None
    scale: dict[str, int] = field(default_factory=dict)  # ReplicaSet name -> replicas


def _replicas(rs: Obj | None) -> int:
    return int(((rs or {}).get("spec") or {}).get("replicas") or 0)


def _available(rs: Obj | None) -> int:
    return int(((rs or {}).get("status") or {}).get("availableReplicas") or 0)


def _limit(value: Any, total: int, round_up: bool) -> int:
    """An int-or-percent of `total`, as intstr.GetScaledValueFromIntOrPercent."""
    if isinstance(value, str) and value.endswith("%"):
        scaled = int(value[:-1]) * total
        return -(-scaled // 100) if round_up else scaled // 100
    return int(value)


def rolling_step(wanted: int, rolling: Mapping[str, Any], new: Obj | None,
                 old: Sequence[Obj]) -> tuple[int, dict[str, int]]:
    """One step of a RollingUpdate, as kube-controller-manager's rolling.go: the new ReplicaSet
    grows while the total stays within replicas + maxSurge; old ones shrink (unavailable pods
    first, oldest ReplicaSet first) only while replicas - maxUnavailable pods stay available.
    A step that grows the new ReplicaSet scales nothing down. Returns the new ReplicaSet's
    replicas and every old one's."""
    surge = _limit(rolling.get("maxSurge", "25%"), wanted, round_up=True)
    unavailable = _limit(rolling.get("maxUnavailable", "25%"), wanted, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1  # as ResolveFenceposts: a rollout must be able to make progress
    counts = {rs["metadata"]["name"]: _replicas(rs) for rs in old}
    new_now = _replicas(new)
    total = new_now + sum(counts.values())
    if new_now > wanted:
        return wanted, counts
    if new_now < wanted:
        grown = new_now + max(0, min(wanted + surge - total, wanted - new_now))
        if grown != new_now or new is None:
            return grown, counts
    min_available = wanted - unavailable
    room = total - min_available - (new_now - _available(new))
    for rs in old:  # old pods that are not available go first: they serve nothing
        cut = min(room, counts[rs["metadata"]["name"]] - _available(rs))
        if cut > 0:
            counts[rs["metadata"]["name"]] -= cut
            room -= cut
    available = _available(new) + sum(min(_available(rs), counts[rs["metadata"]["name"]]) for rs in old)
    down = available - min_available
    for rs in old:
        cut = min(counts[rs["metadata"]["name"]], max(down, 0))
        counts[rs["metadata"]["name"]] -= cut
        down -= cut
    return new_now, counts


def reconcile_deployment(deployment: Obj, replicasets: Sequence[Obj]) -> DeploymentStep:
    meta = deployment["metadata"]
    spec = deployment.get("spec") or {}
    wanted = int(spec.get("replicas", 1))
    template = spec.get("template") or {}
    digest = template_hash(template)
    name = f"{meta['name']}-{digest}"
    owned = [rs for rs in replicasets if controlled_by(rs, meta.get("uid", ""))]
    step = DeploymentStep({})
    current = next((rs for rs in owned if rs["metadata"]["name"] == name), None)
    old = sorted((rs for rs in owned if rs is not current), key=lambda rs: rs["metadata"].get("creationTimestamp", ""))
    recreate = (spec.get("strategy") or {}).get("type") == "Recreate"
    if recreate:
        new_count, old_counts = wanted, {rs["metadata"]["name"]: 0 for rs in old}
    else:
        new_count, old_counts = rolling_step(wanted, (spec.get("strategy") or {}).get("rollingUpdate") or {},
                                             current, old)
    if current is None:
        labels = {**((template.get("metadata") or {}).get("labels") or {}), HASH_LABEL: digest}
        new_template = copy.deepcopy(dict(template))
        new_template.setdefault("metadata", {})["labels"] = labels
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[HASH_LABEL] = digest
        step.create = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": meta.get("namespace", ""), "labels": labels,
                         "annotations": {"deployment.kubernetes.io/revision": str(len(owned) + 1)},
                         "ownerReferences": [controller_ref(deployment)]},
            "spec": {"replicas": new_count, "selector": selector, "template": new_template},
        }
    elif _replicas(current) != new_count:
        step.scale[name] = new_count
    step.scale.update({rs_name: n for rs_name, n in old_counts.items()
                       if n != _replicas(next(rs for rs in old if rs["metadata"]["name"] == rs_name))})
    totals = {k: sum(int((rs.get("status") or {}).get(k) or 0) for rs in owned) for k in ("replicas", "readyReplicas", "availableReplicas")}
    updated = int(((current or {}).get("status") or {}).get("replicas") or 0)
    available = totals["availableReplicas"] >= wanted
    step.status = {
        "observedGeneration": meta.get("generation", 1),
        "replicas": totals["replicas"],
        "updatedReplicas": updated,
        "readyReplicas": totals["readyReplicas"],
        "availableReplicas": totals["availableReplicas"],
        "unavailableReplicas": max(wanted - totals["availableReplicas"], 0),
        "conditions": [
            {"type": "Available", "status": "True" if available else "False",
             "reason": "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
             "message": "Deployment has minimum availability." if available else "Deployment does not have minimum availability."},
            {"type": "Progressing", "status": "True",
             "reason": "NewReplicaSetAvailable" if updated >= wanted and available else "ReplicaSetUpdated",
             "message": f'ReplicaSet "{name}" has successfully progressed.' if updated >= wanted and available
             else f'ReplicaSet "{name}" is progressing.'},
        ],
    }
    return step
