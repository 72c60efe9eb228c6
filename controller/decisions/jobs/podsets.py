"""Where each queued kind keeps its pod templates, how many pods each makes, and how to suspend it.

Kueue's job integrations name the podSets of a Workload after the job's
roles (`main`, `master`/`worker`, `head`/worker groups/`submitter`, `<appwrapper>-<i>`); the
admission decision later flows back into the very templates found here, so each podSet carries
the path of its template inside the job object.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from batchgate import keys
from batchgate.api.errors import FieldError as ApiFieldError
from batchgate.api.pod_templates import declared_or_inferred

Path = tuple["str | int", ...]


class PodSetError(ValueError):
    """A job whose pod templates cannot be found; the message names the field path."""


@dataclass(frozen=True)
class JobKind:
    """A kind batchgate queues: its API coordinates and where its suspend switch lives."""

    kind: str
    group: str
    version: str
    plural: str
    suspend_path: Path

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


JOB_KINDS: dict[str, JobKind] = {
    kind.kind: kind
    for kind in (
        JobKind("Job", "batch", "v1", "jobs", ("spec", "suspend")),
        JobKind("PyTorchJob", "kubeflow.org", "v1", "pytorchjobs", ("spec", "runPolicy", "suspend")),
        JobKind("RayJob", "ray.io", "v1", "rayjobs", ("spec", "suspend")),
        JobKind("RayCluster", "ray.io", "v1", "rayclusters", ("spec", "suspend")),
        JobKind("AppWrapper", keys.APPWRAPPER_GROUP, keys.APPWRAPPER_VERSION, "appwrappers", ("spec", "suspend")),
    )
}


@dataclass(frozen=True)
class PodSetSource:
    """One podSet of a job: its Workload name, pod count and pod template (with its location)."""

    name: str
    count: int
    template: Mapping[str, Any]
    path: Path | None  # None: a template the job does not spell out (the default Ray submitter)


# The submitter pod KubeRay runs for a K8sJobMode RayJob without a submitterPodTemplate.
DEFAULT_RAY_SUBMITTER: Mapping[str, Any] = {
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


def get_path(obj: Any, path: Path) -> Any:
    for step in path:
        if isinstance(step, int):
            if not isinstance(obj, list) or not 0 <= step < len(obj):
                return None
            obj = obj[step]
        else:
            if not isinstance(obj, Mapping):
                return None
            obj = obj.get(step)
    return obj


def format_path(path: Path) -> str:
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else step)
    return text


def _template(job: Mapping[str, Any], path: Path) -> Mapping[str, Any]:
    value = get_path(job, path)
    if not isinstance(value, Mapping):
        raise PodSetError(f"{format_path(path)}: no pod template")
    if not isinstance(value.get("spec"), Mapping):
        raise PodSetError(f"{format_path(path)}.spec: pod template has no spec")
    return value


def _count(value: Any, field: str, default: int = 1) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PodSetError(f"{field}: must be a non-negative integer, got {value!r}")
    return value


def _job(job: Mapping[str, Any]) -> list[PodSetSource]:
    spec = job.get("spec") or {}
    parallelism = _count(spec.get("parallelism"), "spec.parallelism")
    completions = spec.get("completions")
    count = parallelism if completions is None else min(parallelism, _count(completions, "spec.completions"))
    path: Path = ("spec", "template")
    return [PodSetSource("main", count, _template(job, path), path)]


def _pytorchjob(job: Mapping[str, Any]) -> list[PodSetSource]:
    replica_specs = get_path(job, ("spec", "pytorchReplicaSpecs"))
    if not isinstance(replica_specs, Mapping) or not replica_specs:
        raise PodSetError("spec.pytorchReplicaSpecs: no replica specs")
    out = []
    for role in ("Master", "Worker"):
        if role in replica_specs:
            path: Path = ("spec", "pytorchReplicaSpecs", role, "template")
            count = _count(get_path(replica_specs, (role, "replicas")), f"spec.pytorchReplicaSpecs.{role}.replicas")
            out.append(PodSetSource(role.lower(), count, _template(job, path), path))
    if not out:
        raise PodSetError("spec.pytorchReplicaSpecs: neither Master nor Worker")
    return out


def _ray_cluster(job: Mapping[str, Any], base: Path) -> list[PodSetSource]:
    cluster = get_path(job, base)
    if not isinstance(cluster, Mapping):
        raise PodSetError(f"{format_path(base)}: no Ray cluster spec")
    head: Path = (*base, "headGroupSpec", "template")
    out = [PodSetSource("head", 1, _template(job, head), head)]
    groups = cluster.get("workerGroupSpecs") or []
    if not isinstance(groups, list):
        raise PodSetError(f"{format_path((*base, 'workerGroupSpecs'))}: must be a list")
    for index, group in enumerate(groups):
        where = format_path((*base, "workerGroupSpecs", index))
        name = group.get("groupName") if isinstance(group, Mapping) else None
        if not isinstance(name, str) or not name:
            raise PodSetError(f"{where}.groupName: required")
        count = _count(group.get("replicas"), f"{where}.replicas") * _count(group.get("numOfHosts"), f"{where}.numOfHosts")
        path: Path = (*base, "workerGroupSpecs", index, "template")
        out.append(PodSetSource(name.lower(), count, _template(job, path), path))
    return out


def _rayjob(job: Mapping[str, Any]) -> list[PodSetSource]:
    out = _ray_cluster(job, ("spec", "rayClusterSpec"))
    if (get_path(job, ("spec", "submissionMode")) or "K8sJobMode") == "K8sJobMode":
        path: Path = ("spec", "submitterPodTemplate")
        if get_path(job, path) is None:
            out.append(PodSetSource("submitter", 1, DEFAULT_RAY_SUBMITTER, None))
        else:
            out.append(PodSetSource("submitter", 1, _template(job, path), path))
    return out


def _appwrapper(job: Mapping[str, Any]) -> list[PodSetSource]:
    """One podSet per component podSet (declared, else inferred as the AppWrapper controller does)."""
    components = get_path(job, ("spec", "components"))
    if not isinstance(components, list):
        raise PodSetError("spec.components: must be a list")
    name = get_path(job, ("metadata", "name")) or ""
    out: list[PodSetSource] = []
    for index, component in enumerate(components):
        where: Path = ("spec", "components", index)
        try:
            declared = declared_or_inferred(component, format_path(where))
        except ApiFieldError as exc:
            raise PodSetError(str(exc)) from None
        for pod_set in declared:
            path = (*where, "template", *pod_set.location)
            out.append(PodSetSource(f"{name}-{len(out)}", pod_set.replicas, _template(job, path), path))
    if not out:
        raise PodSetError("spec.components: contains no podspecs")
    return out


_EXTRACTORS = {
    "Job": _job,
    "PyTorchJob": _pytorchjob,
    "RayJob": _rayjob,
    "RayCluster": lambda job: _ray_cluster(job, ("spec",)),
    "AppWrapper": _appwrapper,
}


def pod_sets(job: Mapping[str, Any], kind: JobKind) -> list[PodSetSource]:
    """The podSets of a queued job, in Kueue's order; PodSetError names what is wrong."""
    return _EXTRACTORS[kind.kind](job)


def is_suspended(job: Mapping[str, Any], kind: JobKind) -> bool:
    return get_path(job, kind.suspend_path) is True


def _index_count(text: Any, completions: int) -> set[int]:
    """The indexes below `completions` in a status list such as `0,2-4` (malformed parts are skipped)."""
    out: set[int] = set()
    for part in str(text or "").split(","):
        first, _, last = part.partition("-")
        if not first.strip().isdigit() or (last and not last.strip().isdigit()):
            continue
        out.update(range(int(first), min(int(last or first), completions - 1) + 1))
    return out


def reclaimable_pods(job: Mapping[str, Any], kind: JobKind) -> dict[str, int]:
    """Pods of a job that will never run again, per podSet (Kueue's ReclaimablePods; Jobs only).

    A Job's finished share: succeeded pods, or for an Indexed Job its completed and failed indexes.
    Its podSet counts min(parallelism, completions); once fewer completions remain than that, the
    difference is reclaimable: its quota goes back and its gang shrinks to the pods left to run.
    """
    if kind.kind != "Job":
        return {}
    spec, status = job.get("spec") or {}, job.get("status") or {}
    (main,) = _job(job)
    completions = spec.get("completions")
    completions = main.count if completions is None else _count(completions, "spec.completions")
    if spec.get("completionMode") == "Indexed":
        done = len(_index_count(status.get("completedIndexes"), completions)
                   | _index_count(status.get("failedIndexes"), completions))
    else:
        done = _count(status.get("succeeded"), "status.succeeded", default=0)
    left = max(completions - done, 0)
    return {main.name: main.count - left} if done and left < main.count else {}
