"""Builders for wire objects and admission requests, so tests state only what matters.

    an_appwrapper("aw").with_job(replicas=4, gpus=8).build()
    a_request(a_job("train").with_queue("team-a").build(), user="alice")
"""

from __future__ import annotations

import copy
import re
from typing import Any

import yaml

from batchgate.api.paths import get_at
from demo.gateway_only import sample_objects
from demo.samples_scene import SAMPLES
from batchgate.policy import DEFAULT_POLICY
from webhook.rules.review import AdmissionRequest, GroupVersionKind, UserInfo


def sample(name: str) -> dict[str, Any]:
    """The first document of one of the demo's samples (`alice/appwrapper-job.yaml`), a fresh copy:
    the shapes MLBatch users submit, kept in this repository (demo/samples)."""
    return next(d for d in yaml.safe_load_all((SAMPLES / name).read_text()) if d)


def samples() -> list[tuple[str, dict[str, Any]]]:
    """(file, object) for every document of the demo's samples, fresh copies."""
    return list(sample_objects(SAMPLES))


def container(name: str = "main", gpus: int = 0, cpu: str = "1") -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": cpu}}
    if gpus:
        resources["limits"] = {"nvidia.com/gpu": gpus}
    return {"name": name, "image": "busybox", "command": ["sleep", "10"], "resources": resources}


def pod_template(gpus: int = 0, **spec: Any) -> dict[str, Any]:
    return {"spec": {"restartPolicy": "Never", "containers": [container(gpus=gpus)], **spec}}


class ObjectBuilder:
    def __init__(self, api_version: str, kind: str, name: str, namespace: str | None) -> None:
        self.obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}}
        if namespace:
            self.obj["metadata"]["namespace"] = namespace

    def labelled(self, key: str, value: str) -> "ObjectBuilder":
        self.obj["metadata"].setdefault("labels", {})[key] = value
        return self

    def annotated(self, key: str, value: str) -> "ObjectBuilder":
        self.obj["metadata"].setdefault("annotations", {})[key] = value
        return self

    def with_queue(self, queue: str = "default-queue") -> "ObjectBuilder":
        return self.labelled("kueue.x-k8s.io/queue-name", queue)

    def owned_by(self, kind: str, name: str, api_version: str = "workload.codeflare.dev/v1beta2") -> "ObjectBuilder":
        self.obj["metadata"]["ownerReferences"] = [
            {"apiVersion": api_version, "kind": kind, "name": name, "uid": "owner-uid", "controller": True}
        ]
        return self

    def with_spec(self, **fields: Any) -> "ObjectBuilder":
        self.obj.setdefault("spec", {}).update(fields)
        return self

    def build(self) -> dict[str, Any]:
        return copy.deepcopy(self.obj)


def a_pod(name: str = "pod", namespace: str | None = None, gpus: int = 0) -> ObjectBuilder:
    builder = ObjectBuilder("v1", "Pod", name, namespace)
    builder.obj["spec"] = pod_template(gpus)["spec"]
    return builder


def a_job(name: str = "job", namespace: str | None = None, parallelism: int = 1, completions: int | None = None,
          gpus: int = 0) -> ObjectBuilder:
    builder = ObjectBuilder("batch/v1", "Job", name, namespace)
    spec: dict[str, Any] = {"parallelism": parallelism, "template": pod_template(gpus)}
    if completions is not None:
        spec["completions"] = completions
    builder.obj["spec"] = spec
    return builder


def a_pytorchjob(name: str = "ptj", namespace: str | None = None, workers: int = 1, gpus: int = 0) -> ObjectBuilder:
    builder = ObjectBuilder("kubeflow.org/v1", "PyTorchJob", name, namespace)
    replicas = {"Master": {"replicas": 1, "template": pod_template(gpus)}}
    if workers:
        replicas["Worker"] = {"replicas": workers, "template": pod_template(gpus)}
    builder.obj["spec"] = {"pytorchReplicaSpecs": replicas}
    return builder


def a_raycluster(name: str = "ray", namespace: str | None = None, workers: tuple[int, ...] = (2,),
                 hosts: int | None = None) -> ObjectBuilder:
    """`hosts`: every worker group's numOfHosts (pods per replica), unset by default."""
    builder = ObjectBuilder("ray.io/v1", "RayCluster", name, namespace)
    builder.obj["spec"] = _ray_spec(workers)
    if hosts is not None:
        for group in builder.obj["spec"]["workerGroupSpecs"]:
            group["numOfHosts"] = hosts
    return builder


def a_rayjob(name: str = "rayjob", namespace: str | None = None, workers: tuple[int, ...] = (2,)) -> ObjectBuilder:
    builder = ObjectBuilder("ray.io/v1", "RayJob", name, namespace)
    builder.obj["spec"] = {"entrypoint": "python x.py", "rayClusterSpec": _ray_spec(workers)}
    return builder


def _ray_spec(workers: tuple[int, ...]) -> dict[str, Any]:
    return {
        "headGroupSpec": {"template": pod_template()},
        "workerGroupSpecs": [
            {"groupName": f"g{i}", "replicas": n, "template": pod_template()} for i, n in enumerate(workers)
        ],
    }


def a_deployment(name: str = "deploy", replicas: int = 2, kind: str = "Deployment") -> ObjectBuilder:
    builder = ObjectBuilder("apps/v1", kind, name, None)
    builder.obj["spec"] = {"replicas": replicas, "template": pod_template()}
    return builder


def a_jobset(name: str = "js", jobs: tuple[tuple[int, int], ...] = ((2, 2),)) -> ObjectBuilder:
    """`jobs`: (replicas, parallelism) per replicated job."""
    builder = ObjectBuilder("jobset.x-k8s.io/v1alpha2", "JobSet", name, None)
    builder.obj["spec"] = {
        "replicatedJobs": [
            {"name": f"rj{i}", "replicas": r, "template": {"spec": {"parallelism": p, "template": pod_template()}}}
            for i, (r, p) in enumerate(jobs)
        ]
    }
    return builder


def a_service(name: str = "svc") -> ObjectBuilder:
    builder = ObjectBuilder("v1", "Service", name, None)
    builder.obj["spec"] = {"clusterIP": "None", "selector": {"app": name}}
    return builder


class AppWrapperBuilder(ObjectBuilder):
    def __init__(self, name: str, namespace: str | None) -> None:
        super().__init__("workload.codeflare.dev/v1beta2", "AppWrapper", name, namespace)
        self.obj["spec"] = {"components": []}

    def with_component(self, template: dict[str, Any], pod_sets: list[dict[str, Any]] | None = None,
                       **extra: Any) -> "AppWrapperBuilder":
        component: dict[str, Any] = {"template": template, **extra}
        if pod_sets is not None:
            component["podSets"] = pod_sets
        self.obj["spec"]["components"].append(component)
        return self

    def with_job(self, replicas: int = 1, gpus: int = 0, **kwargs: Any) -> "AppWrapperBuilder":
        job = a_job(f"{self.obj['metadata']['name']}-job", parallelism=replicas, completions=replicas, gpus=gpus)
        return self.with_component(job.build(), **kwargs)

    def with_pod(self, gpus: int = 0, **kwargs: Any) -> "AppWrapperBuilder":
        return self.with_component(a_pod(f"{self.obj['metadata']['name']}-pod", gpus=gpus).build(), **kwargs)

    def with_pytorchjob(self, workers: int = 1, gpus: int = 0, **kwargs: Any) -> "AppWrapperBuilder":
        ptj = a_pytorchjob(f"{self.obj['metadata']['name']}-ptj", workers=workers, gpus=gpus)
        return self.with_component(ptj.build(), **kwargs)

    def suspended(self, value: bool = True) -> "AppWrapperBuilder":
        self.obj["spec"]["suspend"] = value
        return self


def an_appwrapper(name: str = "aw", namespace: str | None = "team-a") -> AppWrapperBuilder:
    return AppWrapperBuilder(name, namespace)


APPWRAPPER_CONTROLLER = DEFAULT_POLICY.controllers.app_wrapper[0]
"""The product's controller: what it creates owned by an AppWrapper is a wrapped component."""
JOB_CONTROLLER = "system:serviceaccount:kube-system:job-controller"
"""kube-controller-manager's Job controller (with --use-service-account-credentials): it makes a Job's pods."""


def a_request(
    obj: Any,
    *,
    user: str = "alice",
    uid: str = "uid-alice",
    groups: tuple[str, ...] = ("system:authenticated",),
    operation: str = "CREATE",
    old: Any = None,
    namespace: str = "team-a",
    kind: GroupVersionKind | None = None,
) -> AdmissionRequest:
    if kind is None:
        api_version = obj.get("apiVersion", "") if isinstance(obj, dict) else ""
        kind_name = obj.get("kind", "") if isinstance(obj, dict) else ""
        kind = GroupVersionKind.from_api_version(api_version if isinstance(api_version, str) else "",
                                                 kind_name if isinstance(kind_name, str) else "")
    name = obj.get("metadata", {}).get("name", "") if isinstance(obj, dict) and isinstance(
        obj.get("metadata"), dict) else ""
    return AdmissionRequest(
        uid="req-1", kind=kind, operation=operation,  # type: ignore[arg-type]
        user=UserInfo(user, uid, groups), namespace=namespace, name=name if isinstance(name, str) else "",
        object=obj, old_object=old,
    )


def value_at(obj: Any, path: str) -> Any:
    """Read a field path as rules print them: `metadata.labels[kueue.x-k8s.io/queue-name]`, `a[0].b`."""
    steps: list[Any] = []
    for name, index, key in re.findall(r"\.?([^.\[\]]+)|\[(\d+)\]|\[([^\]]+)\]", path):
        steps.append(name or (int(index) if index else key))
    return get_at(obj, tuple(steps))


def every_path(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value, the root `()` first: where a fuzzer may put junk."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += every_path(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += every_path(item, prefix + (index,))
    return found
