"""The JSON shapes of built-in kinds, checked before any strategy runs.

kube-apiserver decodes a body into Go structs, so a field of the wrong JSON type (a list where
an object belongs, a string for a number) is a 400 before anything else looks at it. This table
declares the shape of the fields this server reads or defaults; fields it does not list are
carried as sent. A shape is a Python type, an object shape (a dict of field shapes), a list of
one shape (`[shape]`), or `Map(value)` for string-keyed maps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from localcluster.errors import ApiError
from localcluster.resources import ResourceType


@dataclass(frozen=True)
class Map:
    value: Any


Shape = Any
STRINGS = Map(str)
SELECTOR = {"matchLabels": STRINGS, "matchExpressions": [{"key": str, "operator": str, "values": [str]}]}
CONTAINER = {"name": str, "image": str, "command": [str], "args": [str], "workingDir": str,
             "ports": [{"name": str, "containerPort": int, "protocol": str}], "env": [{"name": str, "value": str}],
             "resources": {"requests": Map((str, int, float)), "limits": Map((str, int, float))},
             "imagePullPolicy": str}
POD_SPEC = {"containers": [CONTAINER], "initContainers": [CONTAINER], "nodeName": str, "nodeSelector": STRINGS,
            "restartPolicy": str, "schedulerName": str, "serviceAccountName": str, "priority": int,
            "priorityClassName": str, "tolerations": [dict], "schedulingGates": [{"name": str}],
            "readinessGates": [dict], "affinity": dict, "volumes": [dict], "terminationGracePeriodSeconds": int,
            "activeDeadlineSeconds": int, "hostname": str, "subdomain": str}
POD_TEMPLATE = {"metadata": {"labels": STRINGS, "annotations": STRINGS}, "spec": POD_SPEC}
CONDITIONS = [{"type": str, "status": str, "reason": str, "message": str}]
POD_STATUS = {"phase": str, "conditions": CONDITIONS, "podIP": str, "hostIP": str, "nominatedNodeName": str,
              "containerStatuses": [{"name": str, "ready": bool, "restartCount": int, "state": Map(dict)}],
              "initContainerStatuses": [dict]}
WORKLOAD = {"spec": {"replicas": int, "selector": SELECTOR, "template": POD_TEMPLATE},
            "status": {"replicas": int, "readyReplicas": int, "updatedReplicas": int, "availableReplicas": int,
                       "conditions": CONDITIONS}}
WEBHOOKS = {"webhooks": [{"name": str, "clientConfig": {"url": str, "caBundle": str, "service": {
    "name": str, "namespace": str, "path": str, "port": int}}, "rules": [{
        "operations": [str], "apiGroups": [str], "apiVersions": [str], "resources": [str], "scope": str}],
    "failurePolicy": str, "matchPolicy": str, "sideEffects": str, "timeoutSeconds": int,
    "admissionReviewVersions": [str], "namespaceSelector": SELECTOR, "objectSelector": SELECTOR,
    "reinvocationPolicy": str, "matchConditions": [dict]}]}
REFERENCE = {"kind": str, "namespace": str, "name": str, "uid": str, "apiVersion": str, "fieldPath": str}

SHAPES: dict[tuple[str, str], dict[str, Shape]] = {
    ("", "pods"): {"spec": POD_SPEC, "status": POD_STATUS},
    ("", "namespaces"): {"spec": {"finalizers": [str]}, "status": {"phase": str}},
    ("", "services"): {"spec": {"ports": [{"name": str, "port": int, "protocol": str}], "selector": STRINGS,
                                "clusterIP": str, "type": str}},
    ("", "configmaps"): {"data": dict, "binaryData": dict},
    ("", "nodes"): {"spec": {"unschedulable": bool, "taints": [dict]},
                    "status": {"conditions": CONDITIONS, "capacity": dict, "allocatable": dict, "addresses": [dict],
                               "nodeInfo": dict}},
    ("", "events"): {"involvedObject": REFERENCE, "source": {"component": str, "host": str}, "reason": str,
                     "message": str, "type": str, "count": int},
    ("events.k8s.io", "events"): {"regarding": REFERENCE, "note": str, "reason": str, "type": str, "action": str},
    ("batch", "jobs"): {"spec": {"parallelism": int, "completions": int, "backoffLimit": int, "suspend": bool,
                                 "completionMode": str, "manualSelector": bool, "selector": SELECTOR,
                                 "activeDeadlineSeconds": int, "ttlSecondsAfterFinished": int, "template": POD_TEMPLATE},
                        "status": {"active": int, "succeeded": int, "failed": int, "conditions": CONDITIONS,
                                   "startTime": str, "completionTime": str}},
    ("apps", "deployments"): WORKLOAD,
    ("apps", "replicasets"): WORKLOAD,
    ("apps", "statefulsets"): WORKLOAD,
    ("apps", "daemonsets"): {"spec": {"selector": SELECTOR, "template": POD_TEMPLATE}},
    ("coordination.k8s.io", "leases"): {"spec": {"holderIdentity": str, "leaseDurationSeconds": int,
                                                 "leaseTransitions": int, "acquireTime": str, "renewTime": str}},
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): WEBHOOKS,
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): WEBHOOKS,
    ("scheduling.k8s.io", "priorityclasses"): {"value": int, "globalDefault": bool, "description": str},
    ("apiextensions.k8s.io", "customresourcedefinitions"): {"spec": {
        "group": str, "scope": str, "names": {"plural": str, "singular": str, "kind": str, "listKind": str,
                                              "shortNames": [str], "categories": [str]},
        "versions": [{"name": str, "served": bool, "storage": bool, "schema": {"openAPIV3Schema": dict},
                      "subresources": dict, "additionalPrinterColumns": [dict]}]}},
}

_JSON = {dict: "object", list: "array", str: "string", bool: "bool", int: "number", float: "number"}
_GO = {str: "string", int: "int32", float: "float64", bool: "bool", dict: "object", list: "array"}


def _json_type(value: Any) -> str:
    return "null" if value is None else _JSON.get(type(value), "value")


def _go_type(shape: Shape) -> str:
    if isinstance(shape, list):
        return "[]" + _go_type(shape[0])
    if isinstance(shape, Map):
        return "map[string]" + _go_type(shape.value)
    if isinstance(shape, dict):
        return "struct"
    if isinstance(shape, tuple):
        return "resource.Quantity"
    return _GO.get(shape, "value")


def _fits(shape: Shape, value: Any) -> bool:
    if value is None:
        return True  # null is the zero value: Go accepts it for every field
    if isinstance(shape, dict) or isinstance(shape, Map) or shape is dict:
        return isinstance(value, dict)
    if isinstance(shape, list) or shape is list:
        return isinstance(value, list)
    if isinstance(shape, tuple):
        return isinstance(value, shape) and not isinstance(value, bool)
    if shape is int:
        return isinstance(value, int) and not isinstance(value, bool) or isinstance(value, float) and value.is_integer()
    if shape is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, shape)


def mismatch(shape: Shape, value: Any, path: str) -> tuple[str, Any, Shape] | None:
    """The first field (path, value, shape) whose JSON type the shape does not allow."""
    if not _fits(shape, value):
        return path, value, shape
    if value is None:
        return None
    if isinstance(shape, dict):
        for key, sub in shape.items():
            found = mismatch(sub, value.get(key), f"{path}.{key}" if path else key)
            if found:
                return found
    elif isinstance(shape, Map):
        for key, item in value.items():
            found = mismatch(shape.value, item, f"{path}[{key}]")
            if found:
                return found
    elif isinstance(shape, list):
        for item in value:
            found = mismatch(shape[0], item, path)
            if found:
                return found
    return None


def check(rt: ResourceType, obj: dict[str, Any], subresource: str = "") -> None:
    """Raise the 400 kube-apiserver's decoder gives when a field has the wrong JSON type."""
    shape = SHAPES.get(rt.group_resource, {}) if rt.builtin else {}
    top = {"spec": dict, "status": dict, **shape} if rt.builtin else {}
    if subresource == "status":
        top = {"status": top.get("status", dict)}
    found = mismatch(top, obj, "")
    if found is None:
        return
    path, value, want = found
    raise ApiError(400, "BadRequest", f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: json: '
                   f"cannot unmarshal {_json_type(value)} into Go struct field {rt.kind}.{path} of type {_go_type(want)}")
