"""What the server serves: one `ResourceType` per group/version/resource, built-ins and CRDs.

Storage is keyed by group and plural (`GroupResource`), so every version of a CRD shares one
set of objects, as in etcd; the version only changes the `apiVersion` a reader sees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # crd_rules needs cel-python; this module stays import-light
    from localcluster.crd_rules import RuleNode

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
CREATE_ONLY = ("create",)


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    builtin: bool = True
    # CRD-only: the version's openAPIV3Schema, printer columns and the stored version.
    schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    printer_columns: tuple[dict[str, Any], ...] = field(default=(), compare=False, hash=False)
    storage_version: str = ""
    scale_paths: tuple[str, str, str] = ("", "", "")  # CRD scale: specReplicasPath, statusReplicasPath, labelSelectorPath
    # CRD-only: the schema's validation rules, compiled once per served version
    rules: RuleNode | None = field(default=None, compare=False, hash=False)

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> tuple[str, str]:
        return (self.group, self.plural)

    @property
    def qualified(self) -> str:
        """`configmaps`, `jobs.batch`: how errors and discovery name the resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def base_path(self, namespace: str | None) -> str:
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            return f"{root}/namespaces/{namespace}/{self.plural}"
        return f"{root}/{self.plural}"


def _r(group: str, version: str, plural: str, kind: str, namespaced: bool, *, short: tuple[str, ...] = (),
       cats: tuple[str, ...] = (), sub: tuple[str, ...] = (), verbs: tuple[str, ...] = ALL_VERBS) -> ResourceType:
    return ResourceType(group, version, plural, kind, namespaced, short, cats, sub, verbs)


ALL = ("all",)

BUILTINS: tuple[ResourceType, ...] = (
    _r("", "v1", "namespaces", "Namespace", False, short=("ns",), sub=("status", "finalize"),
       verbs=("create", "delete", "get", "list", "patch", "update", "watch")),
    _r("", "v1", "pods", "Pod", True, short=("po",), cats=ALL, sub=("status", "binding", "log")),
    _r("", "v1", "bindings", "Binding", True, verbs=CREATE_ONLY),
    _r("", "v1", "configmaps", "ConfigMap", True, short=("cm",)),
    _r("", "v1", "secrets", "Secret", True),
    _r("", "v1", "services", "Service", True, short=("svc",), cats=ALL, sub=("status",),
       verbs=("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")),
    _r("", "v1", "serviceaccounts", "ServiceAccount", True, short=("sa",), sub=("token",)),
    _r("", "v1", "endpoints", "Endpoints", True, short=("ep",)),
    _r("", "v1", "events", "Event", True, short=("ev",)),
    _r("", "v1", "nodes", "Node", False, short=("no",), sub=("status",)),
    _r("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, short=("pvc",), sub=("status",)),
    _r("", "v1", "resourcequotas", "ResourceQuota", True, short=("quota",), sub=("status",)),
    _r("", "v1", "limitranges", "LimitRange", True, short=("limits",)),
    _r("apps", "v1", "deployments", "Deployment", True, short=("deploy",), cats=ALL, sub=("status", "scale")),
    _r("apps", "v1", "replicasets", "ReplicaSet", True, short=("rs",), cats=ALL, sub=("status", "scale")),
    _r("apps", "v1", "statefulsets", "StatefulSet", True, short=("sts",), cats=ALL, sub=("status", "scale")),
    _r("apps", "v1", "daemonsets", "DaemonSet", True, short=("ds",), cats=ALL, sub=("status",)),
    _r("apps", "v1", "controllerrevisions", "ControllerRevision", True),
    _r("batch", "v1", "jobs", "Job", True, cats=ALL, sub=("status",)),
    _r("batch", "v1", "cronjobs", "CronJob", True, short=("cj",), cats=ALL, sub=("status",)),
    _r("coordination.k8s.io", "v1", "leases", "Lease", True),
    _r("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True),
    _r("events.k8s.io", "v1", "events", "Event", True, short=("ev",)),
    _r("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration",
       False, cats=("api-extensions",)),
    _r("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
       "ValidatingWebhookConfiguration", False, cats=("api-extensions",)),
    _r("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, short=("pc",)),
    _r("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
       short=("crd", "crds"), cats=("api-extensions",), sub=("status",)),
    _r("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", False, verbs=CREATE_ONLY),
    _r("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False,
       verbs=CREATE_ONLY),
    _r("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", False,
       verbs=CREATE_ONLY),
    _r("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False, verbs=CREATE_ONLY),
    _r("authorization.k8s.io", "v1", "localsubjectaccessreviews", "LocalSubjectAccessReview", True,
       verbs=CREATE_ONLY),
    _r("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, short=("pdb",), sub=("status",)),
    _r("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    _r("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    _r("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    _r("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
)

# Group order as a real server lists them in /apis.
GROUP_ORDER = ("apps", "events.k8s.io", "authentication.k8s.io", "authorization.k8s.io", "batch",
               "policy", "rbac.authorization.k8s.io", "admissionregistration.k8s.io", "apiextensions.k8s.io",
               "scheduling.k8s.io", "coordination.k8s.io", "discovery.k8s.io")


class Registry:
    """The served resources: built-ins plus whatever CRDs are established right now."""

    def __init__(self) -> None:
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self._crd_gvrs: dict[str, list[tuple[str, str, str]]] = {}
        for rt in BUILTINS:
            self._by_gvr[(rt.group, rt.version, rt.plural)] = rt

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_gvr.get((group, version, plural))

    def all(self) -> list[ResourceType]:
        return list(self._by_gvr.values())

    def group_versions(self) -> dict[str, list[str]]:
        """Group -> served versions, preferred first."""
        found: dict[str, list[str]] = {}
        for rt in self._by_gvr.values():
            versions = found.setdefault(rt.group, [])
            if rt.version not in versions:
                versions.append(rt.version)
        return found

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [rt for rt in self._by_gvr.values() if rt.group == group and rt.version == version]

    def set_crd(self, crd_name: str, types: list[ResourceType]) -> None:
        self.remove_crd(crd_name)
        keys = []
        for rt in types:
            key = (rt.group, rt.version, rt.plural)
            self._by_gvr[key] = rt
            keys.append(key)
        self._crd_gvrs[crd_name] = keys

    def remove_crd(self, crd_name: str) -> None:
        for key in self._crd_gvrs.pop(crd_name, []):
            self._by_gvr.pop(key, None)

    def for_storage(self, group: str, plural: str) -> ResourceType | None:
        """Any served version of a stored GroupResource (for in-process controllers)."""
        for rt in self._by_gvr.values():
            if rt.group == group and rt.plural == plural:
                return rt
        return None
