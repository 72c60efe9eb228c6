"""The jobs the demo's users submit, as plain manifests (what a user would write, nothing more).

They carry only a queue label, and a priority label where the user wants one: the user and
userid labels, the default priority, the scheduler, the gang label and `suspend` are the
gateway's to add. Pods run until deleted unless `run_for` says otherwise; the local cluster's
kubelets read that from the behavior annotation.
"""

from __future__ import annotations

import json
from typing import Any

from batchgate import keys
from batchgate.kinds import APPWRAPPER

BEHAVIOR_ANNOTATION = "localcluster.batchgate.dev/behavior"
IMAGE = "quay.io/project-codeflare/busybox:1.36"


def gpu_job(name: str, namespace: str, pods: int, gpus_per_pod: int, priority: str | None = None,
            run_for: str | None = None) -> dict[str, Any]:
    """A queued batch/v1 Job of `pods` pods that run together, each asking for `gpus_per_pod` GPUs."""
    labels = {keys.QUEUE_NAME_LABEL: "default-queue"}
    if priority:
        labels[keys.PRIORITY_CLASS_LABEL] = priority
    behavior = {"startAfter": "1s", **({"runFor": run_for} if run_for else {})}
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"parallelism": pods, "completions": pods, "template": {
            "metadata": {"annotations": {BEHAVIOR_ANNOTATION: json.dumps(behavior)}},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0, "containers": [{
                "name": "train", "image": IMAGE, "command": ["sh", "-c", "sleep 600"],
                "resources": {"requests": {"cpu": "1", "memory": "4Gi"},
                              "limits": {"nvidia.com/gpu": str(gpus_per_pod)}}}]}}},
    }


def pytorch_appwrapper(name: str, namespace: str, workers: int, nproc_per_node: int) -> dict[str, Any]:
    """An AppWrapper marked for the pytorch plugin: a master Job (1 pod) and a worker Job.

    No env, no hostname, no Service in it: the gateway lays it out and adds the Service, the
    controller creates the components, and each pod gets its env from the gateway.
    """

    def role(role_name: str, pods: int) -> dict[str, Any]:
        return {"template": {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"{name}-{role_name}", "labels": {keys.ROLE_LABEL: role_name}},
            "spec": {"completions": pods, "template": {
                "metadata": {"annotations": {BEHAVIOR_ANNOTATION: json.dumps({"startAfter": "1s"})}},
                "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0, "containers": [{
                    "name": "trainer", "image": "docker.io/pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
                    "command": ["torchrun", "train.py"],
                    "resources": {"requests": {"cpu": "2", "memory": "8Gi"}}}]}}}}}

    return {
        "apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper",
        "metadata": {"name": name, "namespace": namespace, "labels": {keys.FRAMEWORK_LABEL: "pytorch"},
                     "annotations": {keys.FRAMEWORK_ARGS_ANNOTATION: json.dumps({"nprocPerNode": str(nproc_per_node)})}},
        "spec": {"components": [role("master", 1), role("worker", workers)]},
    }


def _ray_template(container: str, cpu: str, memory: str) -> dict[str, Any]:
    return {"metadata": {"annotations": {BEHAVIOR_ANNOTATION: json.dumps({"startAfter": "1s"})}},
            "spec": {"terminationGracePeriodSeconds": 0, "containers": [{
                "name": container, "image": "quay.io/modh/ray:2.35.0-py311-cu121",
                "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}}]}}


def ray_cluster_spec(workers: int) -> dict[str, Any]:
    """A head and one worker group, as the CodeFlare SDK lays a cluster out."""
    return {"rayVersion": "2.35.0", "enableInTreeAutoscaling": False,
            "headGroupSpec": {"rayStartParams": {"dashboard-host": "0.0.0.0", "num-gpus": "0"},
                              "template": _ray_template("ray-head", "2", "8Gi")},
            "workerGroupSpecs": [{"groupName": "small-group", "replicas": workers, "minReplicas": workers,
                                  "maxReplicas": workers, "rayStartParams": {"block": "true"},
                                  "template": _ray_template("machine-learning", "2", "8Gi")}]}


def ray_cluster_appwrapper(name: str, namespace: str, workers: int) -> dict[str, Any]:
    """The CodeFlare SDK's default shape: a RayCluster in an AppWrapper (no queue label: the gateway adds it)."""
    cluster = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name},
               "spec": ray_cluster_spec(workers)}
    return {"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper",
            "metadata": {"name": name, "namespace": namespace}, "spec": {"components": [{"template": cluster}]}}


def ray_job(name: str, namespace: str, run_for: str, queue: str | None = "default-queue") -> dict[str, Any]:
    """A RayJob on a cluster of its own; its run is its submitter pod's run (the behaviour annotation)."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace,
                                "annotations": {BEHAVIOR_ANNOTATION: json.dumps({"startAfter": "1s", "runFor": run_for})}}
    if queue:
        metadata["labels"] = {keys.QUEUE_NAME_LABEL: queue}
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": metadata,
            "spec": {"entrypoint": "python /home/ray/samples/sample_code.py", "shutdownAfterJobFinishes": True,
                     "ttlSecondsAfterFinished": 10, "rayClusterSpec": ray_cluster_spec(1)}}


def ray_cluster(name: str, namespace: str) -> dict[str, Any]:
    """A bare RayCluster with no queue label: quota would not see it, so the gateway refuses it."""
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name, "namespace": namespace},
            "spec": ray_cluster_spec(1)}
