"""The kinds the controller reads and writes, by kind: the client itself is kubeapi/client.py."""

from __future__ import annotations

from batchgate import keys
# The controller's modules take the client's names from here, beside its kinds.
from kubeapi.client import CONFIGMAPS, EVENTS, NAMESPACES, SECRETS, Resource
from kubeapi.client import ApiError as ApiError, KubeClient as KubeClient, WatchStream as WatchStream

RESOURCES: dict[str, Resource] = {
    r.kind: r
    for r in (
        Resource("Job", "batch", "v1", "jobs"),
        Resource("PyTorchJob", "kubeflow.org", "v1", "pytorchjobs"),
        Resource("RayJob", "ray.io", "v1", "rayjobs"),
        Resource("RayCluster", "ray.io", "v1", "rayclusters"),
        Resource("AppWrapper", keys.APPWRAPPER_GROUP, keys.APPWRAPPER_VERSION, "appwrappers"),
        Resource("Workload", keys.KUEUE_GROUP, keys.KUEUE_VERSION, "workloads"),
        Resource("LocalQueue", keys.KUEUE_GROUP, keys.KUEUE_VERSION, "localqueues"),
        Resource("ClusterQueue", keys.KUEUE_GROUP, keys.KUEUE_VERSION, "clusterqueues", namespaced=False),
        Resource("ResourceFlavor", keys.KUEUE_GROUP, keys.KUEUE_VERSION, "resourceflavors", namespaced=False),
        Resource("WorkloadPriorityClass", keys.KUEUE_GROUP, keys.KUEUE_VERSION, "workloadpriorityclasses", namespaced=False),
        Resource("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", namespaced=False),
        NAMESPACES,
        Resource("Pod", "", "v1", "pods"),
        EVENTS,
        CONFIGMAPS,
        Resource("Service", "", "v1", "services"),
        Resource("Lease", "coordination.k8s.io", "v1", "leases"),
        Resource("PodGroup", "scheduling.x-k8s.io", "v1alpha1", "podgroups"),
        Resource("Node", "", "v1", "nodes", namespaced=False),
        SECRETS,
        Resource("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims"),
        Resource("Deployment", "apps", "v1", "deployments"),
        Resource("StatefulSet", "apps", "v1", "statefulsets"),
    )
}
