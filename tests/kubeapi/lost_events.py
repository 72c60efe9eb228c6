"""A write the API server acknowledges but no watch tells of, on the stand-in.

What the real control plane did once after an apiserver then etcd restart (docs/realcluster.md):
the object is stored and listed, yet no watch event ever names it. Only a relist can find it.
Use it on a cluster of the test's own: no other write may land between its steps.
"""

from __future__ import annotations

import uuid
from typing import Any

from localcluster.runner import LocalCluster


def write_without_event(cluster: LocalCluster, obj: dict[str, Any]) -> None:
    """Store `obj` as the API server stores a write, but let no watch tell of it: no open watch is
    offered the event, and it is not in the history a watch resumes from."""
    meta = obj["metadata"]
    meta.update(uid=str(uuid.uuid4()), creationTimestamp="2030-01-01T00:00:00Z")
    resource = ("", "configmaps")
    bucket = cluster.store.bucket(resource)
    watchers, bucket.watchers = bucket.watchers, set()
    try:
        cluster.store.put(resource, obj)
    finally:
        bucket.watchers = watchers
    assert bucket.history.pop().entry.obj["metadata"]["name"] == meta["name"]
