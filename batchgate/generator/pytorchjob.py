"""What MLBatch's pytorchjob-generator renders for a settings file: one AppWrapper holding one
PyTorchJob, a master and `numPods - 1` workers with identical pod templates.

Pure: settings in, wire dicts out. The gateway adds its own fields when the AppWrapper is
submitted (submitter labels, scheduler, gang label, suspend); docs/users.md lists where the
output differs from the chart's and why.
"""

from __future__ import annotations

import copy
from typing import Any

from batchgate import keys
from batchgate.kinds import APPWRAPPER, PYTORCHJOB
from batchgate.generator.settings import Settings

GENERATOR_VERSION = "1.1.12"
"""The chart version whose output this reproduces (its annotation tells the two apart from hand-written jobs)."""
MLBATCH_COSCHEDULER = "scheduler-plugins-scheduler"
"""MLBatch's gang scheduler, which batchgate replaces: pods that name it get batchgate's instead."""
SAKKARA = "sakkara"
DEFAULT_ROCE_GDR_RESOURCE = "nvidia.com/roce_gdr"
UNHEALTHY_GPU_VALUES = ("ERR", "TESTING", "EVICT")
"""Autopilot health values of nodes the chart keeps every pod away from."""
DEFAULT_NVME_MOUNT = "/workspace/scratch-nvme"
NVME_VOLUME, NVME_STORAGE_CLASS = "ephemeral-odf-lvm-vg1", "odf-lvm-vg1"
TOPOLOGY_VOLUME, TOPOLOGY_DIR = "topology-volume", "/var/run/nvidia-topologyd"
SSH_KEY_VOLUME, SSH_KEY_DIR = "private-ssh-git-deploy-key", "/tmp/.ssh/keys"
SSH_HOSTS_VOLUME, SSH_HOSTS_DIR = "github-known-hosts", "/tmp/.ssh/hosts"
SHARED_MEMORY_VOLUME = "dshm"
CONTAINER = "pytorch"

_FAULT_TOLERANCE = (
    ("admission_grace_period_duration", keys.ADMISSION_GRACE_PERIOD_ANNOTATION),
    ("warmup_grace_period_duration", keys.WARMUP_GRACE_PERIOD_ANNOTATION),
    ("failure_grace_period_duration", keys.FAILURE_GRACE_PERIOD_ANNOTATION),
    ("retry_pause_period_duration", keys.RETRY_PAUSE_PERIOD_ANNOTATION),
    ("retry_limit", keys.RETRY_LIMIT_ANNOTATION),
    ("forceful_deletion_grace_period_duration", keys.FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION),
    ("deletion_on_failure_grace_period_duration", keys.DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION),
    ("success_ttl_duration", keys.SUCCESS_TTL_ANNOTATION),
)


def generate_appwrapper(s: Settings) -> dict[str, Any]:
    """The AppWrapper the chart renders for `s`."""
    custom = {label.key: label.value for label in s.custom_labels}
    metadata: dict[str, Any] = {"name": s.job_name}
    if s.namespace:
        metadata["namespace"] = s.namespace
    metadata["annotations"] = {keys.PYTORCH_GENERATOR_VERSION_ANNOTATION: GENERATOR_VERSION, **_fault_tolerance(s)}
    labels = {keys.QUEUE_NAME_LABEL: s.queue_name} if s.queue_name else {}
    if labels or custom:
        metadata["labels"] = {**labels, **custom}
    job_metadata: dict[str, Any] = {"name": s.job_name}
    if custom:
        job_metadata["labels"] = dict(custom)
    replica_specs = {"Master": _replicas(s, 1)}
    if s.num_pods > 1:  # the chart leaves the Worker out of a one-pod job
        replica_specs["Worker"] = _replicas(s, s.num_pods - 1)
    job = {"apiVersion": PYTORCHJOB.api_version, "kind": "PyTorchJob", "metadata": job_metadata,
           "spec": {"pytorchReplicaSpecs": replica_specs}}
    return {"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper", "metadata": metadata,
            "spec": {"components": [{"template": job}]}}


def go_duration(text: str) -> str:
    """A chart duration as the AppWrapper controller reads it: Go durations have no days."""
    return f"{int(text[:-1]) * 24}h" if text.endswith("d") else text


def _fault_tolerance(s: Settings) -> dict[str, str]:
    out = {}
    for attribute, annotation in _FAULT_TOLERANCE:
        value = getattr(s, attribute)
        if value is not None:
            out[annotation] = str(value) if isinstance(value, int) else go_duration(value)
    return out


def _replicas(s: Settings, count: int) -> dict[str, Any]:
    return {"replicas": count, "restartPolicy": s.restart_policy, "template": _pod_template(s)}


def _pod_template(s: Settings) -> dict[str, Any]:
    out: dict[str, Any] = {}
    metadata = _pod_metadata(s)
    if metadata:
        out["metadata"] = metadata
    spec: dict[str, Any] = {}
    if s.service_account_name:
        spec["serviceAccountName"] = s.service_account_name
    spec["imagePullSecrets"] = [{"name": name} for name in s.image_pull_secrets]
    if s.init_containers:
        spec["initContainers"] = [{"name": c.name, "image": c.image, "command": list(c.command)}
                                  for c in s.init_containers]
    if s.termination_grace_period_seconds is not None:
        spec["terminationGracePeriodSeconds"] = s.termination_grace_period_seconds
    if s.scheduler_name and s.scheduler_name != MLBATCH_COSCHEDULER:
        spec["schedulerName"] = s.scheduler_name
    spec["priorityClassName"] = s.priority
    spec["affinity"] = _affinity(s)
    spec["volumes"] = _volumes(s)
    spec["containers"] = [_container(s)]
    out["spec"] = spec
    return out


def _pod_metadata(s: Settings) -> dict[str, Any]:
    labels = {label.key: label.value for label in s.custom_labels}
    if s.autopilot_health_checks:
        labels["autopilot"] = ""
        labels.update({check: "" for check in s.autopilot_health_checks})
    out: dict[str, Any] = {"labels": labels} if labels else {}
    if s.multi_nic_network_name:
        out["annotations"] = {"k8s.v1.cni.cncf.io/networks": s.multi_nic_network_name}
    return out


def _affinity(s: Settings) -> dict[str, Any]:
    expressions = [{"key": keys.AUTOPILOT_GPU_HEALTH_LABEL, "operator": "NotIn", "values": list(UNHEALTHY_GPU_VALUES)}]
    if s.host_ignore_list:
        expressions.append({"key": "kubernetes.io/hostname", "operator": "NotIn", "values": list(s.host_ignore_list)})
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": expressions}]}}}


def _volumes(s: Settings) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if s.topology_file_config_map:
        out.append({"name": TOPOLOGY_VOLUME, "configMap": {"name": s.topology_file_config_map}})
    if s.mount_nvme:
        claim = {"storageClassName": NVME_STORAGE_CLASS, "volumeMode": "Filesystem", "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": s.mount_nvme.storage}}}
        out.append({"name": NVME_VOLUME, "ephemeral": {"volumeClaimTemplate": {"spec": claim}}})
    out += [{"name": v.name, "persistentVolumeClaim": {"claimName": v.claim_name}} for v in s.volumes]
    if s.ssh_git_clone_config:
        git = s.ssh_git_clone_config
        out.append({"name": SSH_KEY_VOLUME, "secret": {"secretName": git.secret_name, "optional": False}})
        out.append({"name": SSH_HOSTS_VOLUME, "configMap": {"name": git.config_map_name}})
    if not s.disable_shared_memory:
        out.append({"name": SHARED_MEMORY_VOLUME, "emptyDir": {"medium": "Memory"}})
    return out


def _mounts(s: Settings) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if s.topology_file_config_map:
        out.append({"name": TOPOLOGY_VOLUME, "mountPath": TOPOLOGY_DIR})
    if s.mount_nvme:
        out.append({"name": NVME_VOLUME, "mountPath": s.mount_nvme.mount_path or DEFAULT_NVME_MOUNT})
    out += [{"name": v.name, "mountPath": v.mount_path} for v in s.volumes]
    if s.ssh_git_clone_config:
        git = s.ssh_git_clone_config
        out.append({"name": SSH_KEY_VOLUME, "readOnly": True, "mountPath": git.secret_mount_path or SSH_KEY_DIR})
        out.append({"name": SSH_HOSTS_VOLUME, "mountPath": git.config_map_mount_path or SSH_HOSTS_DIR})
    if not s.disable_shared_memory:
        out.append({"name": SHARED_MEMORY_VOLUME, "mountPath": "/dev/shm"})
    return out


def _container(s: Settings) -> dict[str, Any]:
    out: dict[str, Any] = {"name": CONTAINER, "image": s.container_image,
                           "imagePullPolicy": s.image_pull_policy or "IfNotPresent"}
    if s.num_roce_gdr > 0 or s.service_account_name == "gdr":
        out["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}
    env_from = [copy.deepcopy(dict(source)) for source in s.env_from]
    if s.nccl_gdr_env_config_map:
        env_from.append({"configMapRef": {"name": s.nccl_gdr_env_config_map}})
    if env_from:
        out["envFrom"] = env_from
    out["env"] = _env(s)
    out["volumeMounts"] = _mounts(s)
    out["resources"] = _resources(s)
    out["command"] = ["sh", "-c", _script(s)]
    return out


def _env(s: Settings) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if s.scheduler_name == SAKKARA:
        out.append({"name": "SAKKARA_RANK",
                    "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['sakkara.member.rank']"}}})
    if s.topology_file_config_map:
        out.append({"name": "NCCL_TOPO_FILE", "value": f"{TOPOLOGY_DIR}/virtualTopology.xml"})
    if s.mount_nvme:
        out.append({"name": "NVME_MOUNT_PATH", "value": s.mount_nvme.mount_path or DEFAULT_NVME_MOUNT})
    for variable in s.environment_variables:
        if variable.value is not None:
            out.append({"name": variable.name, "value": variable.value})
        elif variable.secret is not None:
            out.append({"name": variable.name, "valueFrom": {"secretKeyRef": {
                "name": variable.secret.name, "key": variable.secret.key}}})
        elif variable.configmap is not None:
            out.append({"name": variable.name, "valueFrom": {"configMapKeyRef": {
                "name": variable.configmap.name, "key": variable.configmap.key}}})
    if s.ssh_git_clone_config:
        git = s.ssh_git_clone_config
        command = git.ssh_cmd or (f"ssh -i {git.secret_mount_path or SSH_KEY_DIR}/id_rsa -o UserKnownHostsFile="
                                  f"{git.config_map_mount_path or SSH_HOSTS_DIR}/known_hosts -vv")
        out.append({"name": "GIT_SSH_COMMAND", "value": command})
    return out


def _resources(s: Settings) -> dict[str, Any]:
    roce = s.roce_gdr_res_name or DEFAULT_ROCE_GDR_RESOURCE
    requests = {"cpu": s.num_cpus_per_pod, keys.GPU_RESOURCE: s.num_gpus_per_pod,
                "memory": s.total_memory_per_pod, roce: s.num_roce_gdr}
    limits = {"cpu": s.limit_cpus_per_pod or s.num_cpus_per_pod,
              keys.GPU_RESOURCE: s.limit_gpus_per_pod or s.num_gpus_per_pod,
              "memory": s.limit_memory_per_pod or s.total_memory_per_pod, roce: s.num_roce_gdr}
    return {"requests": requests, "limits": limits}


def _script(s: Settings) -> str:
    """The container's `sh -c` script: what the training operator set, the setup commands, torchrun."""
    lines = [
        'echo "Environment variables set by the kubeflow training operator:"',
        "echo ${MASTER_ADDR}:${MASTER_PORT}",
        'echo "PYTHONUNBUFFERED:"${PYTHONUNBUFFERED}',
        "echo My global rank is ${RANK} / ${WORLD_SIZE}",
        'echo "Other injected environment variables:"',
        'echo "NVME_MOUNT_PATH: "${NVME_MOUNT_PATH}',
        "#",
        "# User commands",
        "#",
    ]
    if s.scheduler_name == SAKKARA:
        lines += ['echo "Sakkara is enabled: using Sakkara-assigned rank instead of the default PyTorchJob rank"',
                  "export RANK=$SAKKARA_RANK"]
    lines += s.setup_commands
    if s.main_program:
        per_node = f" --nproc_per_node={s.num_gpus_per_pod}" if s.num_gpus_per_pod > 0 else ""
        torchrun = (f"torchrun --nnodes=${{WORLD_SIZE}} --node_rank=${{RANK}}{per_node} --rdzv_id=101 "
                    f'--rdzv_endpoint="${{MASTER_ADDR}}:${{MASTER_PORT}}" {s.main_program}')
        lines += [f"echo executing: {torchrun}", torchrun]
    return "\n".join(lines) + "\n"
