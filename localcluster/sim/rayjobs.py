"""The KubeRay operator's RayJob reconcile (K8sJobMode), reduced to a pure step.

After ray-project/kuberay ray-operator/controllers/ray/rayjob_controller.go: a new RayJob gets its
`rayClusterName` (`<rayjob>-xxxxx`, or the cluster its `clusterSelector` names) and `jobId`, and
goes Initializing; its RayCluster is made from `rayClusterSpec`, owned by the RayJob; once the
cluster is `ready`, the submitter Job `<rayjob>` is made (the `submitterPodTemplate`, or KubeRay's
default `ray job submit` pod on the head's image) and the RayJob is Running. The submitter's
outcome decides: Complete with jobStatus SUCCEEDED, or Failed (reason AppFailed) with FAILED. With
`shutdownAfterJobFinishes` the cluster is deleted `ttlSecondsAfterFinished` after the end.
`spec.suspend` goes Suspending (cluster and submitter deleted) then Suspended, and back to New
when unsuspended. New is KubeRay's empty status (`JobDeploymentStatusNew = ""`, omitted from the
object), so a user never reads "New" from kubectl. A selector naming no cluster waits with a
`RayClusterNotFound` Warning.

The stand-in has no Ray runtime: the job's run is the submitter pod's run, so the behaviour
annotation of the submitter template (or, for the default submitter, of the RayJob itself) says
how the job ends.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
from dataclasses import dataclass, field
from typing import Any, Mapping

from localcluster.sim.behavior import BEHAVIOR_ANNOTATION
from localcluster.sim.conditions import Event, controller_ref, find
from localcluster.sim.rayclusters import head_service_name
from localcluster.sim.units import format_time, parse_time

SELECTOR_KEY = "ray.io/cluster"
ORIGIN_CRD_LABEL = "ray.io/originated-from-crd"
ORIGIN_NAME_LABEL = "ray.io/originated-from-cr-name"
SUBMITTER_BACKOFF_LIMIT = 2
SUBMITTER_RESOURCES = {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "200Mi"}}
DASHBOARD_PORT = 8265
POLL = dt.timedelta(seconds=3)
_SAFE = "bcdfghjklmnpqrstvwxz2456789"

Obj = Mapping[str, Any]


@dataclass
class RayJobStep:
    status: dict[str, Any]
    create_cluster: dict[str, Any] | None = None
    delete_cluster: str | None = None
    create_job: dict[str, Any] | None = None
    delete_job: str | None = None
    events: list[Event] = field(default_factory=list)
    requeue_after: dt.timedelta | None = None


def _new(status: dict[str, Any]) -> dict[str, Any]:
    """The status back at New: KubeRay's New is the empty string, which the API omits."""
    return {k: v for k, v in status.items() if k != "jobDeploymentStatus"}


def reconcile_rayjob(rayjob: Obj, cluster: Obj | None, submitter: Obj | None, now: dt.datetime) -> RayJobStep:
    """One step, from the RayJob, its RayCluster (by `status.rayClusterName`) and its submitter Job."""
    spec = rayjob.get("spec") or {}
    status = dict(rayjob.get("status") or {})
    phase = status.get("jobDeploymentStatus") or "New"
    step = RayJobStep(status)
    if phase == "New":
        step.status = _initial(rayjob, status, now)
        return step
    if phase in ("Initializing", "Running") and spec.get("suspend") is True:
        step.status = {**status, "jobDeploymentStatus": "Suspending"}
        return step
    if phase == "Initializing":
        return _initializing(rayjob, cluster, submitter, status, step)
    if phase == "Running":
        return _running(rayjob, submitter, status, step, now)
    if phase == "Suspending":
        return _suspending(rayjob, cluster, submitter, status, step)
    if phase == "Suspended":
        if spec.get("suspend") is not True:
            step.status = _new(status)
        return step
    if phase in ("Complete", "Failed"):
        return _finished(rayjob, cluster, status, step, now)
    return step


def _initial(rayjob: Obj, status: dict[str, Any], now: dt.datetime) -> dict[str, Any]:
    spec, name = rayjob.get("spec") or {}, rayjob["metadata"]["name"]
    selected = (spec.get("clusterSelector") or {}).get(SELECTOR_KEY)
    suffix = _suffix(str(rayjob["metadata"].get("uid", name)) + str(status.get("startTime", "")) + format_time(now))
    out = {k: v for k, v in status.items() if k not in ("endTime", "reason", "message")}
    out.update(jobDeploymentStatus="Initializing", jobStatus="", startTime=format_time(now),
               jobId=status.get("jobId") or f"{name}-{suffix}",
               rayClusterName=selected or f"{name}-{suffix}")
    return out


def _initializing(rayjob: Obj, cluster: Obj | None, submitter: Obj | None, status: dict[str, Any],
                  step: RayJobStep) -> RayJobStep:
    meta = rayjob["metadata"]
    cluster_name = status["rayClusterName"]
    if cluster is None:
        if _selects(rayjob):
            message = (f"RayCluster {meta.get('namespace', '')}/{cluster_name} set in the clusterSelector is not found. "
                       "It must be created manually")
            if status.get("message") != message:
                step.events.append(Event("Warning", "RayClusterNotFound", message))
            step.status = {**status, "message": message}
            step.requeue_after = POLL
            return step
        step.create_cluster = _cluster(rayjob, cluster_name)
        return step
    if (cluster.get("status") or {}).get("state") != "ready":
        return step
    if submitter is None:
        step.create_job = _submitter(rayjob, cluster)
    step.status = {**{k: v for k, v in status.items() if k != "message"}, "jobDeploymentStatus": "Running",
                   "jobStatus": "PENDING", "dashboardURL": f"{head_service_name(cluster_name)}."
                   f"{meta.get('namespace', '')}.svc.cluster.local:{DASHBOARD_PORT}"}
    return step


def _running(rayjob: Obj, submitter: Obj | None, status: dict[str, Any], step: RayJobStep,
             now: dt.datetime) -> RayJobStep:
    if submitter is None:
        return step  # deleted under us: KubeRay waits for the job status too
    conditions = (submitter.get("status") or {}).get("conditions") or []
    complete, failed = find(conditions, "Complete"), find(conditions, "Failed")
    if complete is not None and complete.get("status") == "True":
        step.status = {**status, "jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED", "endTime": format_time(now)}
    elif failed is not None and failed.get("status") == "True":
        message = f"The submitter Job failed: {failed.get('reason', '')} {failed.get('message', '')}".strip()
        step.status = {**status, "jobDeploymentStatus": "Failed", "jobStatus": "FAILED", "reason": "AppFailed",
                       "message": message, "endTime": format_time(now)}
    elif (submitter.get("status") or {}).get("active"):
        step.status = {**status, "jobStatus": "RUNNING"}
    return step


def _suspending(rayjob: Obj, cluster: Obj | None, submitter: Obj | None, status: dict[str, Any],
                step: RayJobStep) -> RayJobStep:
    if cluster is not None and not _selects(rayjob):
        step.delete_cluster = cluster["metadata"]["name"]
    if submitter is not None:
        step.delete_job = submitter["metadata"]["name"]
    if step.delete_cluster or step.delete_job:
        return step
    suspended = (rayjob.get("spec") or {}).get("suspend") is True
    step.status = {**status, "jobDeploymentStatus": "Suspended", "jobStatus": ""} if suspended else \
        _new({**status, "jobStatus": ""})
    return step


def _finished(rayjob: Obj, cluster: Obj | None, status: dict[str, Any], step: RayJobStep,
              now: dt.datetime) -> RayJobStep:
    spec = rayjob.get("spec") or {}
    if cluster is None or _selects(rayjob) or spec.get("shutdownAfterJobFinishes") is not True:
        return step
    ttl = dt.timedelta(seconds=max(int(spec.get("ttlSecondsAfterFinished") or 0), 0))
    ended = parse_time(status["endTime"]) if status.get("endTime") else now
    if now < ended + ttl:
        step.requeue_after = ended + ttl - now
        return step
    step.delete_cluster = cluster["metadata"]["name"]
    step.events.append(Event("Normal", "DeletedRayCluster",
                             f"Deleted cluster {rayjob['metadata'].get('namespace', '')}/{cluster['metadata']['name']}"))
    return step


def _cluster(rayjob: Obj, name: str) -> dict[str, Any]:
    meta = rayjob["metadata"]
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": name, "namespace": meta.get("namespace", ""),
                         "labels": {**(meta.get("labels") or {}), ORIGIN_CRD_LABEL: "RayJob",
                                    ORIGIN_NAME_LABEL: meta["name"]},
                         "ownerReferences": [controller_ref(rayjob)]},
            "spec": copy.deepcopy((rayjob.get("spec") or {}).get("rayClusterSpec") or {})}


def _submitter(rayjob: Obj, cluster: Obj) -> dict[str, Any]:
    meta, spec = rayjob["metadata"], rayjob.get("spec") or {}
    template = copy.deepcopy(spec.get("submitterPodTemplate") or _default_submitter(rayjob, cluster))
    template.setdefault("spec", {}).setdefault("restartPolicy", "Never")
    backoff = ((spec.get("submitterConfig") or {}).get("backoffLimit"))
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": meta["name"], "namespace": meta.get("namespace", ""),
                         "labels": {ORIGIN_CRD_LABEL: "RayJob", ORIGIN_NAME_LABEL: meta["name"],
                                    "ray.io/job-submission-mode": "K8sJobMode"},
                         "ownerReferences": [controller_ref(rayjob)]},
            "spec": {"backoffLimit": backoff if isinstance(backoff, int) else SUBMITTER_BACKOFF_LIMIT,
                     "template": template}}


def _default_submitter(rayjob: Obj, cluster: Obj) -> dict[str, Any]:
    spec, status = rayjob.get("spec") or {}, rayjob.get("status") or {}
    head = (((cluster.get("spec") or {}).get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}
    image = next((c.get("image") for c in head.get("containers") or [] if c.get("image")), "rayproject/ray")
    address = f"http://{head_service_name(cluster['metadata']['name'])}:{DASHBOARD_PORT}"
    command = ["ray", "job", "submit", "--address", address, "--submission-id", str(status.get("jobId", "")),
               "--", str(spec.get("entrypoint", ""))]
    behavior = (rayjob["metadata"].get("annotations") or {}).get(BEHAVIOR_ANNOTATION)
    metadata = {"annotations": {BEHAVIOR_ANNOTATION: behavior}} if behavior else {}
    return {"metadata": metadata, "spec": {"restartPolicy": "Never", "containers": [
        {"name": "ray-job-submitter", "image": image, "command": command,
         "resources": copy.deepcopy(SUBMITTER_RESOURCES)}]}}


def _selects(rayjob: Obj) -> bool:
    return bool(((rayjob.get("spec") or {}).get("clusterSelector") or {}).get(SELECTOR_KEY))


def _suffix(seed: str) -> str:
    digest = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big")
    out = ""
    while len(out) < 5:
        digest, rem = divmod(digest, len(_SAFE))
        out += _SAFE[rem]
    return out
