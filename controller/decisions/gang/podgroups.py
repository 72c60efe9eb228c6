"""PodGroups: the one a top-level workload needs, and the status the scheduler-plugins controller writes.

The gateway labels the pod templates of a top-level workload `scheduling.x-k8s.io/pod-group:
<workload name>` (docs/rules.md, "Mutations"); the controller then makes that PodGroup, owned by the workload,
with `minMember` = the workload's pods carrying the label that are still to run (a partly
finished Job's gang shrinks with it) and the policy's gang timeout. A
PodGroup of that name the user wrote (MLBatch's job-with-podgroup sample wraps one) is theirs:
never replaced or resized, and an AppWrapper wrapping its own PodGroup gets none from us.

Status follows scheduler-plugins' PodGroup controller (docs/gang.md): "" ->
Pending; Pending -> Scheduling once the group has minMember pods (occupiedBy from the first
pod's owner, scheduleStartTime = now); then counts from pod phases decide Pending / Scheduling /
Running / Failed / Finished, the last two terminal. Two departures keep the status true after a
preemption: the counts are recomputed in Pending too, and pods being deleted are not counted
(upstream counts them, so a torn-down gang whose pods turn Failed on their way out ended Failed,
terminal, still showing a running pod). Because batchgate decides a gang at once
instead of holding pods at Permit, the schedule timeout is read here: a group still short of
minMember placed pods `scheduleTimeoutSeconds` after scheduleStartTime gets a Warning Event and
a fresh scheduleStartTime, and the placement keeps retrying it. A third departure: upstream's
AppWrapper carries its PodGroup as a component, deleted and made again whenever it resets or is
suspended, so the PodGroup we make for an AppWrapper starts over (Pending, counts zeroed) once its
pods are all gone and the AppWrapper will deploy again; a terminal phase would otherwise outlive
the failure it reported.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from batchgate import keys
from batchgate.api import kueue_fields as f
from batchgate.api.objects import controller_owner, metadata
from batchgate.clock import format_time
from batchgate.kinds import Kind
from controller.decisions.gang.placement import GroupSpec
from controller.decisions.gang.node_fit import PodInfo
from controller.decisions.jobs.podsets import PodSetError, pod_sets, reclaimable_pods

__all__ = ["PodGroupInfo", "parse_podgroup", "desired_podgroup", "gang_size", "owned_by", "spec_patch", "StatusDecision",
           "decide_status", "redeploys", "PodSetError", "PENDING", "SCHEDULING", "RUNNING", "FINISHED", "FAILED"]

PENDING, SCHEDULING, RUNNING, FINISHED, FAILED = "Pending", "Scheduling", "Running", "Finished", "Failed"
TERMINAL = (FINISHED, FAILED)
# The AppWrapper phases after which nothing is deployed again.
_APPWRAPPER_DONE = (keys.PHASE_SUCCEEDED, keys.PHASE_FAILED)
REASON_TIMEOUT = "Timeout"


@dataclass(frozen=True)
class PodGroupInfo:
    namespace: str
    name: str
    min_member: int
    created: _dt.datetime | None
    timeout: _dt.timedelta | None  # spec.scheduleTimeoutSeconds; None: the policy's gangTimeout
    phase: str
    schedule_start: _dt.datetime | None
    status: Mapping[str, Any]

    @property
    def spec(self) -> GroupSpec:
        return GroupSpec(self.min_member, self.created)


def parse_podgroup(raw: Mapping[str, Any]) -> PodGroupInfo:
    """A wire PodGroup -> PodGroupInfo; bad input raises FieldError naming the field path."""
    meta = f.mapping(raw.get("metadata"), "metadata", required=True)
    spec = f.mapping(raw.get("spec"), "spec")
    status = f.mapping(raw.get("status"), "status")
    timeout = spec.get("scheduleTimeoutSeconds")
    return PodGroupInfo(
        namespace=f.string(meta.get("namespace"), "metadata.namespace", default=""),
        name=f.string(meta.get("name"), "metadata.name", default=""),
        min_member=f.integer(spec.get("minMember"), "spec.minMember", default=1, minimum=1),
        created=f.timestamp(meta.get("creationTimestamp"), "metadata.creationTimestamp"),
        timeout=None if timeout is None else _dt.timedelta(
            seconds=f.integer(timeout, "spec.scheduleTimeoutSeconds", minimum=0)),
        phase=f.string(status.get("phase"), "status.phase", default=""),
        schedule_start=f.timestamp(status.get("scheduleStartTime"), "status.scheduleStartTime"),
        status=status,
    )


def desired_podgroup(job: Mapping[str, Any], kind: Kind, timeout: _dt.timedelta) -> dict[str, Any] | None:
    """The PodGroup a top-level workload needs, or None (owned by another object, or no labelled pods).

    Raises PodSetError when the workload's pod templates cannot be read.
    """
    if controller_owner(job) is not None:
        return None
    meta = metadata(job)
    name = meta.get("name") or ""
    members = gang_size(job, kind, name)
    if not name or members == 0 or _wraps_podgroup(job, name):
        return None
    return {
        "apiVersion": keys.PODGROUP_API_VERSION, "kind": "PodGroup",
        "metadata": {"name": name, "namespace": meta.get("namespace"), "ownerReferences": [{
            "apiVersion": kind.api_version, "kind": kind.kind, "name": name, "uid": meta.get("uid"),
            "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"minMember": members, "scheduleTimeoutSeconds": int(timeout.total_seconds())},
    }


def gang_size(job: Mapping[str, Any], kind: Kind, group: str) -> int:
    """The pods of `job` in gang `group` still to run: its podSets whose templates carry the
    group's label, less the pods that finished for good (the Workload's reclaimablePods), so a
    partly finished Job's gang is the pods it will still make. Raises PodSetError."""
    reclaim = reclaimable_pods(job, kind)
    return sum(max(s.count - reclaim.get(s.name, 0), 0) for s in pod_sets(job, kind)
               if (metadata(s.template).get("labels") or {}).get(keys.POD_GROUP_LABEL) == group)


def _wraps_podgroup(job: Mapping[str, Any], name: str) -> bool:
    """An AppWrapper that carries the PodGroup itself (MLBatch's job-with-podgroup): its own controller makes it."""
    for component in (job.get("spec") or {}).get("components") or []:
        template = component.get("template") if isinstance(component, Mapping) else None
        if isinstance(template, Mapping) and template.get("kind") == "PodGroup" \
                and metadata(template).get("name") == name:
            return True
    return False


def owned_by(podgroup: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    ref = controller_owner(podgroup)
    return ref is not None and ref.get("uid") == metadata(job).get("uid")


def spec_patch(podgroup: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | None:
    """A merge patch bringing our own PodGroup's spec to the desired one, or None when it matches."""
    current = podgroup.get("spec") or {}
    changed = {k: v for k, v in desired["spec"].items() if current.get(k) != v}
    return {"spec": changed} if changed else None


@dataclass(frozen=True)
class StatusDecision:
    """The `/status` merge patch (None: unchanged), a Warning to record, and when to look again."""

    patch: dict[str, Any] | None
    warning: tuple[str, str] | None = None  # (reason, message)
    requeue_after: _dt.timedelta | None = None


def redeploys(podgroup: Mapping[str, Any], owner: Mapping[str, Any] | None) -> bool:
    """Whether `podgroup` is ours for an AppWrapper that is not done, so it will deploy its gang again."""
    if owner is None or owner.get("kind") != "AppWrapper" or not owned_by(podgroup, owner):
        return False
    return ((owner.get("status") or {}).get("phase") or "") not in _APPWRAPPER_DONE


def decide_status(group: PodGroupInfo, pods: Sequence[PodInfo], now: _dt.datetime,
                  default_timeout: _dt.timedelta, *, restartable: bool = False) -> StatusDecision:
    """The next status of `group` given its pods (those carrying its label in its namespace).

    Pods being deleted are members no more: a preemption's teardown, whose pods turn Failed on
    their way out, would otherwise make the group Failed, terminal, counting pods that are gone.
    `restartable` (see `redeploys`): a terminal group with no pods left starts over, Pending.
    """
    pods = [p for p in pods if not p.deleting]
    if group.phase in TERMINAL:
        if not restartable or pods:
            return StatusDecision(None)
        fresh = {"phase": PENDING, "running": 0, "succeeded": 0, "failed": 0, "occupiedBy": None,
                 "scheduleStartTime": None}
        return StatusDecision({k: v for k, v in fresh.items() if group.status.get(k) != v} or None)
    # The counts are recomputed in every phase; scheduler-plugins only does so past Pending, so a
    # group sent back to Pending kept the running count its departed pods had.
    running = sum(p.phase == "Running" for p in pods)
    succeeded = sum(p.phase == "Succeeded" for p in pods)
    failed = sum(p.phase == "Failed" for p in pods)
    status: dict[str, Any] = {"running": running, "succeeded": succeeded, "failed": failed}
    if group.phase == "":
        status["phase"] = PENDING
    elif group.phase == PENDING:
        if len(pods) >= group.min_member:
            status.update(phase=SCHEDULING, scheduleStartTime=format_time(now))
            owners = sorted({p.owner for p in pods if p.owner})
            if owners:
                status["occupiedBy"] = ",".join(owners)
    else:
        if len(pods) < group.min_member:
            status["phase"] = PENDING
        elif succeeded + running < group.min_member:
            status["phase"] = SCHEDULING
        else:
            status["phase"] = RUNNING
        if failed and failed + running + succeeded >= group.min_member:
            status["phase"] = FAILED
        if succeeded >= group.min_member:
            status["phase"] = FINISHED
    changed = {k: v for k, v in status.items() if group.status.get(k) != v}
    phase = status.get("phase", group.phase)
    # A group starting to schedule in this very decision gets its timer now: the watch event of
    # the status write may never wake this group again (the cache already holds what it wrote).
    started = now if "scheduleStartTime" in status else group.schedule_start
    if phase not in (PENDING, SCHEDULING) or started is None:
        return StatusDecision(changed or None)
    timeout = group.timeout if group.timeout is not None else default_timeout
    placed = sum(bool(p.node_name) for p in pods)
    if placed >= group.min_member:
        return StatusDecision(changed or None)
    deadline = started + timeout
    if now < deadline:
        return StatusDecision(changed or None, requeue_after=deadline - now)
    changed["scheduleStartTime"] = format_time(now)
    message = (f"PodGroup {group.namespace}/{group.name}: {placed} of {group.min_member} pods placed after "
               f"{int(timeout.total_seconds())}s; still trying to place the whole group")
    return StatusDecision(changed, (REASON_TIMEOUT, message), timeout)
