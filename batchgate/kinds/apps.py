"""apps/v1 Deployment and StatefulSet: `spec.replicas` pods of `spec.template`, wrapped in AppWrappers."""

from __future__ import annotations

from typing import Any, Iterator

from batchgate.api.paths import Location
from batchgate.kinds.model import Kind, PodSet, Reader

TEMPLATE: Location = ("spec", "template")


def _pod_sets(obj: Any, where: str, reader: Reader) -> Iterator[PodSet]:
    yield PodSet(TEMPLATE, reader.count(obj, ("spec", "replicas"), where), "main")


DEPLOYMENT = Kind(kind="Deployment", group="apps", version="v1", plural="deployments", read_pod_sets=_pod_sets,
                  pods_at=TEMPLATE)
STATEFULSET = Kind(kind="StatefulSet", group="apps", version="v1", plural="statefulsets", read_pod_sets=_pod_sets,
                   pods_at=TEMPLATE)
