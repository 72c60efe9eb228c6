"""LeaderWorkerSet: groups of a leader and workers. The AppWrapper controller does not infer its
podSets, so an AppWrapper declares them (`batchgate wrap` writes them from here)."""

from __future__ import annotations

from typing import Any, Iterator

from batchgate.api.paths import Location, get_at
from batchgate.kinds.model import Kind, PodSet, Reader

GROUP: Location = ("spec", "leaderWorkerTemplate")


def _pod_sets(obj: Any, where: str, reader: Reader) -> Iterator[PodSet]:
    """`replicas` groups of `size` pods: a leader and `size - 1` workers; without a leader
    template the worker template makes the leaders too."""
    groups = reader.count(obj, ("spec", "replicas"), where)
    size = reader.count(obj, GROUP + ("size",), where)
    if get_at(obj, GROUP + ("leaderTemplate",)) is None:
        yield PodSet(GROUP + ("workerTemplate",), groups * size)
        return
    yield PodSet(GROUP + ("leaderTemplate",), groups)
    if size > 1:
        yield PodSet(GROUP + ("workerTemplate",), groups * (size - 1))


LEADERWORKERSET = Kind(kind="LeaderWorkerSet", group="leaderworkerset.x-k8s.io", version="v1",
                       plural="leaderworkersets", read_pod_sets=_pod_sets, pods_at=GROUP, upstream_infers=False)
