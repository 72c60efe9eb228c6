"""Kueue's ClusterQueue validation (its webhook and CRD rules), with the field path.

batchgate replaces Kueue, so it also takes over Kueue's admission check on ClusterQueues: a
lendingLimit above nominal quota or a borrowingLimit without a cohort must fail at `kubectl
apply`, not later as a queue that silently admits nothing.
"""

from __future__ import annotations

from typing import Any

from batchgate.api.errors import FieldError
from batchgate.api.kueue import ClusterQueue, validate_cluster_queue

CLUSTER_QUEUE = "ClusterQueue.kueue.x-k8s.io"


def cluster_queue_errors(kind: str, obj: Any) -> list[FieldError]:
    """The problems of a ClusterQueue object; [] for a valid one or any other kind."""
    if kind != CLUSTER_QUEUE or not isinstance(obj, dict):
        return []
    try:
        queue = ClusterQueue.from_dict(obj)
    except FieldError as exc:
        return [exc]
    return validate_cluster_queue(queue)
