"""JobSet: each replicated Job makes `replicas` Jobs of its template's pods; wrapped in AppWrappers."""

from __future__ import annotations

from typing import Any, Iterator

from batchgate.api.paths import Location
from batchgate.kinds.job import job_pods
from batchgate.kinds.model import Kind, PodSet, Reader

JOBS: Location = ("spec", "replicatedJobs")


def _pod_sets(obj: Any, where: str, reader: Reader) -> Iterator[PodSet]:
    for i, _ in enumerate(reader.items(obj, JOBS, where)):
        job: Location = JOBS + (i,)
        count = reader.count(obj, job + ("replicas",), where) * job_pods(obj, job + ("template",), where, reader)
        yield PodSet(job + ("template", "spec", "template"), count)


JOBSET = Kind(kind="JobSet", group="jobset.x-k8s.io", version="v1alpha2", plural="jobsets", read_pod_sets=_pod_sets,
              pods_at=JOBS)
