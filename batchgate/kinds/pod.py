"""v1 Pod: its own template. Never queued alone (it would run outside quota); an AppWrapper wraps it."""

from __future__ import annotations

from typing import Any, Iterator

from batchgate.kinds.model import Kind, PodSet, Reader


def _pod_sets(obj: Any, where: str, reader: Reader) -> Iterator[PodSet]:
    yield PodSet((), 1, "main")


POD = Kind(kind="Pod", group="", version="v1", plural="pods", read_pod_sets=_pod_sets, pods_at=())
