"""Find a workload's pod templates and the stable names their pods will get.

Only controllers that give each pod a stable index can carry a framework: an Indexed Job (the
Job controller names pod `i` `<job>-<i>` and sets its completion index) and a PyTorchJob (the
training operator names replica `i` of type T `<job>-<t>-<i>`). Anything else that makes pods
is denied, because its pods could not be told apart and would get wrong ranks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from batchgate import keys
from batchgate.kinds import JOB, PYTORCHJOB

from batchgate.frameworks.errors import FrameworkError
from .fields import check_metadata, mapping_at, string_at
from .settings import check_nproc

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
MAX_LABEL = 63

# Kinds whose objects make pods; with no stable index they cannot carry a framework.
_POD_MAKING_KINDS = frozenset(
    {"Pod", "Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "CronJob", "RayCluster",
     "RayJob", "JobSet", "LeaderWorkerSet", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob"}
)


@dataclass(frozen=True)
class JobFill:
    """A Job field the workload phase fills in because a framework job needs it."""

    spec: dict[str, Any]
    field: str
    value: Any
    path: str


@dataclass(frozen=True)
class TemplateGroup:
    """One pod template: where it is, the host prefix and count of its pods, its role label."""

    template: dict[str, Any]
    path: str
    prefix: str
    count: int
    role_label: str | None
    role_label_path: str
    default_role: str | None
    """The role its controller implies (a PyTorchJob's replica type), if any."""
    splittable: bool
    """An Indexed Job template: without a role label, index 0 may lead and the rest work."""
    owner: str
    """The field path of the object whose controller makes these pods ('' for a top-level Job)."""
    owner_kind: str
    nproc_per_node: tuple[str, str] | None = None
    """A PyTorchJob's own `spec.nprocPerNode` and where it is written."""

    @property
    def operator_env(self) -> bool:
        """The training operator puts its own rank env on a PyTorchJob's pods before the gateway sees them."""
        return self.owner_kind == "PyTorchJob"


@dataclass(frozen=True)
class Topology:
    groups: tuple[TemplateGroup, ...]
    fills: tuple[JobFill, ...]


def _map(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FrameworkError(path, "must be an object")
    return value


def _labels(obj: dict[str, Any], base: str) -> dict[str, str]:
    return mapping_at(check_metadata(obj, base), "labels", f"{base}metadata.labels")


def _role_of(template: dict[str, Any], owner: dict[str, Any], path: str, owner_path: str) -> tuple[str | None, str]:
    role = _labels(template, f"{path}.").get(keys.ROLE_LABEL)
    if role is not None:
        return role, f"{path}.metadata.labels[{keys.ROLE_LABEL}]"
    return _labels(owner, owner_path).get(keys.ROLE_LABEL), f"{owner_path}metadata.labels[{keys.ROLE_LABEL}]"


def _name(obj: dict[str, Any], base: str, what: str) -> str:
    name = string_at(check_metadata(obj, base), "name", f"{base}metadata.name")
    if not name:
        raise FrameworkError(f"{base}metadata.name", f"a framework {what} needs a name (its pods' hostnames derive from it)")
    return name


def _int(value: Any, path: str, *, default: int | None = None) -> int | None:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise FrameworkError(path, f"must be a non-negative integer, not {value!r}")
    return value


def check_hostname(name: str, path: str) -> None:
    if len(name) > MAX_LABEL or not _DNS_LABEL.match(name):
        raise FrameworkError(
            path, f"pods would be named {name!r}, which is not a DNS label (a-z, 0-9, '-', at most 63)"
        )


def check_subdomain(name: str, path: str) -> None:
    if len(name) > MAX_LABEL or not _DNS_1035.match(name):
        raise FrameworkError(
            path,
            f"{name!r} cannot name the headless Service of its pods "
            "(a DNS-1035 label: a-z first, then a-z, 0-9, '-', at most 63)",
        )


def _check_pod_spec(template: dict[str, Any], path: str) -> None:
    spec = _map(template.get("spec"), f"{path}.spec")
    string_at(spec, "subdomain", f"{path}.spec.subdomain")
    if string_at(spec, "hostname", f"{path}.spec.hostname"):
        raise FrameworkError(
            f"{path}.spec.hostname", "must be empty: batchgate names each pod of a framework job itself"
        )


def indexed_job_group(job: dict[str, Any], base: str) -> tuple[TemplateGroup, list[JobFill]]:
    """The one template of a Job, with the fills that make it an all-at-once Indexed Job."""
    name = _name(job, base, "Job")
    spec = _map(job.get("spec"), f"{base}spec")
    completions = _int(spec.get("completions"), f"{base}spec.completions")
    if not completions:
        raise FrameworkError(f"{base}spec.completions", "an Indexed framework Job needs completions >= 1 (its pod count)")
    _int(spec.get("parallelism"), f"{base}spec.parallelism")
    # The API server defaults completionMode to NonIndexed and parallelism to 1 before any webhook
    # sees the Job, so a value here may not be the user's: every framework Job is made Indexed,
    # with all its ranks running at once (a rank left waiting would hang the others).
    fills = [
        JobFill(spec, field, value, f"{base}spec.{field}")
        for field, value in (("completionMode", "Indexed"), ("parallelism", completions))
        if spec.get(field) != value
    ]
    path = f"{base}spec.template"
    template = _map(spec.get("template"), path)
    _check_pod_spec(template, path)
    role, role_path = _role_of(template, job, path, base)
    group = TemplateGroup(
        template, path, f"{name}-", completions, role, role_path,
        default_role=None, splittable=True, owner=base[:-1], owner_kind="Job",
    )
    return group, fills


def pytorchjob_groups(job: dict[str, Any], base: str) -> list[TemplateGroup]:
    name = _name(job, base, "PyTorchJob")
    spec = _map(job.get("spec"), f"{base}spec")
    specs = _map(spec.get("pytorchReplicaSpecs"), f"{base}spec.pytorchReplicaSpecs")
    nproc = None
    if spec.get("nprocPerNode") is not None:
        nproc_path = f"{base}spec.nprocPerNode"
        nproc = (check_nproc(spec["nprocPerNode"], nproc_path), nproc_path)
    groups = []
    for rtype in sorted(specs, key=lambda t: (t != "Master", t)):
        rpath = f"{base}spec.pytorchReplicaSpecs.{rtype}"
        replica = _map(specs[rtype], rpath)
        count = _int(replica.get("replicas"), f"{rpath}.replicas", default=1)
        path = f"{rpath}.template"
        template = _map(replica.get("template"), path)
        _check_pod_spec(template, path)
        role, role_path = _role_of(template, job, path, base)
        if count:
            prefix = f"{name}-{rtype.lower()}-"
            groups.append(
                TemplateGroup(
                    template, path, prefix, count, role, role_path, default_role=rtype.lower(), splittable=False,
                    owner=base[:-1], owner_kind="PyTorchJob", nproc_per_node=nproc,
                )
            )
    return groups


def job_topology(job: dict[str, Any]) -> Topology:
    group, fills = indexed_job_group(job, "")
    return Topology((group,), tuple(fills))


def appwrapper_topology(aw: dict[str, Any]) -> Topology:
    spec = _map(aw.get("spec"), "spec")
    components = spec.get("components")
    if not isinstance(components, list):
        raise FrameworkError("spec.components", "must be a list")
    groups: list[TemplateGroup] = []
    fills: list[JobFill] = []
    for i, component in enumerate(components):
        base = f"spec.components[{i}].template."
        component = _map(component, f"spec.components[{i}]")
        template = _map(component.get("template"), base[:-1])
        kind = string_at(template, "kind", f"{base}kind")
        string_at(template, "apiVersion", f"{base}apiVersion")  # must be a string
        if JOB.is_kind_of(template):
            group, job_fills = indexed_job_group(template, base)
            groups.append(group)
            fills += job_fills
        elif PYTORCHJOB.is_kind_of(template):
            groups += pytorchjob_groups(template, base)
        elif kind in _POD_MAKING_KINDS or component.get("podSets"):
            raise FrameworkError(
                f"spec.components[{i}].template.kind",
                f"{kind} gives its pods no stable index; a framework AppWrapper may wrap "
                "Indexed Jobs and PyTorchJobs (plus objects without pods)",
            )
        elif keys.ROLE_LABEL in _labels(template, base):
            raise FrameworkError(
                f"{base}metadata.labels[{keys.ROLE_LABEL}]", f"a {kind} has no pods to play a role"
            )
    if not groups:
        raise FrameworkError("spec.components", "a framework AppWrapper needs a component with pods")
    prefixes = [g.prefix for g in groups]
    duplicate = next((p for p in prefixes if prefixes.count(p) > 1), None)
    if duplicate is not None:
        raise FrameworkError("spec.components", f"two pod templates would both name their pods {duplicate}<i>")
    return Topology(tuple(groups), tuple(fills))
