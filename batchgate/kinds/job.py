"""batch/v1 Job: one template, min(parallelism, completions) pods, queued as Kueue's `main` podSet."""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from batchgate.api.conditions import condition_of
from batchgate.api.paths import Location, get_at
from batchgate.kinds.model import Kind, Outcome, PodSet, Reader

TEMPLATE: Location = ("spec", "template")


def job_pods(obj: Any, prefix: Location, where: str, reader: Reader) -> int:
    """min(parallelism (default 1), completions if set), as the Job controller runs them at once."""
    parallelism = reader.count(obj, prefix + ("spec", "parallelism"), where)
    if get_at(obj, prefix + ("spec", "completions")) is None:
        return parallelism
    return min(parallelism, reader.count(obj, prefix + ("spec", "completions"), where))


def _pod_sets(obj: Any, where: str, reader: Reader) -> Iterator[PodSet]:
    yield PodSet(TEMPLATE, job_pods(obj, (), where, reader), "main")


def _finished(job: Mapping[str, Any]) -> Outcome | None:
    for type_, outcome in (("Complete", "Succeeded"), ("Failed", "Failed")):
        cond = condition_of(job, type_)
        if cond and cond.status == "True":
            return outcome, cond.message or ("Job finished successfully" if outcome == "Succeeded" else "Job failed")
    return None


def _active(job: Mapping[str, Any]) -> bool:
    status = job.get("status") or {}
    return bool(status.get("active") or status.get("terminating"))


JOB = Kind(kind="Job", group="batch", version="v1", plural="jobs", read_pod_sets=_pod_sets, pods_at=TEMPLATE,
           suspend_path=("spec", "suspend"), finished=_finished, active=_active)
