"""Fixed cluster states for the dashboard's rendering tests, and a source that serves one of them."""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any, Iterable

from dashboard.views.digest import Published, digest
from dashboard.views.observed import KINDS, Observed
from tests.controller.check.builders import node
from tests.controller.decisions.trace_builders import T0, at, cluster_queue, flavor, local_queue, workload

GPU = "nvidia.com/gpu"


def observed(objects: Iterable[dict[str, Any]], **options: Any) -> Observed:
    """Objects as informers hold them: grouped by kind, without the kind field a list does not carry."""
    by_kind: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
    for obj in objects:
        by_kind[obj["kind"]].append({k: v for k, v in obj.items() if k != "kind"})
    return Observed({k: tuple(v) for k, v in by_kind.items()}, **options)


class FixedSource:
    """One published digest that never changes: what a page shows for a given cluster state."""

    def __init__(self, state: Observed, now: _dt.datetime = T0) -> None:
        self.published = Published(1, digest(state, now))

    def wait_newer(self, version: int, timeout: float) -> Published:
        return self.published


def pod(name: str, *, ns: str = "ns", node_name: str = "", gpus: int = 0, phase: str = "Running",
        appwrapper: str = "") -> dict[str, Any]:
    requests = {GPU: str(gpus)} if gpus else {}
    labels = {"workload.codeflare.dev/appwrapper": appwrapper} if appwrapper else {}
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"kind": "Pod", "metadata": {"namespace": ns, "name": name, "labels": labels}, "spec": spec,
            "status": {"phase": phase}}


def appwrapper(name: str, *, ns: str = "ns", phase: str = "", resets: int = 0,
               conditions: list[dict[str, str]] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"resettingCount": resets, "conditions": conditions or []}
    if phase:
        status["phase"] = phase
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": f"{name}-job"}, "spec": {}}
    return {"kind": "AppWrapper", "apiVersion": "workload.codeflare.dev/v1beta2",
            "metadata": {"namespace": ns, "name": name, "labels": {"kueue.x-k8s.io/queue-name": "lq"},
                         "creationTimestamp": at(0)},
            "spec": {"components": [{"template": job}]}, "status": status}


def event(for_appwrapper: str, reason: str, message: str, seconds: float, *, ns: str = "ns") -> dict[str, Any]:
    return {"kind": "Event", "metadata": {"namespace": ns, "name": f"{for_appwrapper}.{reason}.{seconds}"},
            "involvedObject": {"kind": "AppWrapper", "namespace": ns, "name": for_appwrapper},
            "type": "Normal", "reason": reason, "message": message, "lastTimestamp": at(seconds)}


def audit_line(user: str, name: str, allowed: bool, *, code: int = 200, patch: bool = False, ts: str = "") -> str:
    return json.dumps({"ts": ts or at(0), "uid": "u", "operation": "CREATE",
                       "kind": "workload.codeflare.dev/v1beta2/AppWrapper", "namespace": "ns", "name": name,
                       "user": user, "groups": [], "allowed": allowed, "code": code,
                       "reason": "" if allowed else "KindNotAllowed", "message": "" if allowed else "no bare Pods",
                       "patch": [{"op": "add", "path": "/x"}] if patch else []})


def team_queues(pending: int = 0, admitted_cpu: int = 0) -> list[dict[str, Any]]:
    """Two ClusterQueues in a cohort; `pending` Workloads of 1 cpu wait in team a's LocalQueue."""
    objects = [flavor(), cluster_queue("a", cpu=4, cohort="c"), cluster_queue("b", cpu=4, cohort="c"),
               local_queue("lq", "a", ns="ta"), local_queue("lq", "b", ns="tb"),
               node("n1", gpus=8), node("n2", gpus=8, cordoned=True)]
    if admitted_cpu:
        objects.append(workload("big", ns="ta", admitted_to="a", cpu=admitted_cpu))
    objects += [workload(f"w{i:05d}", ns="ta", created=i, cpu=9) for i in range(pending)]
    return objects
