"""What to do with a queued job given its Workload: Kueue's job reconciler as a pure function.

Admission runs the job (un-suspend, with the assigned flavors' node labels and tolerations in its
pod templates); eviction stops it, and only once its pods are gone is the quota released; a
finished job finishes its Workload. Each decision is a value carrying the reason users see.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Mapping, Union

from batchgate import keys
from batchgate.api.appwrapper_status import read_appwrapper_state
from batchgate.api.conditions import Condition, condition_of, conditions_of, is_true, merge, to_wire
from batchgate.api.objects import metadata
from batchgate.api.paths import get_at
from batchgate.clock import parse_time
from batchgate.kinds import APPWRAPPER, Kind
from controller.decisions.appwrapper.lifecycle import managed_here
from controller.decisions.quota.admission_status import release_patch
from controller.decisions.jobs.podsets import PodSetSource, reclaimable_pods
from controller.decisions.jobs.workloads import (
    PriorityClasses,
    WorkloadError,
    desired_workload,
    is_queued,
    job_pod_sets,
    pod_sets_match,
)


@dataclass(frozen=True)
class CreateWorkload:
    workload: Mapping[str, Any]
    reason: str = "CreatedWorkload"


@dataclass(frozen=True)
class ReplaceWorkload:
    """The job changed while waiting: the stale Workload goes, a fresh one comes."""

    old_name: str
    workload: Mapping[str, Any]
    reason: str = "UpdatedWorkload"


@dataclass(frozen=True)
class MoveWorkload:
    """The job's queue label changed while its Workload holds no quota: the Workload follows it."""

    workload_name: str
    spec_patch: Mapping[str, Any]  # spec.queueName, guarded by the observed resourceVersion
    message: str
    reason: str = "UpdatedWorkload"


@dataclass(frozen=True)
class StartJob:
    job: Mapping[str, Any]  # the job as it must be written: un-suspended, flavors injected
    message: str
    reason: str = "Started"


@dataclass(frozen=True)
class StopJob:
    job: Mapping[str, Any]  # suspended; its pod templates untouched (they may not change while it runs)
    message: str
    reason: str = "Stopped"


@dataclass(frozen=True)
class RestoreJob:
    """A stopped job's pod templates back as submitted, without the flavor it was admitted with."""

    job: Mapping[str, Any]
    message: str = "Pod templates restored"
    reason: str = "Restored"


@dataclass(frozen=True)
class ReleaseQuota:
    """The evicted job's pods are gone: clear the admission so the quota returns to the queue."""

    workload_name: str
    status_patch: Mapping[str, Any]
    message: str
    reason: str = "QuotaReleased"


@dataclass(frozen=True)
class SetReclaimablePods:
    """Part of the job is done for good: the Workload's quota and gang shrink to the pods left to run."""

    workload_name: str
    status_patch: Mapping[str, Any]
    message: str
    reason: str = "ReclaimablePods"


@dataclass(frozen=True)
class FinishWorkload:
    workload_name: str
    status_patch: Mapping[str, Any]
    message: str
    reason: str  # Succeeded | Failed


@dataclass(frozen=True)
class Invalid:
    message: str
    reason: str = "InvalidJob"


Action = Union[CreateWorkload, ReplaceWorkload, MoveWorkload, StartJob, StopJob, RestoreJob, ReleaseQuota, SetReclaimablePods,
               FinishWorkload, Invalid]


@dataclass(frozen=True)
class PodSetInfo:
    node_selector: Mapping[str, str]
    tolerations: tuple[Mapping[str, Any], ...]


def pod_set_infos(workload: Mapping[str, Any], flavors: Mapping[str, Mapping[str, Any]]) -> dict[str, PodSetInfo]:
    """Node labels and tolerations of the flavors assigned to each podSet."""
    admission = (workload.get("status") or {}).get("admission") or {}
    infos: dict[str, PodSetInfo] = {}
    for assignment in admission.get("podSetAssignments") or []:
        selector: dict[str, str] = {}
        tolerations: list[Mapping[str, Any]] = []
        for flavor_name in sorted(set((assignment.get("flavors") or {}).values())):
            flavor = flavors.get(flavor_name)
            if flavor is None:
                raise WorkloadError(f'ResourceFlavor "{flavor_name}" not found')
            spec = flavor.get("spec") or {}
            selector.update(spec.get("nodeLabels") or {})
            tolerations += [t for t in spec.get("tolerations") or [] if t not in tolerations]
        infos[assignment.get("name", "main")] = PodSetInfo(selector, tuple(tolerations))
    return infos


def _set_path(obj: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    for step in path[:-1]:
        obj = obj.setdefault(step, {}) if isinstance(step, str) else obj[step]
    obj[path[-1]] = value


def started(job: Mapping[str, Any], kind: Kind, sets: list[PodSetSource], infos: Mapping[str, PodSetInfo]) -> dict[str, Any]:
    """The job un-suspended with each podSet's node selector and tolerations merged in.

    An AppWrapper this controller runs also gets its lifecycle's finalizer in the same write: the
    lifecycle must have it before deploying anything, and would otherwise add it with a write of
    its own right after this one (upstream's Suspended step)."""
    out = copy.deepcopy(dict(job))
    _set_path(out, kind.suspend_path, False)
    if kind is APPWRAPPER:
        _write_appwrapper_infos(out, sets, infos)
        finalizers = list(metadata(out).get("finalizers") or [])
        if managed_here(read_appwrapper_state(job)) and keys.APPWRAPPER_FINALIZER not in finalizers:
            out["metadata"]["finalizers"] = [*finalizers, keys.APPWRAPPER_FINALIZER]
        return out
    for ps in sets:
        info = infos.get(ps.name)
        if info is None or ps.path is None:
            continue
        spec = get_at(out, (*ps.path, "spec"))
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **info.node_selector}
        existing = list(spec.get("tolerations") or [])
        spec["tolerations"] = existing + [t for t in info.tolerations if t not in existing]
        if not spec["tolerations"]:
            del spec["tolerations"]
        if not spec["nodeSelector"]:
            del spec["nodeSelector"]
    return out


def _write_appwrapper_infos(aw: dict[str, Any], sets: list[PodSetSource], infos: Mapping[str, PodSetInfo]) -> None:
    """AppWrappers take flavors through `components[i].podSetInfos`, one entry per component podSet."""
    per_component: dict[int, list[dict[str, Any]]] = {}
    for ps in sets:
        assert ps.path is not None
        info = infos.get(ps.name, PodSetInfo({}, ()))
        entry: dict[str, Any] = {}
        if info.node_selector:
            entry["nodeSelector"] = dict(info.node_selector)
        if info.tolerations:
            entry["tolerations"] = [dict(t) for t in info.tolerations]
        per_component.setdefault(int(ps.path[2]), []).append(entry)
    for index, component in enumerate(aw["spec"]["components"]):
        if index in per_component:
            component["podSetInfos"] = per_component[index]


def stopped(job: Mapping[str, Any], kind: Kind) -> dict[str, Any]:
    """The job suspended. Templates are restored in a later step: Kubernetes accepts node selector
    and toleration changes only on a job that is already suspended (Kueue stops in the same order)."""
    out = copy.deepcopy(dict(job))
    _set_path(out, kind.suspend_path, True)
    return out


def restored(job: Mapping[str, Any], kind: Kind, sets: list[PodSetSource],
             workload: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The job's templates with the submitted node selectors and tolerations; None if already so."""
    out = copy.deepcopy(dict(job))
    if kind is APPWRAPPER:
        for component in out["spec"]["components"]:
            component.pop("podSetInfos", None)
        return out if out != job else None
    originals = {ps.get("name"): ps.get("template") or {} for ps in ((workload or {}).get("spec") or {}).get("podSets") or []}
    for ps in sets:
        if ps.path is None or ps.name not in originals:
            continue
        spec = get_at(out, (*ps.path, "spec"))
        original = originals[ps.name].get("spec") or {}
        for field in ("nodeSelector", "tolerations"):
            if original.get(field):
                spec[field] = copy.deepcopy(original[field])
            else:
                spec.pop(field, None)
    return out if out != job else None


def release_quota_patch(workload: Mapping[str, Any], now: str) -> dict[str, Any]:
    """Clear the admission: QuotaReserved/Admitted False, Requeued True after a preemption."""
    return release_patch(workload, parse_time(now)) or {}


def finish_patch(workload: Mapping[str, Any], reason: str, message: str, now: str) -> dict[str, Any]:
    finished = Condition(keys.COND_FINISHED, "True", reason, message)
    return {"status": {"conditions": to_wire(merge(conditions_of(workload), [finished], parse_time(now)))}}


def reclaimable_patch(job: Mapping[str, Any], kind: Kind, workload: Mapping[str, Any]) -> dict[str, Any] | None:
    """`status.reclaimablePods` as the job's progress says, or None when the Workload already says so."""
    wanted = [{"name": name, "count": count} for name, count in sorted(reclaimable_pods(job, kind).items())]
    current = (workload.get("status") or {}).get("reclaimablePods") or []
    if current == wanted:
        return None
    return {"status": {"reclaimablePods": wanted or None}}


def reconcile_job(
    job: Mapping[str, Any],
    kind: Kind,
    workload: Mapping[str, Any] | None,
    *,
    owner: Mapping[str, Any] | None,
    classes: PriorityClasses,
    flavors: Mapping[str, Mapping[str, Any]],
    now: str,
) -> list[Action]:
    """The actions that bring a job and its Workload in line (empty when nothing is to be done)."""
    if not is_queued(job, owner) or metadata(job).get("deletionTimestamp"):
        return []
    try:
        sets = job_pod_sets(job, kind)
        desired = desired_workload(job, kind, classes)
    except WorkloadError as exc:
        return [Invalid(str(exc))]
    suspended = kind.is_suspended(job)
    done = kind.finished(job)
    if done is not None:
        if workload is None or is_true(workload, keys.COND_FINISHED):
            return []
        reason, message = done
        name = workload["metadata"]["name"]
        return [FinishWorkload(name, finish_patch(workload, reason, message, now), message, reason)]
    if workload is None:
        actions: list[Action] = []
        if not suspended:
            actions.append(StopJob(stopped(job, kind), "Not admitted by cluster queue"))
        return [*actions, CreateWorkload(desired)]
    if is_true(workload, keys.COND_FINISHED):
        return []
    reclaim = reclaimable_patch(job, kind, workload)
    shrink: list[Action] = []
    if reclaim is not None:
        counts = ", ".join(f"{r['name']}: {r['count']}" for r in reclaim["status"]["reclaimablePods"] or []) or "none"
        shrink.append(SetReclaimablePods(workload["metadata"]["name"], reclaim, f"Reclaimable pods: {counts}"))
    return [*shrink, *_admitted_or_not(job, kind, sets, desired, workload, suspended, flavors, now)]


def _admitted_or_not(job: Mapping[str, Any], kind: Kind, sets: list[PodSetSource], desired: Mapping[str, Any],
                     workload: Mapping[str, Any], suspended: bool, flavors: Mapping[str, Mapping[str, Any]],
                     now: str) -> list[Action]:
    """Run, stop, restore or release a job whose Workload exists and is not finished."""
    reserved = is_true(workload, keys.COND_QUOTA_RESERVED)
    if not reserved and not pod_sets_match(workload, desired):
        return [ReplaceWorkload(workload["metadata"]["name"], desired)]
    moved = [] if reserved or not suspended else _moved(workload, desired)
    evicted = condition_of(workload, keys.COND_EVICTED)
    if evicted is not None and evicted.status == "True":
        if not suspended:
            return [StopJob(stopped(job, kind), evicted.message or "Workload evicted")]
        actions = [*moved, *_restore(job, kind, sets, workload)]
        if reserved and not kind.active(job):
            name = workload["metadata"]["name"]
            actions.append(ReleaseQuota(name, release_quota_patch(workload, now), "Quota released: the job's pods are gone"))
        return actions
    if is_true(workload, keys.COND_ADMITTED):
        if not suspended:
            return []
        try:
            infos = pod_set_infos(workload, flavors)
        except WorkloadError as exc:
            return [Invalid(str(exc))]
        cq = ((workload.get("status") or {}).get("admission") or {}).get("clusterQueue", "")
        return [StartJob(started(job, kind, sets, infos), f'Admitted by clusterQueue {cq}')]
    if not suspended:
        return [StopJob(stopped(job, kind), "Not admitted by cluster queue")]
    return [*moved, *_restore(job, kind, sets, workload)]


def _moved(workload: Mapping[str, Any], desired: Mapping[str, Any]) -> list[Action]:
    """Kueue's QueueNameChange (jobframework reconciler, job suspended and not admitted):
    spec.queueName follows the job's label. Unlike Kueue, an evicted Workload whose quota is
    already released moves too; Kueue leaves it in the old queue until it is admitted again."""
    old, new = (workload.get("spec") or {}).get("queueName"), desired["spec"]["queueName"]
    if old == new:
        return []
    meta = workload["metadata"]
    patch = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "spec": {"queueName": new}}
    return [MoveWorkload(meta["name"], patch, f'Workload moved from LocalQueue "{old}" to "{new}"')]


def _restore(job: Mapping[str, Any], kind: Kind, sets: list[PodSetSource], workload: Mapping[str, Any]) -> list[Action]:
    back = restored(job, kind, sets, workload)
    return [RestoreJob(back)] if back is not None else []
