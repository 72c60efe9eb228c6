"""Per-kind strategy: name rules, defaults, status reset and validation, dispatched by resource.

Built-in kinds follow the Kubernetes validation the product and kubectl depend on; custom
resources follow their CRD's openAPIV3Schema (crd_schema.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from localcluster import crd_schema, workload_rules
from localcluster.errors import FieldError
from localcluster.names import dns1035_errors, label_errors, path_segment_errors, subdomain_errors
from localcluster.resources import ResourceType

_LABEL_NAMED = {("", "namespaces")}
_DNS1035_NAMED = {("", "services")}
_PATH_SEGMENT_NAMED = {("rbac.authorization.k8s.io", p) for p in ("roles", "rolebindings", "clusterroles",
                                                                  "clusterrolebindings")}


def name_errors(rt: ResourceType, name: str) -> list[str]:
    gr = rt.group_resource
    if gr in _LABEL_NAMED:
        return label_errors(name)
    if gr in _DNS1035_NAMED:
        return dns1035_errors(name)
    if gr in _PATH_SEGMENT_NAMED:
        return path_segment_errors(name)
    return subdomain_errors(name)


def _namespace_create(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict):
        spec.setdefault("finalizers", ["kubernetes"])
    obj["status"] = {"phase": "Active"}
    labels = obj["metadata"].setdefault("labels", {})
    if isinstance(labels, dict) and obj["metadata"].get("name"):
        labels["kubernetes.io/metadata.name"] = obj["metadata"]["name"]


def _service_create(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec.get("clusterIP") != "None":
        spec.setdefault("clusterIP", _cluster_ip(obj))
        spec["clusterIPs"] = [spec["clusterIP"]]
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
    obj["status"] = {"loadBalancer": {}}


def _cluster_ip(obj: dict[str, Any]) -> str:
    seed = sum(ord(c) * (i + 1) for i, c in enumerate(obj["metadata"].get("namespace", "") + "/" + str(obj["metadata"].get("name", ""))))
    return f"10.96.{(seed // 254) % 254 + 1}.{seed % 254 + 1}"


def _webhook_defaults(obj: dict[str, Any]) -> None:
    mutating = obj["kind"] == "MutatingWebhookConfiguration"
    for hook in obj.get("webhooks") or []:
        if not isinstance(hook, dict):
            continue
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        hook.setdefault("timeoutSeconds", 10)
        hook.setdefault("namespaceSelector", {})
        hook.setdefault("objectSelector", {})
        if mutating:
            hook.setdefault("reinvocationPolicy", "Never")
        for rule in hook.get("rules") or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")
        service = (hook.get("clientConfig") or {}).get("service")
        if isinstance(service, dict):
            service.setdefault("port", 443)


def _webhook_errors(obj: dict[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    names = set()
    for i, hook in enumerate(obj.get("webhooks") or []):
        path = f"webhooks[{i}]"
        if not isinstance(hook, dict):
            errors.append(FieldError("Invalid", path, "must be an object", hook))
            continue
        name = hook.get("name")
        if not name:
            errors.append(FieldError("Required", f"{path}.name", ""))
        elif name in names:
            errors.append(FieldError("Duplicate", f"{path}.name", value=name))
        names.add(name)
        if hook.get("sideEffects") not in ("None", "NoneOnDryRun"):
            if hook.get("sideEffects") is None:
                errors.append(FieldError("Required", f"{path}.sideEffects", ""))
            else:
                errors.append(FieldError("NotSupported", f"{path}.sideEffects", value=hook["sideEffects"],
                                         supported=("None", "NoneOnDryRun")))
        if not hook.get("admissionReviewVersions"):
            errors.append(FieldError("Required", f"{path}.admissionReviewVersions", ""))
        timeout = hook.get("timeoutSeconds")
        if not isinstance(timeout, int) or not 1 <= timeout <= 30:
            errors.append(FieldError("Invalid", f"{path}.timeoutSeconds", "the timeout value must be between 1 and 30 seconds", timeout))
        if hook.get("failurePolicy") not in ("Fail", "Ignore"):
            errors.append(FieldError("NotSupported", f"{path}.failurePolicy", value=hook.get("failurePolicy"), supported=("Fail", "Ignore")))
        config = hook.get("clientConfig") or {}
        if bool(config.get("url")) == bool(config.get("service")):
            errors.append(FieldError("Required", f"{path}.clientConfig", "exactly one of url or service is required"))
    return errors


def _configmap_errors(obj: dict[str, Any]) -> list[FieldError]:
    errors = []
    for section in ("data", "binaryData"):
        data = obj.get(section)
        if data is None:
            continue
        if not isinstance(data, dict):
            errors.append(FieldError("Invalid", section, "must be a map", data))
            continue
        for key, value in data.items():
            if not key or any(not (c.isalnum() or c in "-._") for c in key):
                errors.append(FieldError("Invalid", f"{section}[{key}]", "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')", key))
            if not isinstance(value, str):
                errors.append(FieldError("Invalid", f"{section}[{key}]", "must be a string", value))
    return errors


def _lease_errors(obj: dict[str, Any]) -> list[FieldError]:
    spec = obj.get("spec") or {}
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and (not isinstance(duration, int) or duration <= 0):
        return [FieldError("Invalid", "spec.leaseDurationSeconds", "must be greater than 0", duration)]
    return []


def _events_v1_errors(obj: dict[str, Any]) -> list[FieldError]:
    errors = []
    if not obj.get("eventTime"):
        errors.append(FieldError("Required", "eventTime", ""))
    for field_name in ("reportingController", "reportingInstance", "action", "reason"):
        value = obj.get(field_name)
        if not value:
            errors.append(FieldError("Required", field_name, ""))
        elif len(str(value)) > 128:
            errors.append(FieldError("TooLong", field_name, "must have at most 128 bytes", value))
    if obj.get("type") not in (None, "Normal", "Warning"):
        errors.append(FieldError("NotSupported", "type", value=obj.get("type"), supported=("Normal", "Warning")))
    return errors


def _core_event_errors(obj: dict[str, Any]) -> list[FieldError]:
    involved = obj.get("involvedObject")
    if not isinstance(involved, dict):
        return [FieldError("Required", "involvedObject", "")]
    errors = []
    if obj.get("type") not in (None, "", "Normal", "Warning"):
        errors.append(FieldError("NotSupported", "type", value=obj.get("type"), supported=("Normal", "Warning")))
    return errors


def _priority_class_errors(obj: dict[str, Any]) -> list[FieldError]:
    value = obj.get("value")
    if not isinstance(value, int) or isinstance(value, bool):
        return [FieldError("Required", "value", "")]
    return []


# Kinds whose creator also reports their status (a kubelet registering its Node).
_STATUS_KEPT_ON_CREATE = {("", "nodes")}

Prepare = Callable[[dict[str, Any]], None]
Validate = Callable[[dict[str, Any], dict[str, Any] | None], list[FieldError]]

_PREPARE: dict[tuple[str, str], Prepare] = {
    ("", "namespaces"): _namespace_create,
    ("", "pods"): workload_rules.prepare_pod,
    ("", "services"): _service_create,
    ("batch", "jobs"): workload_rules.prepare_job,
    ("apps", "deployments"): workload_rules.prepare_deployment,
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): _webhook_defaults,
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): _webhook_defaults,
    ("apiextensions.k8s.io", "customresourcedefinitions"): crd_schema.prepare_crd,
}

_VALIDATE: dict[tuple[str, str], Validate] = {
    ("", "pods"): lambda obj, old: workload_rules.validate_pod_spec(obj.get("spec"), "spec")
    + (workload_rules.validate_pod_update(obj, old) if old else []),
    ("", "configmaps"): lambda obj, old: _configmap_errors(obj),
    ("", "events"): lambda obj, old: _core_event_errors(obj),
    ("batch", "jobs"): workload_rules.validate_job,
    ("apps", "deployments"): lambda obj, old: workload_rules.validate_selector_workload(obj),
    ("apps", "replicasets"): lambda obj, old: workload_rules.validate_selector_workload(obj),
    ("apps", "statefulsets"): lambda obj, old: workload_rules.validate_selector_workload(obj),
    ("coordination.k8s.io", "leases"): lambda obj, old: _lease_errors(obj),
    ("events.k8s.io", "events"): lambda obj, old: _events_v1_errors(obj),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): lambda obj, old: _webhook_errors(obj),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): lambda obj, old: _webhook_errors(obj),
    ("scheduling.k8s.io", "priorityclasses"): lambda obj, old: _priority_class_errors(obj),
    ("apiextensions.k8s.io", "customresourcedefinitions"): crd_schema.validate_crd,
}


def prepare_for_create(rt: ResourceType, obj: dict[str, Any]) -> None:
    """The create strategy's own changes (a custom resource's defaults come with decoding: pipeline.py)."""
    if rt.has_status and rt.group_resource not in _STATUS_KEPT_ON_CREATE:
        obj.pop("status", None)
    prepare = _PREPARE.get(rt.group_resource)
    if prepare is not None:
        prepare(obj)


def prepare_for_update(rt: ResourceType, obj: dict[str, Any], old: dict[str, Any]) -> None:
    if rt.group_resource in (("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
                             ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
                             ("apiextensions.k8s.io", "customresourcedefinitions")):
        _PREPARE[rt.group_resource](obj)
    elif rt.group_resource == ("batch", "jobs"):
        spec, old_spec = obj.get("spec"), old.get("spec") or {}
        if isinstance(spec, dict):
            for key in ("selector", "manualSelector", "completionMode", "backoffLimit", "podReplacementPolicy"):
                if key not in spec and key in old_spec:
                    spec[key] = old_spec[key]
    elif rt.group_resource == ("", "namespaces"):
        if "spec" not in obj and "spec" in old:
            obj["spec"] = old["spec"]
        obj["status"] = old.get("status", {})
        labels = obj["metadata"].get("labels")
        if labels is None or isinstance(labels, dict):
            obj["metadata"]["labels"] = {**(labels or {}), "kubernetes.io/metadata.name": obj["metadata"]["name"]}


def validate(rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    if not rt.builtin:
        return crd_schema.validate_custom(rt, obj, old)
    check = _VALIDATE.get(rt.group_resource)
    return check(obj, old) if check else []


def validate_status(rt: ResourceType, obj: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    if not rt.builtin:
        return crd_schema.validate_custom(rt, obj, old)
    return []


def after_create_fields(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Fields that need the new uid (the Job selector)."""
    if rt.group_resource == ("batch", "jobs"):
        workload_rules.job_selector_fields(obj)
