"""Builders for framework workloads, and a stand-in for the controllers that make their pods.

`pods_of` creates the pods the Job controller and the training operator would create from the
laid-out workload: generateName, the template's labels and annotations, and the index where
each controller writes it. No env, no hostname: those are the pod phase's job.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from batchgate import keys
from batchgate.kinds import APPWRAPPER, PYTORCHJOB
from webhook.rules.frameworks import FrameworkOutcome, FrameworkSettings, apply_frameworks
from webhook.rules.review import GroupVersionKind

POD = GroupVersionKind("", "v1", "Pod")
JOB = GroupVersionKind("batch", "v1", "Job")
APPWRAPPER = GroupVersionKind(APPWRAPPER.group, APPWRAPPER.version, "AppWrapper")

SETTINGS = FrameworkSettings(
    pytorch_port=23456,
    tensorflow_port=2222,
    mxnet_port=9091,
    mpi_hostfile_path="/etc/mpi/hostfile",
    mpi_slots_per_host=1,
    wait_image="busybox:1.36.1",
    wait_timeout_seconds=300,
)


def pod_template(role: str | None = None, container: str = "main", env: dict[str, str] | None = None) -> dict[str, Any]:
    template: dict[str, Any] = {
        "spec": {"restartPolicy": "Never", "containers": [{"name": container, "image": "img:1"}]}
    }
    if role is not None:
        template["metadata"] = {"labels": {keys.ROLE_LABEL: role}}
    if env:
        template["spec"]["containers"][0]["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return template


def indexed_job(
    name: str,
    completions: int | None,
    *,
    framework: str | None = None,
    role: str | None = None,
    args: dict[str, Any] | str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    job: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "team1"},
        "spec": {"template": pod_template(role), **spec},
    }
    if completions is not None:
        job["spec"]["completions"] = completions
    _label(job, framework, args)
    return job


def pytorchjob(name: str, *, masters: int | None = 1, workers: int | None = 3) -> dict[str, Any]:
    specs: dict[str, Any] = {}
    for rtype, count in (("Master", masters), ("Worker", workers)):
        if count is not None:
            specs[rtype] = {"replicas": count, "template": pod_template(container="pytorch")}
    return {"apiVersion": PYTORCHJOB.api_version, "kind": "PyTorchJob", "metadata": {"name": name},
            "spec": {"pytorchReplicaSpecs": specs}}


def appwrapper(
    name: str, *components: dict[str, Any], framework: str | None = None, args: dict[str, Any] | str | None = None
) -> dict[str, Any]:
    aw: dict[str, Any] = {
        "apiVersion": APPWRAPPER.api_version,
        "kind": "AppWrapper",
        "metadata": {"name": name, "namespace": "team1"},
        "spec": {"components": [{"template": copy.deepcopy(c)} for c in components]},
    }
    _label(aw, framework, args)
    return aw


def _label(obj: dict[str, Any], framework: str | None, args: dict[str, Any] | str | None) -> None:
    if framework is not None:
        obj["metadata"]["labels"] = {keys.FRAMEWORK_LABEL: framework}
    if args is not None:
        raw = args if isinstance(args, str) else json.dumps(args)
        obj["metadata"]["annotations"] = {keys.FRAMEWORK_ARGS_ANNOTATION: raw}


def admit(obj: dict[str, Any], kind: GroupVersionKind, settings: FrameworkSettings = SETTINGS,
          top_level: bool = True) -> FrameworkOutcome:
    """Run the framework phases on `obj` in place, as the mutate pipeline does on its copy."""
    return apply_frameworks(obj, kind, "CREATE", settings, top_level=top_level)


def assert_denied(obj: dict[str, Any], kind: GroupVersionKind, path: str, message: str) -> None:
    """The framework phases deny `obj` at `path` with `message` in the reason, and leave it as it was."""
    before = copy.deepcopy(obj)
    outcome = admit(obj, kind)
    assert outcome.error is not None, outcome
    assert outcome.error.path == path
    assert message in outcome.error.message
    assert obj == before, "a denied object is left untouched"


def _pod(template: dict[str, Any], owner_kind: str, labels: dict[str, str], annotations: dict[str, str]) -> dict[str, Any]:
    pod = {"apiVersion": "v1", "kind": "Pod", **copy.deepcopy(template)}
    meta = pod.setdefault("metadata", {})
    meta["generateName"] = "p-"
    meta.setdefault("labels", {}).update(labels)
    meta.setdefault("annotations", {}).update(annotations)
    meta["ownerReferences"] = [{"apiVersion": "v1", "kind": owner_kind, "name": "owner", "uid": "u", "controller": True}]
    return pod


def _job_pods(job: dict[str, Any]) -> list[dict[str, Any]]:
    index_key = keys.JOB_COMPLETION_INDEX_ANNOTATION
    return [
        _pod(job["spec"]["template"], "Job", {index_key: str(i)}, {index_key: str(i)})
        for i in range(job["spec"]["completions"])
    ]


def _pytorchjob_pods(job: dict[str, Any]) -> list[dict[str, Any]]:
    pods = []
    for rtype, replica in job["spec"]["pytorchReplicaSpecs"].items():
        for i in range(replica.get("replicas", 1)):
            labels = {keys.KUBEFLOW_REPLICA_TYPE_LABEL: rtype.lower(), keys.KUBEFLOW_REPLICA_INDEX_LABEL: str(i)}
            pods.append(_pod(replica["template"], "PyTorchJob", labels, {}))
    return pods


def pods_of(workload: dict[str, Any]) -> list[dict[str, Any]]:
    """The pods the workload's controllers would create from its (laid-out) templates."""
    if workload["kind"] == "Job":
        return _job_pods(workload)
    if workload["kind"] == "PyTorchJob":
        return _pytorchjob_pods(workload)
    pods: list[dict[str, Any]] = []
    for component in workload["spec"]["components"]:
        template = component["template"]
        if template["kind"] in ("Job", "PyTorchJob"):
            pods += pods_of(template)
    return pods


def env_of(pod: dict[str, Any], container: int = 0) -> dict[str, str]:
    return {e["name"]: e["value"] for e in pod["spec"]["containers"][container].get("env", [])}


def admitted_pods(workload: dict[str, Any], kind: GroupVersionKind) -> dict[str, dict[str, Any]]:
    """Lay out the workload, then admit each of its pods; pods keyed by their host name."""
    outcome = admit(workload, kind)
    assert outcome.error is None, outcome.error
    pods = {}
    for pod in pods_of(workload):
        result = admit(pod, POD)
        assert result.error is None, result.error
        pods[pod["spec"]["hostname"]] = pod
    return pods
