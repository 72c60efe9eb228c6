"""Pieces of the Job controller that are about one pod: defaults, labels, indexes, pod failure policy.

Names, labels and messages are the batch/v1 ones users grep for: the four job labels, the
`batch.kubernetes.io/job-completion-index` annotation and label, hostname `<job>-<index>`,
the `batch.kubernetes.io/job-tracking` finalizer and `JOB_COMPLETION_INDEX`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Mapping

from localcluster.sim.conditions import controller_ref

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME_LABEL = "job-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
INDEX_FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
MAX_INT32 = 2**31 - 1

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class JobSpec:
    """A Job's spec with the API server's defaults applied."""

    parallelism: int
    completions: int | None
    indexed: bool
    backoff_limit: int
    backoff_limit_per_index: int | None
    max_failed_indexes: int | None
    active_deadline: int | None
    suspend: bool
    ttl_after_finished: int | None
    pod_failure_rules: tuple[Obj, ...]
    replace_terminating: bool  # podReplacementPolicy TerminatingOrFailed (the default without a podFailurePolicy)


def job_spec(job: Obj) -> JobSpec:
    spec = job.get("spec") or {}
    parallelism, completions = spec.get("parallelism"), spec.get("completions")
    if parallelism is None and completions is None:
        parallelism, completions = 1, 1
    per_index = spec.get("backoffLimitPerIndex")
    backoff = spec.get("backoffLimit")
    if backoff is None:
        backoff = MAX_INT32 if per_index is not None else 6
    return JobSpec(
        parallelism=1 if parallelism is None else int(parallelism),
        completions=None if completions is None else int(completions),
        indexed=spec.get("completionMode") == "Indexed",
        backoff_limit=int(backoff),
        backoff_limit_per_index=per_index,
        max_failed_indexes=spec.get("maxFailedIndexes"),
        active_deadline=spec.get("activeDeadlineSeconds"),
        suspend=bool(spec.get("suspend")),
        ttl_after_finished=spec.get("ttlSecondsAfterFinished"),
        pod_failure_rules=tuple(((spec.get("podFailurePolicy") or {}).get("rules")) or ()),
        replace_terminating=(spec.get("podReplacementPolicy")
                             or ("Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed")) != "Failed",
    )


def job_labels(job: Obj) -> dict[str, str]:
    meta = job["metadata"]
    uid, name = meta.get("uid", ""), meta["name"]
    return {
        CONTROLLER_UID_LABEL: uid,
        JOB_NAME_LABEL: name,
        LEGACY_CONTROLLER_UID_LABEL: uid,
        LEGACY_JOB_NAME_LABEL: name,
    }


def pod_index(pod: Obj) -> int | None:
    meta = pod.get("metadata") or {}
    raw = (meta.get("annotations") or {}).get(COMPLETION_INDEX) or (meta.get("labels") or {}).get(COMPLETION_INDEX)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def index_failures(pod: Obj) -> int:
    """How many earlier pods of this pod's index failed (carried on the replacement pod)."""
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(INDEX_FAILURE_COUNT, "0")
    try:
        return int(raw)
    except ValueError:
        return 0


def new_pod(job: Obj, index: int | None, failures: int = 0) -> dict[str, Any]:
    """A pod from the Job's template, labelled, owned and tracked; Indexed pods carry their index."""
    meta = job["metadata"]
    template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
    tmeta = template.get("metadata") or {}
    labels = {**(tmeta.get("labels") or {}), **job_labels(job)}
    annotations = dict(tmeta.get("annotations") or {})
    spec = template.get("spec") or {}
    generate = f"{meta['name']}-"
    if index is not None:
        generate = f"{meta['name']}-{index}-"
        labels[COMPLETION_INDEX] = str(index)
        annotations[COMPLETION_INDEX] = str(index)
        if job_spec(job).backoff_limit_per_index is not None:
            annotations[INDEX_FAILURE_COUNT] = str(failures)
        spec.setdefault("hostname", f"{meta['name']}-{index}")
        env = {"name": "JOB_COMPLETION_INDEX",
               "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{COMPLETION_INDEX}']"}}}
        for container in (spec.get("initContainers") or []) + (spec.get("containers") or []):
            if not any(e.get("name") == "JOB_COMPLETION_INDEX" for e in container.get("env") or []):
                container["env"] = [*(container.get("env") or []), env]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": generate,
            "namespace": meta.get("namespace", ""),
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [controller_ref(job)],
            "finalizers": [TRACKING_FINALIZER],
        },
        "spec": spec,
    }


@dataclass(frozen=True)
class RuleMatch:
    action: str  # FailJob | FailIndex | Ignore | Count
    index: int
    message: str


def _exit_code_match(pod: Obj, on: Obj) -> tuple[str, int] | None:
    name = on.get("containerName")
    values = set(on.get("values") or [])
    statuses = ((pod.get("status") or {}).get("containerStatuses") or []) + (
        (pod.get("status") or {}).get("initContainerStatuses") or []
    )
    for cs in statuses:
        if name and cs.get("name") != name:
            continue
        code = ((cs.get("state") or {}).get("terminated") or {}).get("exitCode")
        if code is None or code == 0:
            continue
        if (on.get("operator") == "In") == (code in values):
            return cs["name"], code
    return None


def match_failure_policy(job: Obj, pod: Obj) -> RuleMatch | None:
    """The first podFailurePolicy rule that matches a failed pod, with the upstream message."""
    meta = pod["metadata"]
    pod_ref = f"{meta.get('namespace', '')}/{meta['name']}"
    for i, rule in enumerate(job_spec(job).pod_failure_rules):
        action = rule.get("action", "")
        if rule.get("onExitCodes"):
            hit = _exit_code_match(pod, rule["onExitCodes"])
            if hit:
                return RuleMatch(action, i, f"Container {hit[0]} for pod {pod_ref} failed with exit code {hit[1]} "
                                            f"matching {action} rule at index {i}")
        for pattern in rule.get("onPodConditions") or []:
            wanted = pattern.get("status", "True")
            for cond in (pod.get("status") or {}).get("conditions") or []:
                if cond.get("type") == pattern.get("type") and cond.get("status") == wanted:
                    return RuleMatch(action, i, f"Pod {pod_ref} has condition {cond['type']} matching {action} rule at index {i}")
    return None


def format_indexes(indexes: set[int]) -> str:
    """`1,3-5,7`: runs of three or more collapse to first-last, as status.completedIndexes does."""
    out: list[str] = []
    ordered = sorted(indexes)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if j - i >= 2:
            out.append(f"{ordered[i]}-{ordered[j]}")
        else:
            out.extend(str(v) for v in ordered[i : j + 1])
        i = j + 1
    return ",".join(out)


def parse_indexes(text: str | None) -> set[int]:
    out: set[int] = set()
    for part in (text or "").split(","):
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            out.update(range(int(lo), int(hi) + 1))
        else:
            out.add(int(part))
    return out
