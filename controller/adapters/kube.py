"""The kinds the controller reads and writes, by kind: the client itself is kubeapi/client.py."""

from __future__ import annotations

from batchgate import keys, kinds
# The controller's modules take the client's names from here, beside its kinds.
from kubeapi.client import CONFIGMAPS, EVENTS, NAMESPACES, SECRETS, Resource
from kubeapi.client import ApiError as ApiError, KubeClient as KubeClient, WatchStream as WatchStream

# The kinds the controller watches or makes. A wrapped kind from an optional operator (JobSet,
# LeaderWorkerSet) is left to discovery, which says when the cluster does not serve it.
RESOURCES: dict[str, Resource] = {
    r.kind: r
    for r in (
        *kinds.QUEUED.values(), kinds.POD, kinds.DEPLOYMENT, kinds.STATEFULSET,
        Resource("Workload", keys.KUEUE_GROUP, keys.KUEUE_VERSION, "workloads"),
        Resource("LocalQueue", keys.KUEUE_GROUP, keys.KUEUE_VERSION, "localqueues"),
        Resource("ClusterQueue", keys.KUEUE_GROUP, keys.KUEUE_VERSION, "clusterqueues", namespaced=False),
        Resource("ResourceFlavor", keys.KUEUE_GROUP, keys.KUEUE_VERSION, "resourceflavors", namespaced=False),
        Resource("WorkloadPriorityClass", keys.KUEUE_GROUP, keys.KUEUE_VERSION, "workloadpriorityclasses", namespaced=False),
        Resource("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", namespaced=False),
        NAMESPACES,
        EVENTS,
        CONFIGMAPS,
        Resource("Service", "", "v1", "services"),
        Resource("Lease", "coordination.k8s.io", "v1", "leases"),
        Resource("PodGroup", "scheduling.x-k8s.io", "v1alpha1", "podgroups"),
        Resource("Node", "", "v1", "nodes", namespaced=False),
        SECRETS,
        Resource("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims"),
    )
}
