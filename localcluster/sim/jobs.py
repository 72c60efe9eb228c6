"""The Job controller's reconcile: (job, its pods, now) -> what to create, delete and report.

Follows kube-controller-manager v1.32: terminal pods are counted once (the tracking finalizer
marks "not yet counted" and is removed after the count is written); FailureTarget and
SuccessCriteriaMet come first and Failed/Complete only once no pod is left running, as v1.32
does with JobPodReplacementPolicy on; failures back off 10s doubling to 6m before replacements;
suspend deletes active pods. Pods this controller deletes itself (suspend, excess, a failed or
finished Job) lose their finalizer before the deletion is sent (a pod whose finalizer cannot be
dropped is not deleted), so they are never counted; a pod someone else deletes while it is still
tracked counts as failed at once (isPodFailed), unless only Failed pods are replaced.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from localcluster.sim.conditions import Event, deleting, find, is_true, pod_ready, set_condition
from localcluster.sim.job_pods import (
    TRACKING_FINALIZER,
    JobSpec,
    format_indexes,
    index_failures,
    job_spec,
    match_failure_policy,
    new_pod,
    parse_indexes,
    pod_index,
)
from localcluster.sim.units import format_time, parse_time

BACKOFF_INITIAL = dt.timedelta(seconds=10)
BACKOFF_MAX = dt.timedelta(minutes=6)

Obj = Mapping[str, Any]


@dataclass
class JobStep:
    """Everything one reconcile decided; the adapter writes status first, then acts."""

    status: dict[str, Any]
    creates: list[dict[str, Any]] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    uncount: list[str] = field(default_factory=list)  # pods whose tracking finalizer comes off
    events: list[Event] = field(default_factory=list)
    requeue_after: dt.timedelta | None = None
    delete_job: bool = False

    def wake(self, after: dt.timedelta) -> None:
        if self.requeue_after is None or after < self.requeue_after:
            self.requeue_after = max(after, dt.timedelta(0))


def _terminal(pod: Obj) -> str | None:
    phase = (pod.get("status") or {}).get("phase")
    return phase if phase in ("Succeeded", "Failed") else None


def _tracked(pod: Obj) -> bool:
    return TRACKING_FINALIZER in ((pod.get("metadata") or {}).get("finalizers") or [])


def _terminating(pod: Obj) -> bool:
    return deleting(pod) and not _terminal(pod)


def _deleted_failure(spec: JobSpec, pod: Obj) -> bool:
    """v1.32's isPodFailed for a pod that has not ended: one deleted while still tracked counts as a
    failure (an orphan may never reach Failed), unless only Failed pods are replaced. Pods this
    controller deletes (suspend, surplus) lose the finalizer first, so they never count."""
    return spec.replace_terminating and _terminating(pod)


def _active(pod: Obj) -> bool:
    return not _terminal(pod) and not deleting(pod)


def _finished_at(pod: Obj) -> str:
    ends = [
        ((cs.get("state") or {}).get("terminated") or {}).get("finishedAt") or ""
        for cs in (pod.get("status") or {}).get("containerStatuses") or []
    ]
    return max(ends, default="") or ""


def _name(pod: Obj) -> str:
    return pod["metadata"]["name"]


def finished_condition(status: Obj) -> Obj | None:
    for kind in ("Complete", "Failed"):
        cond = find(status.get("conditions"), kind)
        if cond and cond.get("status") == "True":
            return cond
    return None


def _ttl(spec: JobSpec, status: dict[str, Any], now: dt.datetime) -> JobStep:
    step = JobStep(status)
    cond = finished_condition(status)
    if spec.ttl_after_finished is None or cond is None:
        return step
    expires = parse_time(cond["lastTransitionTime"]) + dt.timedelta(seconds=spec.ttl_after_finished)
    if now >= expires:
        step.delete_job = True
    else:
        step.wake(expires - now)
    return step


def reconcile(job: Obj, pods: Sequence[Obj], now: dt.datetime) -> JobStep:
    """One sync of one Job. `pods` are the pods it controls (by controller ownerReference)."""
    spec = job_spec(job)
    status: dict[str, Any] = {k: v for k, v in (job.get("status") or {}).items()}
    status.setdefault("uncountedTerminatedPods", {})
    if finished_condition(status):
        step = _ttl(spec, status, now)
        step.uncount = [_name(p) for p in pods if _tracked(p) and not _active(p)]
        step.deletes = [_name(p) for p in pods if _active(p)]
        return step
    step = JobStep(status)
    conditions = status.get("conditions") or []

    # 1. Count pods that finished since the last sync (they still carry the tracking finalizer).
    completed = parse_indexes(status.get("completedIndexes"))
    failed_indexes = parse_indexes(status.get("failedIndexes"))
    succeeded, failed = int(status.get("succeeded") or 0), int(status.get("failed") or 0)
    fail_job: tuple[str, str] | None = None
    for pod in sorted((p for p in pods if _tracked(p) and (_terminal(p) or _deleted_failure(spec, p))), key=_finished_at):
        step.uncount.append(_name(pod))
        index = pod_index(pod)
        if _terminal(pod) == "Succeeded":
            if not spec.indexed:
                succeeded += 1
            elif index is not None and index not in completed and index < (spec.completions or 0):
                completed.add(index)
                succeeded += 1
            continue
        rule = match_failure_policy(job, pod)
        if rule and rule.action == "Ignore":
            continue
        failed += 1
        if rule and rule.action == "FailJob" and fail_job is None:
            fail_job = ("PodFailurePolicy", rule.message)
        if spec.indexed and index is not None and spec.backoff_limit_per_index is not None:
            if (rule and rule.action == "FailIndex") or index_failures(pod) + 1 > spec.backoff_limit_per_index:
                failed_indexes.add(index)
    status["succeeded"], status["failed"] = succeeded, failed
    if spec.indexed:
        status["completedIndexes"] = format_indexes(completed)
        if spec.backoff_limit_per_index is not None:
            status["failedIndexes"] = format_indexes(failed_indexes)

    active = [p for p in pods if _active(p)]
    terminating = [p for p in pods if _terminating(p)]

    # 2. Suspend and resume.
    if spec.suspend:
        if not is_true(conditions, "Suspended"):
            conditions = set_condition(conditions, "Suspended", True, "JobSuspended", "Job suspended", now, probe=True)
            step.events.append(Event("Normal", "Suspended", "Job suspended"))
        status.pop("startTime", None)
        step.deletes = [_name(p) for p in active]
        step.uncount += [_name(p) for p in active if _tracked(p)]
        return _finish_status(step, status, conditions, [], terminating + active)
    if is_true(conditions, "Suspended"):
        conditions = set_condition(conditions, "Suspended", False, "JobResumed", "Job resumed", now, probe=True)
        step.events.append(Event("Normal", "Resumed", "Job resumed"))
        status["startTime"] = format_time(now)
    status.setdefault("startTime", format_time(now))

    # 3. Failure: an interim FailureTarget, then Failed once nothing runs.
    target = find(conditions, "FailureTarget")
    if target is None or target.get("status") != "True":
        reason = fail_job or _failure_reason(spec, status, failed, completed, failed_indexes, now, step)
        if reason:
            conditions = set_condition(conditions, "FailureTarget", True, reason[0], reason[1], now, probe=True)
            step.events.append(Event("Warning", reason[0], reason[1]))
            target = find(conditions, "FailureTarget")
    if target is not None and target.get("status") == "True":
        step.deletes = [_name(p) for p in active]
        step.uncount += [_name(p) for p in active if _tracked(p)]
        if not active and not terminating:
            conditions = set_condition(conditions, "Failed", True, target["reason"], target["message"], now, probe=True)
        return _finish_status(step, status, conditions, [], terminating + active)

    # 4. Success: SuccessCriteriaMet, then Complete once nothing runs.
    done = _succeeded(spec, succeeded, completed, active)
    if done or is_true(conditions, "SuccessCriteriaMet"):
        if not is_true(conditions, "SuccessCriteriaMet"):
            conditions = set_condition(conditions, "SuccessCriteriaMet", True, "CompletionsReached",
                                       "Reached expected number of succeeded pods", now, probe=True)
        step.deletes = [_name(p) for p in active]
        step.uncount += [_name(p) for p in active if _tracked(p)]
        if not active and not terminating:
            conditions = set_condition(conditions, "Complete", True, "CompletionsReached",
                                       "Reached expected number of succeeded pods", now, probe=True)
            status["completionTime"] = format_time(now)
            step.events.append(Event("Normal", "Completed", "Job completed"))
        return _finish_status(step, status, conditions, [], terminating + active)

    # 5. Keep the right number of pods running, after the failure backoff.
    wait = _backoff_left(pods, failed, succeeded, now)
    held = [] if spec.replace_terminating else terminating  # podReplacementPolicy Failed: wait for them to end
    if spec.indexed:
        _sync_indexed(job, spec, active, held, pods, completed | failed_indexes, step, wait)
    else:
        _sync_plain(job, spec, active, len(held), succeeded, step, wait)
    remaining = [p for p in active if _name(p) not in step.deletes]
    return _finish_status(step, status, conditions, remaining, terminating + [p for p in active if _name(p) in step.deletes])


def _failure_reason(spec: JobSpec, status: Obj, failed: int, completed: set[int], failed_indexes: set[int],
                    now: dt.datetime, step: JobStep) -> tuple[str, str] | None:
    if spec.backoff_limit_per_index is not None and spec.indexed:
        if spec.max_failed_indexes is not None and len(failed_indexes) > spec.max_failed_indexes:
            return ("MaxFailedIndexesExceeded", "Job has exceeded the specified maximal number of failed indexes")
        if failed_indexes and len(completed | failed_indexes) >= (spec.completions or 0):
            return ("FailedIndexes", "Job has failed indexes")
    elif failed > spec.backoff_limit:
        return ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
    if spec.active_deadline is not None and status.get("startTime"):
        deadline = parse_time(status["startTime"]) + dt.timedelta(seconds=spec.active_deadline)
        if now >= deadline:
            return ("DeadlineExceeded", "Job was active longer than specified deadline")
        step.wake(deadline - now)
    return None


def _succeeded(spec: JobSpec, succeeded: int, completed: set[int], active: Sequence[Obj]) -> bool:
    if spec.indexed:
        return spec.completions is not None and len(completed) >= spec.completions
    if spec.completions is None:
        return succeeded > 0 and not active
    return succeeded >= spec.completions


def _backoff_left(pods: Sequence[Obj], failed: int, succeeded: int, now: dt.datetime) -> dt.timedelta:
    """Time left before replacing failed pods: 10s * 2^(failures-1), capped at 6m, after the last failure."""
    failures = [p for p in pods if _terminal(p) == "Failed"]
    last_success = max((_finished_at(p) for p in pods if _terminal(p) == "Succeeded"), default="")
    recent = [p for p in failures if _finished_at(p) > last_success]
    if not recent or failed == 0:
        return dt.timedelta(0)
    last = max(_finished_at(p) for p in recent)
    if not last:
        return dt.timedelta(0)
    delay = min(BACKOFF_INITIAL * 2 ** (len(recent) - 1), BACKOFF_MAX)
    return max(parse_time(last) + delay - now, dt.timedelta(0))


def _surplus(active: Sequence[Obj], count: int) -> list[str]:
    """The pods to remove first: not ready, then newest."""
    ranked = sorted(active, key=lambda p: (pod_ready(p), (p.get("metadata") or {}).get("creationTimestamp") or ""))
    return [_name(p) for p in ranked[:count]]


def _sync_plain(job: Obj, spec: JobSpec, active: Sequence[Obj], held: int, succeeded: int, step: JobStep,
                wait: dt.timedelta) -> None:
    if spec.completions is None:
        wanted = spec.parallelism if succeeded == 0 else 0
    else:
        wanted = max(min(spec.parallelism, spec.completions - succeeded), 0)
    if len(active) > wanted:
        step.deletes = _surplus(active, len(active) - wanted)
        step.uncount += step.deletes
    elif len(active) + held < wanted:
        if wait > dt.timedelta(0):
            step.wake(wait)
            return
        step.creates = [new_pod(job, None) for _ in range(wanted - len(active) - held)]


def _sync_indexed(job: Obj, spec: JobSpec, active: Sequence[Obj], held: Sequence[Obj], pods: Sequence[Obj],
                  finished: set[int], step: JobStep, wait: dt.timedelta) -> None:
    completions = spec.completions or 0
    by_index: dict[int, list[Obj]] = {}
    for pod in active:
        index = pod_index(pod)
        by_index.setdefault(index if index is not None else -1, []).append(pod)
    for index, group in by_index.items():
        keep = 0 if index in finished or index < 0 or index >= completions else 1
        if len(group) > keep:
            step.deletes += _surplus(group, len(group) - keep)
    step.uncount += step.deletes
    running = sum(1 for i in by_index if 0 <= i < completions and i not in finished)
    waiting = {pod_index(p) for p in held}
    missing = [i for i in range(completions) if i not in finished and i not in by_index and i not in waiting]
    room = max(spec.parallelism - running, 0)
    if not missing or not room:
        return
    if wait > dt.timedelta(0):
        step.wake(wait)
        return
    failures: dict[int, int] = {}
    for pod in pods:
        index = pod_index(pod)
        if index is not None and _terminal(pod) == "Failed":
            failures[index] = max(failures.get(index, 0), index_failures(pod) + 1)
    step.creates = [new_pod(job, i, failures.get(i, 0)) for i in missing[:room]]


def _finish_status(step: JobStep, status: dict[str, Any], conditions: list, remaining: Sequence[Obj],
                   terminating: Sequence[Obj]) -> JobStep:
    status["active"] = len(remaining) + len(step.creates)
    status["ready"] = sum(1 for p in remaining if pod_ready(p))
    status["terminating"] = len(terminating)
    if conditions:
        status["conditions"] = conditions
    step.status = status
    step.uncount = sorted(set(step.uncount))
    return step
