"""Kubeflow PyTorchJob: a Master and Workers, each role its own template and podSet."""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from batchgate.api.conditions import condition_of
from batchgate.api.paths import Location, get_at
from batchgate.kinds.model import STRICT, Kind, Outcome, PodSet, Reader

GROUP = "kubeflow.org"
VERSION = "v1"
SPECS: Location = ("spec", "pytorchReplicaSpecs")

ROLES: Mapping[str, str] = {"Master": "master", "Worker": "worker"}
"""Replica type -> Kueue's podSet name and the framework role its pods play, master first."""


def _pod_sets(obj: Any, where: str, reader: Reader) -> Iterator[PodSet]:
    for replica_type, role in ROLES.items():
        spec: Location = SPECS + (replica_type,)
        if get_at(obj, spec) is not None:
            yield PodSet(spec + ("template",), reader.count(obj, spec + ("replicas",), where), role)


def _finished(job: Mapping[str, Any]) -> Outcome | None:
    for type_ in ("Succeeded", "Failed"):
        cond = condition_of(job, type_)
        if cond and cond.status == "True":
            return type_, cond.message or f"PyTorchJob {type_.lower()}"
    return None


def _active(job: Mapping[str, Any]) -> bool:
    statuses = (job.get("status") or {}).get("replicaStatuses") or {}
    return any((rs or {}).get("active") for rs in statuses.values())


PYTORCHJOB = Kind(kind="PyTorchJob", group=GROUP, version=VERSION, plural="pytorchjobs", read_pod_sets=_pod_sets,
                  pods_at=SPECS, suspend_path=("spec", "runPolicy", "suspend"), finished=_finished, active=_active)


def training_job_pod_sets(obj: Any, where: str = "") -> tuple[PodSet, ...] | None:
    """The pod sets of another Kubeflow training job (TFJob, MPIJob, XGBoostJob, PaddleJob,
    JAXJob), each role of its `spec.<framework>ReplicaSpecs` in the order written; None for an
    object outside the Kubeflow group. Raises FieldError on bad counts."""
    api_version = obj.get("apiVersion") if isinstance(obj, dict) else None
    if not isinstance(api_version, str) or api_version.partition("/")[0] != GROUP:
        return None
    spec = get_at(obj, ("spec",))
    out = []
    for key, roles in (spec.items() if isinstance(spec, dict) else ()):
        if not (isinstance(key, str) and key.endswith("ReplicaSpecs") and isinstance(roles, dict)):
            continue
        for role in roles:
            at: Location = ("spec", key, role)
            if get_at(obj, at + ("template",)) is not None:
                out.append(PodSet(at + ("template",), STRICT.count(obj, at + ("replicas",), where)))
    return tuple(out)
