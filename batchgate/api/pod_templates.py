"""Where each supported kind keeps its pod templates, and AppWrapper podSet inference.

Two views of the same knowledge:
- `pod_template_locations(obj)`: every pod template of an object, AppWrapper components at
  their podSet paths included, for the mutations that touch pod templates (scheduler, gang
  label). A Pod is its own template.
- `infer_pod_sets(template)`: upstream's `InferPodSets` for an AppWrapper component: the podSet
  paths (`template...` grammar) and replica counts of the kinds upstream knows.
- `pod_sets_to_declare(template)`: the podSets an AppWrapper must declare for a kind that holds
  pods upstream does not infer (LeaderWorkerSet, Kubeflow's other training jobs), as
  `batchgate wrap` writes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, NamedTuple

from batchgate.api.errors import FieldError, child, type_name
from batchgate.api.objects import api_version_kind
from batchgate.api.paths import Location, format_steps, get_at, parse_podset_path

POD = ("v1", "Pod")
JOB = ("batch/v1", "Job")
DEPLOYMENT = ("apps/v1", "Deployment")
STATEFULSET = ("apps/v1", "StatefulSet")
PYTORCHJOB = ("kubeflow.org/v1", "PyTorchJob")
RAYCLUSTER = ("ray.io/v1", "RayCluster")
RAYJOB = ("ray.io/v1", "RayJob")
JOBSET = ("jobset.x-k8s.io/v1alpha2", "JobSet")
APPWRAPPER = ("workload.codeflare.dev/v1beta2", "AppWrapper")

PYTORCH_REPLICA_TYPES = ("Master", "Worker")


@dataclass(frozen=True)
class PodSet:
    """A podSet: where its pod template is (relative to the object) and how many pods it makes."""

    location: Location
    replicas: int

    @property
    def path(self) -> str:
        """The AppWrapper podSet path: `template` + the location inside the component."""
        return format_steps(("template",) + self.location)


def _join(where: str, steps: Location) -> str:
    inner = format_steps(steps)
    return f"{where}.{inner}" if where and inner and not inner.startswith("[") else f"{where}{inner}"


def _replicas(obj: Any, steps: Location, where: str, default: int = 1) -> int:
    value = get_at(obj, steps)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise FieldError(_join(where, steps), f"must be a non-negative integer, got {value!r}")
    return value


def _job_pods(obj: Any, prefix: Location, where: str) -> int:
    """min(parallelism (default 1), completions if set), as upstream counts a Job's pods."""
    parallelism = _replicas(obj, prefix + ("spec", "parallelism"), where)
    completions = get_at(obj, prefix + ("spec", "completions"))
    if completions is None:
        return parallelism
    return min(parallelism, _replicas(obj, prefix + ("spec", "completions"), where))


def _list_at(obj: Any, steps: Location, where: str) -> list[Any]:
    value = get_at(obj, steps)
    if value is None:
        return []
    if not isinstance(value, list):
        raise FieldError(_join(where, steps), f"must be a list, got {type_name(value)}")
    return value


def _ray_cluster(obj: Any, prefix: Location, where: str) -> Iterator[PodSet]:
    if get_at(obj, prefix + ("headGroupSpec", "template")) is not None:
        yield PodSet(prefix + ("headGroupSpec", "template"), 1)
    for i, _ in enumerate(_list_at(obj, prefix + ("workerGroupSpecs",), where)):
        group: Location = prefix + ("workerGroupSpecs", i)
        # KubeRay makes numOfHosts pods per replica, and Kueue counts them so; upstream's
        # AppWrapper inference leaves the hosts out and under-counts a multi-host group.
        hosts = _replicas(obj, group + ("numOfHosts",), where)
        yield PodSet(group + ("template",), _replicas(obj, group + ("replicas",), where) * hosts)


def _pod(obj: Any, where: str) -> Iterator[PodSet]:
    yield PodSet((), 1)


def _replicated(obj: Any, where: str) -> Iterator[PodSet]:
    yield PodSet(("spec", "template"), _replicas(obj, ("spec", "replicas"), where))


def _job(obj: Any, where: str) -> Iterator[PodSet]:
    yield PodSet(("spec", "template"), _job_pods(obj, (), where))


def _pytorchjob(obj: Any, where: str) -> Iterator[PodSet]:
    for role in PYTORCH_REPLICA_TYPES:
        spec: Location = ("spec", "pytorchReplicaSpecs", role)
        if get_at(obj, spec) is not None:
            yield PodSet(spec + ("template",), _replicas(obj, spec + ("replicas",), where))


def _raycluster(obj: Any, where: str) -> Iterator[PodSet]:
    yield from _ray_cluster(obj, ("spec",), where)


def _rayjob(obj: Any, where: str) -> Iterator[PodSet]:
    yield from _ray_cluster(obj, ("spec", "rayClusterSpec"), where)


def _jobset(obj: Any, where: str) -> Iterator[PodSet]:
    for i, _ in enumerate(_list_at(obj, ("spec", "replicatedJobs"), where)):
        job: Location = ("spec", "replicatedJobs", i)
        count = _replicas(obj, job + ("replicas",), where) * _job_pods(obj, job + ("template",), where)
        yield PodSet(job + ("template", "spec", "template"), count)


_INFERENCE: dict[tuple[str, str], Callable[[Any, str], Iterator[PodSet]]] = {
    POD: _pod,
    DEPLOYMENT: _replicated,
    STATEFULSET: _replicated,
    JOB: _job,
    PYTORCHJOB: _pytorchjob,
    RAYCLUSTER: _raycluster,
    RAYJOB: _rayjob,
    JOBSET: _jobset,
}


LEADERWORKERSET = ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet")
KUBEFLOW_GROUP = "kubeflow.org"


def _leaderworkerset(obj: Any, where: str) -> Iterator[PodSet]:
    """`replicas` groups of `size` pods: a leader and `size - 1` workers; without a leader
    template the worker template makes the leaders too."""
    groups = _replicas(obj, ("spec", "replicas"), where)
    group: Location = ("spec", "leaderWorkerTemplate")
    size = _replicas(obj, group + ("size",), where)
    if get_at(obj, group + ("leaderTemplate",)) is None:
        yield PodSet(group + ("workerTemplate",), groups * size)
        return
    yield PodSet(group + ("leaderTemplate",), groups)
    if size > 1:
        yield PodSet(group + ("workerTemplate",), groups * (size - 1))


def _kubeflow_replicas(obj: Any, where: str) -> Iterator[PodSet]:
    """A Kubeflow training job (TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob): each role of its
    `spec.<framework>ReplicaSpecs`, in the order written."""
    spec = get_at(obj, ("spec",))
    for key, roles in (spec.items() if isinstance(spec, dict) else ()):
        if not (isinstance(key, str) and key.endswith("ReplicaSpecs") and isinstance(roles, dict)):
            continue
        for role in roles:
            at: Location = ("spec", key, role)
            if get_at(obj, at + ("template",)) is not None:
                yield PodSet(at + ("template",), _replicas(obj, at + ("replicas",), where))


def pod_sets_to_declare(obj: Any, where: str = "") -> tuple[PodSet, ...] | None:
    """The podSets to declare for a kind upstream does not infer; () for kinds upstream infers
    (they need none); None for a kind whose pods we cannot count. Raises FieldError on bad shapes."""
    if infer_pod_sets(obj, where) is not None:
        return ()
    api_version, kind = api_version_kind(obj)
    if (api_version, kind) == LEADERWORKERSET:
        return tuple(_leaderworkerset(obj, where))
    if api_version.partition("/")[0] == KUBEFLOW_GROUP:
        return tuple(_kubeflow_replicas(obj, where))
    return None


def find_pod_templates(obj: Any, at: Location = ()) -> Iterator[Location]:
    """Where an object of any kind holds pod templates (mappings whose `spec` lists `containers`)."""
    if isinstance(obj, dict):
        if isinstance(obj.get("spec"), dict) and isinstance(obj["spec"].get("containers"), list):
            yield at
        for key, value in obj.items():
            yield from find_pod_templates(value, at + (key,))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from find_pod_templates(value, at + (i,))


def infer_pod_sets(obj: Any, where: str = "") -> tuple[PodSet, ...] | None:
    """Upstream's podSet inference; None for kinds it does not know. Raises FieldError on bad shapes."""
    infer = _INFERENCE.get(api_version_kind(obj))
    if infer is None:
        return None
    return tuple(infer(obj, where))


class TemplateAt(NamedTuple):
    """A pod template and where it sits in the object (steps from the object's root)."""

    location: Location
    template: dict[str, Any]

    @property
    def path(self) -> str:
        """The location as a field path, e.g. `spec.components[0].template.spec.template`."""
        return format_steps(self.location)


def declared_or_inferred(component: Any, where: str) -> tuple[PodSet, ...]:
    """An AppWrapper component's podSets: the declared ones (paths parsed), else inferred ones.

    Raises FieldError for a malformed component; a kind upstream cannot infer has no podSets.
    """
    if not isinstance(component, dict):
        raise FieldError(where, f"must be a mapping, got {type_name(component)}")
    declared = component.get("podSets") or []
    if not isinstance(declared, list):
        raise FieldError(child(where, "podSets"), f"must be a list, got {type_name(declared)}")
    if not declared:
        return infer_pod_sets(component.get("template"), child(where, "template")) or ()
    out = []
    for i, pod_set in enumerate(declared):
        at = child(child(where, "podSets"), i)
        if not isinstance(pod_set, dict):
            raise FieldError(at, f"must be a mapping, got {type_name(pod_set)}")
        steps = parse_podset_path(pod_set.get("path"), child(at, "path"))
        out.append(PodSet(steps[1:], _replicas(pod_set, ("replicas",), at)))
    return tuple(out)


def pod_template_locations(obj: Any) -> list[TemplateAt]:
    """Every pod template of a supported kind, AppWrapper components included.

    Tolerant: parts that are malformed (templates that are not mappings, bad podSet paths) are
    skipped here, because validation reports them with their field paths.
    """
    if api_version_kind(obj) == APPWRAPPER:
        return _appwrapper_templates(obj)
    out: list[TemplateAt] = []
    for pod_set in _template_steps(obj):
        template = get_at(obj, pod_set.location) if pod_set.location else obj
        if isinstance(template, dict):
            out.append(TemplateAt(pod_set.location, template))
    return out


def _appwrapper_templates(obj: dict[str, Any]) -> list[TemplateAt]:
    components = get_at(obj, ("spec", "components"))
    out: list[TemplateAt] = []
    for i, component in enumerate(components if isinstance(components, list) else []):
        base: Location = ("spec", "components", i, "template")
        try:
            pod_sets = declared_or_inferred(component, format_steps(("spec", "components", i)))
        except FieldError:
            continue
        template = component.get("template")
        for pod_set in pod_sets:
            found = get_at(template, pod_set.location) if pod_set.location else template
            if isinstance(found, dict):
                out.append(TemplateAt(base + pod_set.location, found))
    return out


def _template_steps(obj: Any) -> Iterator[PodSet]:
    """Where the templates of a kind live, whatever its replica fields say (counts are 1)."""
    kind = api_version_kind(obj)
    if kind == POD:
        yield PodSet((), 1)
    elif kind in (DEPLOYMENT, STATEFULSET, JOB):
        yield PodSet(("spec", "template"), 1)
    elif kind == PYTORCHJOB:
        for role in PYTORCH_REPLICA_TYPES:
            yield PodSet(("spec", "pytorchReplicaSpecs", role, "template"), 1)
    elif kind in (RAYCLUSTER, RAYJOB):
        prefix: Location = ("spec",) if kind == RAYCLUSTER else ("spec", "rayClusterSpec")
        yield PodSet(prefix + ("headGroupSpec", "template"), 1)
        groups = get_at(obj, prefix + ("workerGroupSpecs",))
        for i in range(len(groups) if isinstance(groups, list) else 0):
            yield PodSet(prefix + ("workerGroupSpecs", i, "template"), 1)
    elif kind == JOBSET:
        jobs = get_at(obj, ("spec", "replicatedJobs"))
        for i in range(len(jobs) if isinstance(jobs, list) else 0):
            yield PodSet(("spec", "replicatedJobs", i, "template", "spec", "template"), 1)
