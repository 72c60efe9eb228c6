"""The roles and bindings a fresh cluster starts with.

User-facing roles and the discovery roles follow kubernetes/kubernetes
plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go (names, aggregation labels, rules);
controller roles follow controller_policy.go, one `system:controller:NAME` role bound to the
service account `kube-system/NAME` each controller runs as. Two stand-ins are local: the
simulated kubelets are bound to `system:node` through the `system:nodes` group (a real cluster
uses the Node authorizer for that), and the PyTorchJob, RayCluster and RayJob controllers run
as the Kubeflow training operator's and KubeRay's service accounts, with those operators' roles
cut to what the stand-ins do.
"""

from __future__ import annotations

from typing import Any

READ = ("get", "list", "watch")
WRITE = ("create", "update", "patch", "delete", "deletecollection")
READ_WRITE = READ + WRITE
AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"
BOOTSTRAP_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AUTOUPDATE = {"rbac.authorization.kubernetes.io/autoupdate": "true"}
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
CONTROLLER_NAMESPACE = "kube-system"


def rule(verbs: tuple[str, ...], groups: tuple[str, ...], resources: tuple[str, ...],
         names: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {"verbs": list(verbs), "apiGroups": list(groups), "resources": list(resources)}
    if names:
        out["resourceNames"] = list(names)
    return out


def url_rule(verbs: tuple[str, ...], urls: tuple[str, ...]) -> dict[str, Any]:
    return {"verbs": list(verbs), "nonResourceURLs": list(urls)}


def _events() -> list[dict[str, Any]]:
    return [rule(("create", "update", "patch"), ("", "events.k8s.io"), ("events",))]


def cluster_role(name: str, rules: list[dict[str, Any]], *, labels: dict[str, str] | None = None,
                 aggregate_from: str = "") -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                           "metadata": {"name": name, "labels": {**BOOTSTRAP_LABELS, **(labels or {})},
                                        "annotations": dict(AUTOUPDATE)},
                           "rules": rules}
    if aggregate_from:
        obj["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {AGGREGATE + aggregate_from: "true"}}]}
    return obj


def cluster_role_binding(name: str, role: str, subjects: list[dict[str, str]]) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": dict(BOOTSTRAP_LABELS), "annotations": dict(AUTOUPDATE)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": subjects}


def group(name: str) -> dict[str, str]:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": name}


def user(name: str) -> dict[str, str]:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}


def service_account(namespace: str, name: str) -> dict[str, str]:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


def _user_facing() -> list[dict[str, Any]]:
    core_edit = ("pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward")
    return [
        cluster_role("cluster-admin", [rule(("*",), ("*",), ("*",)), url_rule(("*",), ("*",))]),
        cluster_role("admin", [], aggregate_from="admin"),
        cluster_role("edit", [], labels={AGGREGATE + "admin": "true"}, aggregate_from="edit"),
        cluster_role("view", [], labels={AGGREGATE + "edit": "true"}, aggregate_from="view"),
        cluster_role("system:aggregate-to-admin", [
            rule(READ_WRITE, ("rbac.authorization.k8s.io",), ("roles", "rolebindings")),
            rule(("create",), ("authorization.k8s.io",), ("localsubjectaccessreviews",)),
        ], labels={AGGREGATE + "admin": "true"}),
        cluster_role("system:aggregate-to-edit", [
            rule(READ, ("",), ("pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets",
                               "services/proxy")),
            rule(("impersonate",), ("",), ("serviceaccounts",)),
            rule(WRITE, ("",), core_edit),
            rule(("create",), ("",), ("pods/eviction",)),
            rule(WRITE, ("",), ("replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
                                "services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets")),
            rule(("create",), ("",), ("serviceaccounts/token",)),
            rule(WRITE, ("apps",), ("statefulsets", "statefulsets/scale", "daemonsets", "deployments",
                                    "deployments/scale", "deployments/rollback", "replicasets", "replicasets/scale")),
            rule(WRITE, ("autoscaling",), ("horizontalpodautoscalers",)),
            rule(WRITE, ("batch",), ("jobs", "cronjobs")),
            rule(WRITE, ("policy",), ("poddisruptionbudgets",)),
            rule(WRITE, ("networking.k8s.io",), ("networkpolicies", "ingresses")),
        ], labels={AGGREGATE + "edit": "true"}),
        cluster_role("system:aggregate-to-view", [
            rule(READ, ("",), ("pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
                               "services", "services/status", "endpoints", "persistentvolumeclaims",
                               "persistentvolumeclaims/status", "configmaps")),
            rule(READ, ("",), ("limitranges", "resourcequotas", "bindings", "events", "pods/status",
                               "resourcequotas/status", "namespaces/status", "replicationcontrollers/status",
                               "pods/log")),
            rule(READ, ("",), ("namespaces",)),
            rule(READ, ("discovery.k8s.io",), ("endpointslices",)),
            rule(READ, ("apps",), ("controllerrevisions", "statefulsets", "statefulsets/status", "statefulsets/scale",
                                   "daemonsets", "daemonsets/status", "deployments", "deployments/status",
                                   "deployments/scale", "replicasets", "replicasets/status", "replicasets/scale")),
            rule(READ, ("autoscaling",), ("horizontalpodautoscalers", "horizontalpodautoscalers/status")),
            rule(READ, ("batch",), ("jobs", "cronjobs", "cronjobs/status", "jobs/status")),
            rule(READ, ("policy",), ("poddisruptionbudgets", "poddisruptionbudgets/status")),
            rule(READ, ("networking.k8s.io",), ("networkpolicies", "ingresses", "ingresses/status")),
        ], labels={AGGREGATE + "view": "true"}),
        cluster_role("system:discovery", [url_rule(("get",), (
            "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz",
            "/version", "/version/"))]),
        cluster_role("system:basic-user", [
            rule(("create",), ("authorization.k8s.io",), ("selfsubjectaccessreviews", "selfsubjectrulesreviews")),
            rule(("create",), ("authentication.k8s.io",), ("selfsubjectreviews",)),
        ]),
        cluster_role("system:public-info-viewer", [url_rule(("get",), (
            "/healthz", "/livez", "/readyz", "/version", "/version/"))]),
    ]


# The identities the local cluster's own components use (runtime/components.py).
KUBE_CONTROLLER_MANAGER = "system:kube-controller-manager"
KUBE_SCHEDULER = "system:kube-scheduler"
NODES_GROUP = "system:nodes"

# Controller name -> its rules, as controller_policy.go (deployment-controller also runs the
# replicaset controller's loop here, so it holds that controller's rights too).
CONTROLLER_RULES: dict[str, list[dict[str, Any]]] = {
    "job-controller": [
        rule(("get", "list", "watch", "update", "patch", "delete"), ("batch",), ("jobs",)),
        rule(("update", "patch"), ("batch",), ("jobs/status", "jobs/finalizers")),
        rule(("list", "watch", "create", "delete", "patch"), ("",), ("pods",)),
        *_events(),
    ],
    "deployment-controller": [
        rule(("get", "list", "watch", "update"), ("apps",), ("deployments",)),
        rule(("update", "patch"), ("apps",), ("deployments/status",)),
        rule(("update",), ("apps",), ("deployments/finalizers",)),
        rule(("get", "list", "watch", "create", "update", "patch", "delete"), ("apps",), ("replicasets",)),
        rule(("update", "patch"), ("apps",), ("replicasets/status",)),
        rule(("update",), ("apps",), ("replicasets/finalizers",)),
        rule(("get", "list", "watch", "create", "update", "patch", "delete"), ("",), ("pods",)),
        *_events(),
    ],
    "endpoint-controller": [
        rule(READ, ("",), ("services", "pods")),
        rule(("get", "list", "create", "update", "patch", "delete"), ("",), ("endpoints",)),
        rule(("get", "list", "create", "update", "patch", "delete"), ("discovery.k8s.io",), ("endpointslices",)),
        rule(("update", "patch"), ("",), ("services",)),
        rule(("update",), ("",), ("services/finalizers",)),  # its EndpointSlices block their Service's deletion
        *_events(),
    ],
    "node-controller": [
        rule(("get", "list", "update", "delete", "patch"), ("",), ("nodes",)),
        rule(("patch", "update"), ("",), ("nodes/status",)),
        rule(("patch", "update"), ("",), ("pods/status",)),
        rule(("list", "get", "delete"), ("",), ("pods",)),
        *_events(),
    ],
    "statefulset-controller": [
        rule(("update", "patch"), ("apps",), ("statefulsets/status",)),
        rule(("update",), ("apps",), ("statefulsets/finalizers",)),
        rule(("get", "create", "delete", "update", "patch"), ("",), ("pods",)),
        *_events(),
    ],
    "serviceaccount-controller": [
        rule(("create",), ("",), ("serviceaccounts",)),
        *_events(),
    ],
}


# The third-party operators the local cluster stands in for run as their own service accounts
# (the identities batchgate's policy trusts by default), with their part of the operator's ClusterRole:
# the Kubeflow training operator's for PyTorchJobs, KubeRay's for RayClusters and RayJobs.
OPERATOR_ACCOUNTS: dict[str, tuple[str, str]] = {
    "pytorchjob-controller": ("kubeflow", "training-operator"),
    "raycluster-controller": ("ray-system", "kuberay-operator"),
    "rayjob-controller": ("ray-system", "kuberay-operator"),
}
OPERATOR_RULES: dict[str, list[dict[str, Any]]] = {
    "training-operator": [
        rule(("get", "list", "watch", "update", "patch", "delete"), ("kubeflow.org",), ("pytorchjobs",)),
        rule(("update", "patch"), ("kubeflow.org",), ("pytorchjobs/status", "pytorchjobs/finalizers")),
        rule(("get", "list", "watch", "create", "update", "patch", "delete"), ("",), ("pods", "services")),
        *_events(),
    ],
    "kuberay-operator": [
        rule(("get", "list", "watch", "create", "update", "patch", "delete"), ("ray.io",), ("rayclusters",)),
        rule(("get", "list", "watch", "update", "patch", "delete"), ("ray.io",), ("rayjobs",)),
        rule(("get", "update", "patch"), ("ray.io",), ("rayclusters/status", "rayclusters/finalizers",
                                                       "rayjobs/status", "rayjobs/finalizers")),
        rule(("get", "list", "watch", "create", "update", "patch", "delete"), ("",), ("pods", "services")),
        rule(("get", "list", "watch", "create", "update", "patch", "delete"), ("batch",), ("jobs",)),
        *_events(),
    ],
}


def component_account(component: str) -> tuple[str, str]:
    """The service account (namespace, name) a local cluster controller writes as."""
    return OPERATOR_ACCOUNTS.get(component, (CONTROLLER_NAMESPACE, component))


def service_account_username(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


def _components() -> list[dict[str, Any]]:
    roles = [cluster_role(f"system:controller:{name}", rules) for name, rules in CONTROLLER_RULES.items()]
    roles += [cluster_role(name, rules) for name, rules in OPERATOR_RULES.items()]
    roles += [
        cluster_role(KUBE_CONTROLLER_MANAGER, [
            *_events(),
            rule(("create",), ("coordination.k8s.io",), ("leases",)),
            rule(("get", "update"), ("coordination.k8s.io",), ("leases",), ("kube-controller-manager",)),
            rule(("create",), ("",), ("secrets", "serviceaccounts")),
            rule(("get",), ("",), ("configmaps", "namespaces", "secrets", "serviceaccounts")),
            rule(("list", "watch"), ("*",), ("*",)),  # the shared informers
            rule(("create",), ("authentication.k8s.io",), ("tokenreviews",)),
            rule(("create",), ("authorization.k8s.io",), ("subjectaccessreviews",)),
        ]),
        cluster_role(KUBE_SCHEDULER, [
            *_events(),
            rule(("create",), ("coordination.k8s.io",), ("leases",)),
            rule(("get", "update"), ("coordination.k8s.io",), ("leases",), ("kube-scheduler",)),
            rule(READ, ("",), ("nodes",)),
            rule(("get", "list", "watch", "delete"), ("",), ("pods",)),
            rule(("create",), ("",), ("pods/binding", "bindings")),
            rule(("patch", "update"), ("",), ("pods/status",)),
            rule(READ, ("",), ("replicationcontrollers", "services", "persistentvolumeclaims", "namespaces")),
            rule(READ, ("apps",), ("replicasets", "statefulsets")),
            rule(READ, ("policy",), ("poddisruptionbudgets",)),
            rule(("create",), ("authentication.k8s.io",), ("tokenreviews",)),
            rule(("create",), ("authorization.k8s.io",), ("subjectaccessreviews",)),
        ]),
        cluster_role("system:node", [
            rule(("create",), ("authentication.k8s.io",), ("tokenreviews",)),
            rule(("create",), ("authorization.k8s.io",), ("subjectaccessreviews", "localsubjectaccessreviews")),
            rule(READ, ("",), ("services",)),
            rule(("create", "get", "list", "watch"), ("",), ("nodes",)),
            rule(("update", "patch"), ("",), ("nodes/status",)),
            rule(("update", "patch"), ("",), ("nodes",)),
            *_events(),
            rule(READ, ("",), ("pods",)),
            rule(("create", "delete"), ("",), ("pods",)),
            rule(("update", "patch"), ("",), ("pods/status",)),
            rule(("create",), ("",), ("pods/eviction",)),
            rule(("get",), ("",), ("secrets", "configmaps", "persistentvolumeclaims", "persistentvolumes",
                                   "endpoints")),
            rule(("get", "create", "update", "patch", "delete"), ("coordination.k8s.io",), ("leases",)),
            rule(("create",), ("",), ("serviceaccounts/token",)),
        ]),
    ]
    return roles


def cluster_roles() -> list[dict[str, Any]]:
    return _user_facing() + _components()


def cluster_role_bindings() -> list[dict[str, Any]]:
    bindings = [
        cluster_role_binding("cluster-admin", "cluster-admin", [group("system:masters")]),
        cluster_role_binding("system:discovery", "system:discovery", [group(AUTHENTICATED)]),
        cluster_role_binding("system:basic-user", "system:basic-user", [group(AUTHENTICATED)]),
        cluster_role_binding("system:public-info-viewer", "system:public-info-viewer",
                             [group(AUTHENTICATED), group(UNAUTHENTICATED)]),
        cluster_role_binding(KUBE_CONTROLLER_MANAGER, KUBE_CONTROLLER_MANAGER, [user(KUBE_CONTROLLER_MANAGER)]),
        cluster_role_binding(KUBE_SCHEDULER, KUBE_SCHEDULER, [user(KUBE_SCHEDULER)]),
        cluster_role_binding("system:node", "system:node", [group(NODES_GROUP)]),
    ]
    bindings += [cluster_role_binding(f"system:controller:{name}", f"system:controller:{name}",
                                      [service_account(CONTROLLER_NAMESPACE, name)]) for name in CONTROLLER_RULES]
    operators = {account: namespace for namespace, account in OPERATOR_ACCOUNTS.values()}
    bindings += [cluster_role_binding(account, account, [service_account(namespace, account)])
                 for account, namespace in operators.items()]
    return bindings
