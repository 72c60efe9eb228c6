"""Strategic-merge metadata of the built-in types: which lists merge, by what key, and which
structs retain keys. Taken from the `patchStrategy`/`patchMergeKey` tags of k8s.io/api types;
a field not listed is a plain field (maps merge, lists are replaced).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Meta:
    type: str | None = None  # the struct a field holds (or each list element holds)
    merge: bool = False  # patchStrategy merge: lists merge instead of being replaced
    key: str | None = None  # patchMergeKey of a list of objects
    retain_keys: bool = False  # patchStrategy retainKeys


def _merge(key: str | None = None, type_: str | None = None, retain_keys: bool = False) -> Meta:
    return Meta(type_, True, key, retain_keys)


OBJECT = {"metadata": Meta("ObjectMeta")}
CONDITIONS = {"conditions": _merge("type")}
POD_TEMPLATE = {"template": Meta("PodTemplateSpec")}

TYPES: dict[str, dict[str, Meta]] = {
    "ObjectMeta": {"finalizers": _merge(), "ownerReferences": _merge("uid")},
    "Pod": {**OBJECT, "spec": Meta("PodSpec"), "status": Meta("PodStatus")},
    "PodTemplate": {**OBJECT, "template": Meta("PodTemplateSpec")},
    "PodTemplateSpec": {**OBJECT, "spec": Meta("PodSpec")},
    "PodSpec": {
        "volumes": _merge("name", "Volume", retain_keys=True),
        "initContainers": _merge("name", "Container"),
        "containers": _merge("name", "Container"),
        "ephemeralContainers": _merge("name", "Container"),
        "imagePullSecrets": _merge("name"),
        "hostAliases": _merge("ip"),
        "topologySpreadConstraints": _merge("topologyKey"),
        "schedulingGates": _merge("name"),
        "resourceClaims": _merge("name", retain_keys=True),
    },
    "Volume": {},
    "Container": {
        "ports": _merge("containerPort"),
        "env": _merge("name"),
        "volumeMounts": _merge("mountPath"),
        "volumeDevices": _merge("devicePath"),
    },
    "PodStatus": {**CONDITIONS, "podIPs": _merge("ip"), "hostIPs": _merge("ip"),
                  "resourceClaimStatuses": _merge("name", retain_keys=True)},
    "Node": {**OBJECT, "status": Meta("NodeStatus")},
    "NodeStatus": {**CONDITIONS, "addresses": _merge("type")},
    "Namespace": {**OBJECT, "status": Meta("Conditioned")},
    "Service": {**OBJECT, "spec": Meta("ServiceSpec"), "status": Meta("Conditioned")},
    "ServiceSpec": {"ports": _merge("port")},
    "ServiceAccount": {**OBJECT, "secrets": _merge("name")},
    "Conditioned": CONDITIONS,
    "Deployment": {**OBJECT, "spec": Meta("DeploymentSpec"), "status": Meta("Conditioned")},
    "DeploymentSpec": {**POD_TEMPLATE, "strategy": Meta(retain_keys=True)},
    "ReplicaSet": {**OBJECT, "spec": Meta("WorkloadSpec"), "status": Meta("Conditioned")},
    "StatefulSet": {**OBJECT, "spec": Meta("WorkloadSpec"), "status": Meta("Conditioned")},
    "DaemonSet": {**OBJECT, "spec": Meta("DaemonSetSpec"), "status": Meta("Conditioned")},
    "DaemonSetSpec": {**POD_TEMPLATE, "updateStrategy": Meta(retain_keys=True)},
    "WorkloadSpec": POD_TEMPLATE,
    "Job": {**OBJECT, "spec": Meta("WorkloadSpec"), "status": Meta("JobStatus")},
    "JobStatus": CONDITIONS,
    "PersistentVolumeClaim": {**OBJECT, "status": Meta("Conditioned")},
    "PodDisruptionBudget": {**OBJECT, "status": Meta("Conditioned")},
    "WebhookConfiguration": {**OBJECT, "webhooks": _merge("name")},
    "CronJob": {**OBJECT, "spec": Meta("CronJobSpec")},
    "CronJobSpec": {"jobTemplate": Meta("JobTemplateSpec")},
    "JobTemplateSpec": {**OBJECT, "spec": Meta("WorkloadSpec")},
    "Plain": OBJECT,
}

# kind_key ("apps/v1/Deployment", "v1/Pod") -> root type; other kinds get only ObjectMeta's rules.
ROOTS = {
    "v1/Pod": "Pod", "v1/PodTemplate": "PodTemplate", "v1/Node": "Node", "v1/Namespace": "Namespace",
    "v1/Service": "Service", "v1/ServiceAccount": "ServiceAccount",
    "apps/v1/Deployment": "Deployment", "apps/v1/ReplicaSet": "ReplicaSet",
    "apps/v1/StatefulSet": "StatefulSet", "apps/v1/DaemonSet": "DaemonSet",
    "batch/v1/Job": "Job", "batch/v1/CronJob": "CronJob",
    "v1/PersistentVolumeClaim": "PersistentVolumeClaim", "policy/v1/PodDisruptionBudget": "PodDisruptionBudget",
    "admissionregistration.k8s.io/v1/MutatingWebhookConfiguration": "WebhookConfiguration",
    "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration": "WebhookConfiguration",
}


BUILTIN_GROUPS = {
    "", "apps", "batch", "autoscaling", "policy", "coordination.k8s.io", "events.k8s.io", "scheduling.k8s.io",
    "admissionregistration.k8s.io", "apiextensions.k8s.io", "rbac.authorization.k8s.io", "networking.k8s.io",
    "authentication.k8s.io", "authorization.k8s.io", "storage.k8s.io", "discovery.k8s.io", "node.k8s.io",
    "certificates.k8s.io", "flowcontrol.apiserver.k8s.io", "resource.k8s.io",
}


def is_builtin(kind_key: str) -> bool:
    """Whether `kind_key` names a built-in kind (typed in Go) rather than a custom resource."""
    parts = kind_key.split("/")
    return (parts[0] if len(parts) == 3 else "") in BUILTIN_GROUPS


def root_type(kind_key: str) -> str:
    return ROOTS.get(kind_key, "Plain")


def field_meta(type_name: str | None, field: str) -> Meta:
    if type_name is None:
        return Meta()
    return TYPES.get(type_name, {}).get(field, Meta())
