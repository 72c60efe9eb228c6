"""KubeRay RayCluster: a head pod and worker groups of `replicas` x `numOfHosts` pods.

KubeRay makes `numOfHosts` pods per replica of a group (multi-host TPU slices), and Kueue counts
them so; the AppWrapper controller's inference leaves the hosts out and under-counts such a group,
so the count here is KubeRay's, for wrapped clusters too."""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from batchgate.api.paths import Location
from batchgate.kinds.model import Kind, PodSet, Reader

GROUP = "ray.io"
VERSION = "v1"
HEAD = "head"
CLUSTER: Location = ("spec",)


def cluster_pod_sets(obj: Any, cluster: Location, where: str, reader: Reader) -> Iterator[PodSet]:
    """The head, then one podSet per worker group (Kueue names it after the lowercased groupName)."""
    yield PodSet(cluster + ("headGroupSpec", "template"), 1, HEAD)
    for i, _ in enumerate(reader.items(obj, cluster + ("workerGroupSpecs",), where)):
        group: Location = cluster + ("workerGroupSpecs", i)
        pods = reader.count(obj, group + ("replicas",), where) * reader.count(obj, group + ("numOfHosts",), where)
        yield PodSet(group + ("template",), pods, reader.name(obj, group + ("groupName",), where).lower())


def _pod_sets(obj: Any, where: str, reader: Reader) -> Iterator[PodSet]:
    return cluster_pod_sets(obj, CLUSTER, where, reader)


def _active(cluster: Mapping[str, Any]) -> bool:
    return (cluster.get("status") or {}).get("state") not in (None, "", "suspended")


RAYCLUSTER = Kind(kind="RayCluster", group=GROUP, version=VERSION, plural="rayclusters", read_pod_sets=_pod_sets,
                  pods_at=CLUSTER, suspend_path=("spec", "suspend"), active=_active)
"""A RayCluster never finishes: it holds its quota until it is deleted or suspended."""
