"""KubeRay RayJob: a RayCluster under `spec.rayClusterSpec`, plus (queued, in K8sJobMode) the
submitter pod KubeRay runs to submit the job, which Kueue counts and the AppWrapper does not."""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from batchgate.api.paths import Location, get_at
from batchgate.kinds.model import Kind, Outcome, PodSet, Reader
from batchgate.kinds.raycluster import GROUP, VERSION, cluster_pod_sets

CLUSTER: Location = ("spec", "rayClusterSpec")

DEFAULT_SUBMITTER: Mapping[str, Any] = {
    "spec": {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "ray-job-submitter",
                "resources": {
                    "limits": {"cpu": "1", "memory": "1Gi"},
                    "requests": {"cpu": "500m", "memory": "200Mi"},
                },
            }
        ],
    }
}
"""The submitter pod KubeRay runs for a K8sJobMode RayJob without a submitterPodTemplate."""


def _pod_sets(obj: Any, where: str, reader: Reader) -> Iterator[PodSet]:
    return cluster_pod_sets(obj, CLUSTER, where, reader)


def _queued_pod_sets(obj: Any, where: str, reader: Reader) -> Iterator[PodSet]:
    yield from cluster_pod_sets(obj, CLUSTER, where, reader)
    if (get_at(obj, ("spec", "submissionMode")) or "K8sJobMode") == "K8sJobMode":
        yield PodSet(("spec", "submitterPodTemplate"), 1, "submitter", default=DEFAULT_SUBMITTER)


def _finished(job: Mapping[str, Any]) -> Outcome | None:
    status = job.get("status") or {}
    state = status.get("jobDeploymentStatus")
    if state not in ("Complete", "Failed"):
        return None
    outcome = "Succeeded" if state == "Complete" else "Failed"
    return outcome, status.get("message") or f"RayJob deployment {state.lower()}"


def _active(job: Mapping[str, Any]) -> bool:
    state = (job.get("status") or {}).get("jobDeploymentStatus")
    return state not in (None, "", "New", "Suspended", "Complete", "Failed")


RAYJOB = Kind(kind="RayJob", group=GROUP, version=VERSION, plural="rayjobs", read_pod_sets=_pod_sets,
              pods_at=CLUSTER, suspend_path=("spec", "suspend"), queued_pod_sets=_queued_pod_sets,
              finished=_finished, active=_active)
