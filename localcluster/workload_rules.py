"""Defaults and validation for pods and the workload kinds that carry pod templates.

These follow the apis/core, apps and batch validation of Kubernetes 1.32 where the simulated
controllers and the product depend on them: a Job without containers or with a restartPolicy
of Always is Invalid, Jobs get their selector and labels from the server, pods start Pending.
"""

from __future__ import annotations

from typing import Any

from localcluster.errors import FieldError
from localcluster.names import label_errors

RESTART_POLICIES = ("Always", "OnFailure", "Never")
JOB_RESTART_POLICIES = ("OnFailure", "Never")
IMMUTABLE = "field is immutable"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def default_container(container: dict[str, Any]) -> None:
    image = str(container.get("image") or "")
    tag = image.rsplit("/", 1)[-1]
    if "imagePullPolicy" not in container:
        container["imagePullPolicy"] = "Always" if (":" not in tag or tag.endswith(":latest")) and "@" not in tag else "IfNotPresent"
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("resources", {})
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")


def default_pod_spec(spec: dict[str, Any], restart_policy: str = "Always") -> None:
    spec.setdefault("restartPolicy", restart_policy)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            if isinstance(container, dict):
                default_container(container)


def validate_pod_spec(spec: Any, path: str, restart_policies: tuple[str, ...] = RESTART_POLICIES) -> list[FieldError]:
    if not isinstance(spec, dict):
        return [FieldError("Required", f"{path}.containers", "")]
    errors: list[FieldError] = []
    containers = spec.get("containers")
    if not containers:
        errors.append(FieldError("Required", f"{path}.containers", ""))
    elif not isinstance(containers, list):
        errors.append(FieldError("Invalid", f"{path}.containers", "must be a list", containers))
    else:
        errors += _containers(containers, f"{path}.containers", set())
    init = spec.get("initContainers")
    if isinstance(init, list):
        errors += _containers(init, f"{path}.initContainers", {c.get("name") for c in containers or [] if isinstance(c, dict)})
    policy = spec.get("restartPolicy")
    if policy not in restart_policies:
        if policy is None and restart_policies == JOB_RESTART_POLICIES:
            errors.append(FieldError("Required", f"{path}.restartPolicy",
                                     'valid values: "OnFailure", "Never"'))
        elif policy is not None:
            errors.append(FieldError("NotSupported", f"{path}.restartPolicy", value=policy, supported=restart_policies))
    for field_name in ("nodeSelector",):
        value = spec.get(field_name)
        if value is not None and not isinstance(value, dict):
            errors.append(FieldError("Invalid", f"{path}.{field_name}", "must be a map", value))
    return errors


def _containers(containers: list[Any], path: str, taken: set[Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    seen = set(taken)
    for i, container in enumerate(containers):
        where = f"{path}[{i}]"
        if not isinstance(container, dict):
            errors.append(FieldError("Invalid", where, "must be an object", container))
            continue
        name = container.get("name")
        if not name:
            errors.append(FieldError("Required", f"{where}.name", ""))
        else:
            for msg in label_errors(str(name)):
                errors.append(FieldError("Invalid", f"{where}.name", msg, name))
            if name in seen:
                errors.append(FieldError("Duplicate", f"{where}.name", value=name))
            seen.add(name)
        if not container.get("image"):
            errors.append(FieldError("Required", f"{where}.image", ""))
    return errors


def prepare_pod(pod: dict[str, Any]) -> None:
    spec = pod.setdefault("spec", {})
    if isinstance(spec, dict):
        default_pod_spec(spec)
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("priority", 0)
        spec.setdefault("tolerations", [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        ])
    pod["status"] = {"phase": "Pending", "qosClass": _qos(spec if isinstance(spec, dict) else {})}


def _qos(spec: dict[str, Any]) -> str:
    requests_limits = [(c.get("resources") or {}) for c in spec.get("containers") or [] if isinstance(c, dict)]
    if not any(r.get("requests") or r.get("limits") for r in requests_limits):
        return "BestEffort"
    if all(r.get("limits") and (not r.get("requests") or r.get("requests") == r.get("limits"))
           and {"cpu", "memory"} <= set(r["limits"]) for r in requests_limits):
        return "Guaranteed"
    return "Burstable"


_POD_MUTABLE_SPEC = ("activeDeadlineSeconds", "tolerations", "schedulingGates", "terminationGracePeriodSeconds")


def validate_pod_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """Pods may change only images, deadlines, added tolerations and removed gates after create."""
    def comparable(spec: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in spec.items() if k not in _POD_MUTABLE_SPEC and k != "nodeName"}
        for key in ("containers", "initContainers"):
            if key in out:
                out[key] = [{k: v for k, v in c.items() if k != "image"} if isinstance(c, dict) else c for c in out[key]]
        return out

    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    errors = []
    if comparable(new_spec) != comparable(old_spec):
        errors.append(FieldError("Forbidden", "spec",
                                 "pod updates may not change fields other than `spec.containers[*].image`,"
                                 "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
                                 "`spec.tolerations` (only additions to existing tolerations),"
                                 "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"))
    if new_spec.get("nodeName") != old_spec.get("nodeName") and old_spec.get("nodeName"):
        errors.append(FieldError("Invalid", "spec.nodeName", IMMUTABLE, new_spec.get("nodeName")))
    return errors


def prepare_job(job: dict[str, Any]) -> None:
    spec = job.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        default_pod_spec(template["spec"], restart_policy=template["spec"].get("restartPolicy"))
        if template["spec"].get("restartPolicy") is None:
            template["spec"].pop("restartPolicy")
    job["status"] = {}


def job_selector_fields(job: dict[str, Any]) -> None:
    """The controller-uid selector and template labels the server gives every Job."""
    spec = job.get("spec") or {}
    if spec.get("manualSelector"):
        return
    uid, name = job["metadata"]["uid"], job["metadata"]["name"]
    spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    template = spec.setdefault("template", {})
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    labels.update({"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
                   "controller-uid": uid, "job-name": name})


def validate_job(job: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    spec = job.get("spec")
    if not isinstance(spec, dict):
        return [FieldError("Required", "spec.template", "")]
    errors: list[FieldError] = []
    template = spec.get("template")
    if not isinstance(template, dict) or not template.get("spec"):
        errors.append(FieldError("Required", "spec.template.spec.containers", ""))
    else:
        errors += validate_pod_spec(template.get("spec"), "spec.template.spec", JOB_RESTART_POLICIES)
    for field_name in ("parallelism", "completions", "backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"):
        value = spec.get(field_name)
        if value is not None and (not _is_int(value) or value < 0):
            errors.append(FieldError("Invalid", f"spec.{field_name}", "must be greater than or equal to 0", value))
    mode = spec.get("completionMode")
    if mode not in ("NonIndexed", "Indexed"):
        errors.append(FieldError("NotSupported", "spec.completionMode", value=mode, supported=("NonIndexed", "Indexed")))
    elif mode == "Indexed" and spec.get("completions") is None:
        errors.append(FieldError("Required", "spec.completions", "when completion mode is Indexed"))
    if old is not None:
        errors += _job_immutables(spec, old.get("spec") or {})
    return errors


def _job_immutables(spec: dict[str, Any], old_spec: dict[str, Any]) -> list[FieldError]:
    errors = []
    if spec.get("selector") != old_spec.get("selector"):
        errors.append(FieldError("Invalid", "spec.selector", IMMUTABLE, spec.get("selector")))
    if spec.get("completionMode") != old_spec.get("completionMode"):
        errors.append(FieldError("Invalid", "spec.completionMode", IMMUTABLE, spec.get("completionMode")))
    elastic = spec.get("completionMode") == "Indexed" and spec.get("completions") == spec.get("parallelism")
    if spec.get("completions") != old_spec.get("completions") and not elastic:
        errors.append(FieldError("Invalid", "spec.completions", IMMUTABLE, spec.get("completions")))
    if spec.get("template") != old_spec.get("template") and not old_spec.get("suspend"):
        errors.append(FieldError("Invalid", "spec.template", IMMUTABLE, "core.PodTemplateSpec{...}"))
    return errors


def prepare_deployment(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("replicas", 1)
    spec.setdefault("strategy", {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        default_pod_spec(template["spec"])


def validate_selector_workload(obj: dict[str, Any], restart: tuple[str, ...] = ("Always",)) -> list[FieldError]:
    """Deployments, ReplicaSets, StatefulSets, DaemonSets: selector required and matching the template."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [FieldError("Required", "spec.selector", "")]
    errors: list[FieldError] = []
    selector = spec.get("selector")
    template = found if isinstance(found := spec.get("template"), dict) else {}
    labels = ((template.get("metadata") or {}).get("labels")) or {}
    if not isinstance(selector, dict) or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        errors.append(FieldError("Required", "spec.selector", ""))
    else:
        match = selector.get("matchLabels") or {}
        if any(labels.get(k) != v for k, v in match.items()):
            errors.append(FieldError("Invalid", "spec.template.metadata.labels",
                                     "`selector` does not match template `labels`", labels))
    errors += validate_pod_spec(template.get("spec"), "spec.template.spec", restart)
    replicas = spec.get("replicas")
    if replicas is not None and (not _is_int(replicas) or replicas < 0):
        errors.append(FieldError("Invalid", "spec.replicas", "must be greater than or equal to 0", replicas))
    return errors
