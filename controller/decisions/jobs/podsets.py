"""The podSets of a queued job as Kueue's Workload carries them: name, count and pod template.

Where each kind keeps its templates and how many pods each makes is the kind's own
(batchgate/kinds); here each podSet gets its template, checked, with its location inside the job,
since the admission decision later flows back into the very templates found here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from batchgate.api.errors import FieldError
from batchgate.api.paths import Location, format_steps, get_at
from batchgate.kinds import JOB, Kind, STRICT


class PodSetError(ValueError):
    """A job whose pod templates cannot be found; the message names the field path."""


@dataclass(frozen=True)
class PodSetSource:
    """One podSet of a job: its Workload name, pod count and pod template (with its location)."""

    name: str
    count: int
    template: Mapping[str, Any]
    path: Location | None  # None: a template the job does not spell out (the default Ray submitter)


def _template(job: Mapping[str, Any], path: Location) -> Mapping[str, Any]:
    value = get_at(job, path)
    if not isinstance(value, Mapping):
        raise PodSetError(f"{format_steps(path)}: no pod template")
    if not isinstance(value.get("spec"), Mapping):
        raise PodSetError(f"{format_steps(path)}.spec: pod template has no spec")
    return value


def pod_sets(job: Mapping[str, Any], kind: Kind) -> list[PodSetSource]:
    """The podSets of a queued job, in Kueue's order; PodSetError names what is wrong."""
    try:
        found = kind.workload_pod_sets(job)
    except FieldError as exc:
        raise PodSetError(str(exc)) from None
    if not found:
        raise PodSetError(f"{format_steps(kind.pods_at)}: no pod templates")
    out = []
    for ps in found:
        if ps.default is not None and get_at(job, ps.location) is None:
            out.append(PodSetSource(ps.name, ps.replicas, ps.default, None))
        else:
            out.append(PodSetSource(ps.name, ps.replicas, _template(job, ps.location), ps.location))
    return out


def _index_count(text: Any, completions: int) -> set[int]:
    """The indexes below `completions` in a status list such as `0,2-4` (malformed parts are skipped)."""
    out: set[int] = set()
    for part in str(text or "").split(","):
        first, _, last = part.partition("-")
        if not first.strip().isdigit() or (last and not last.strip().isdigit()):
            continue
        out.update(range(int(first), min(int(last or first), completions - 1) + 1))
    return out


def reclaimable_pods(job: Mapping[str, Any], kind: Kind) -> dict[str, int]:
    """Pods of a job that will never run again, per podSet (Kueue's ReclaimablePods; Jobs only).

    A Job's finished share: succeeded pods, or for an Indexed Job its completed and failed indexes.
    Its podSet counts min(parallelism, completions); once fewer completions remain than that, the
    difference is reclaimable: its quota goes back and its gang shrinks to the pods left to run.
    """
    if kind is not JOB:
        return {}
    spec, status = job.get("spec") or {}, job.get("status") or {}
    try:
        (main,) = JOB.workload_pod_sets(job)
        completions = STRICT.count(job, ("spec", "completions"), "", default=main.replicas)
        if spec.get("completionMode") == "Indexed":
            done = len(_index_count(status.get("completedIndexes"), completions)
                       | _index_count(status.get("failedIndexes"), completions))
        else:
            done = STRICT.count(job, ("status", "succeeded"), "", default=0)
    except FieldError as exc:
        raise PodSetError(str(exc)) from None
    left = max(completions - done, 0)
    return {main.name: main.replicas - left} if done and left < main.replicas else {}
