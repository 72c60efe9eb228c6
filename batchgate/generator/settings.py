"""The pytorchjob-generator's settings file (MLBatch's Helm chart values), read unchanged.

Every key of the chart's values schema, with its defaults, types, enums and patterns, plus the
checks the chart's templates make (job name length, label syntax, an environment variable's
source). Errors are collected, one per bad setting, each with its line: `settings.yaml:7:
numPods: must be at least 1, got 0`. Where batchgate reads a value differently from the chart,
docs/users.md says so and why.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from batchgate import keys
from batchgate.api.errors import FieldError, child
from batchgate.api.located_yaml import LocatedYAMLError, line_for, load_located
from batchgate.generator.shapes import (
    Boolean, Integer, KubernetesType, ListOf, Nullable, OneOf, Record, Scalar, Schema, Shape, Text,
)

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema#"
_QUANTITY = r"^[0-9]+?(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)$"
RFC1123_LABEL = Text(
    pattern=r"^[a-z]([-a-z0-9]*[a-z0-9])?$", min_length=1, max_length=63, ref="rfc1123Label",
    hint="a lowercase RFC 1123 label (letters, digits and '-', starting with a letter, ending with a letter or digit)",
)
CPU = OneOf(
    (Integer(minimum=1), Text(pattern=_QUANTITY, hint="a quantity with a unit")),
    hint="a whole number of CPUs or a quantity with a unit, such as 500m", ref="resourceCPU",
)
MEMORY = Text(pattern=_QUANTITY, hint="a whole quantity with a unit, such as 512Mi or 1Gi", ref="resourceMemory")
DURATION = Text(pattern=r"^[0-9]+?(s|m|h|d)$", ref="duration",
                hint="a whole number of seconds, minutes, hours or days, such as 90s, 10m, 2h or 7d")
JOB_NAME_LENGTH = 50
"""The chart's limit: the training operator derives longer names (Services, pods) from it."""

_LABEL_NAME = re.compile(r"^[a-z]([-a-z0-9._]*[a-z0-9])?$")
_LABEL_PREFIX = re.compile(r"^[a-z]([-a-z0-9.]*[a-z0-9])?$")


# --- the models of the list and object settings --------------------------------------------

@dataclass(frozen=True)
class CustomLabel:
    key: str
    value: str


@dataclass(frozen=True)
class KeyRef:
    """A key of a Secret or ConfigMap."""

    name: str
    key: str


@dataclass(frozen=True)
class EnvironmentVariable:
    """Exactly one of a literal value, a Secret key or a ConfigMap key."""

    name: str
    value: str | None = None
    secret: KeyRef | None = None
    configmap: KeyRef | None = None


@dataclass(frozen=True)
class Volume:
    """A PersistentVolumeClaim mounted in every pod."""

    name: str
    claim_name: str
    mount_path: str


@dataclass(frozen=True)
class SshGitClone:
    secret_name: str
    config_map_name: str
    secret_mount_path: str | None = None
    config_map_mount_path: str | None = None
    ssh_cmd: str | None = None


@dataclass(frozen=True)
class NVMe:
    storage: str
    mount_path: str | None = None


@dataclass(frozen=True)
class InitContainer:
    name: str
    image: str
    command: tuple[str, ...]


def _custom_label(parsed: dict[str, Any], path: str) -> CustomLabel:
    key, value = parsed["key"], parsed["value"]
    prefix, slash, name = key.rpartition("/")
    if not _LABEL_NAME.match(name) or len(name) > 63:
        raise FieldError(child(path, "key"), f"{key!r}: the name after any '/' must be 1-63 lowercase letters, "
                                             "digits, '-', '.' or '_', starting with a letter, ending with a letter or digit")
    if slash and (not _LABEL_PREFIX.match(prefix) or len(prefix) > 253):
        raise FieldError(child(path, "key"), f"{key!r}: the prefix before '/' must be a lowercase DNS subdomain "
                                             "of at most 253 characters")
    if not _LABEL_NAME.match(value) or len(value) > 63:
        raise FieldError(child(path, "value"), f"{value!r} must be 1-63 lowercase letters, digits, '-', '.' or '_', "
                                               "starting with a letter, ending with a letter or digit")
    return CustomLabel(key, value)


def _key_ref(parsed: dict[str, Any], path: str) -> KeyRef:
    return KeyRef(parsed["name"], parsed["key"])


def _literal(value: str | int | float | bool) -> str | None:
    """The chart's reading of a literal: a non-empty string, a number or true is the value (as a
    string); a zero is "0"; "" and false are no value at all."""
    if isinstance(value, bool):
        return "true" if value else None
    if isinstance(value, (int, float)):
        return str(int(value)) if float(value).is_integer() else repr(value)
    return value or None


def _environment_variable(parsed: dict[str, Any], path: str) -> EnvironmentVariable:
    name = parsed["name"]
    value = _literal(parsed["value"]) if "value" in parsed else None
    if value is not None:
        return EnvironmentVariable(name, value=value)
    if parsed.get("secret") is not None:
        return EnvironmentVariable(name, secret=parsed["secret"])
    if parsed.get("configmap") is not None:
        return EnvironmentVariable(name, configmap=parsed["configmap"])
    raise FieldError(path, f"{name} needs a value, a secret or a configmap")


def _init_container(parsed: dict[str, Any], path: str) -> InitContainer:
    command = parsed["command"]
    if isinstance(command, str):  # the chart pastes a string in as YAML: `"[sh, -c, date]"` is a list
        try:
            command = load_located(command).value
        except LocatedYAMLError:
            command = None
        if not isinstance(command, list) or not all(isinstance(c, str) for c in command):
            raise FieldError(child(path, "command"), "must be a list of strings, such as [sh, -c, 'echo hello']")
    return InitContainer(parsed["name"], parsed["image"], tuple(command))


def _nvme(parsed: dict[str, Any], path: str) -> NVMe | None:
    if not parsed:
        return None  # the chart treats an empty mapping as "not set"
    if not parsed.get("storage"):
        raise FieldError(child(path, "storage"), "is required with mountNVMe (the size of the volume, such as 800Gi)")
    return NVMe(parsed["storage"], parsed.get("mountPath"))


_KEY_REF = Record((("name", Text()), ("key", Text())), _key_ref, required=("name", "key"))
_NAMED = Record((("name", Text()),), lambda parsed, path: parsed["name"], required=("name",))


def _list(item: Shape) -> Shape:
    """A list the chart also accepts as null, for none."""
    return Nullable(ListOf(item), unset=())


def _setting(key: str, shape: Shape, about: str, *, required: bool = False) -> Any:
    return {"key": key, "shape": shape, "about": about, "required": required}


# --- the settings ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Settings:
    """The generator's settings, in the chart schema's order; defaults are the chart's."""

    job_name: str = field(default="", metadata=_setting(
        "jobName", Text(pattern=RFC1123_LABEL.pattern, hint=RFC1123_LABEL.hint, min_length=1,
                        max_length=JOB_NAME_LENGTH),
        f"Name of the AppWrapper and of the PyTorchJob inside it (at most {JOB_NAME_LENGTH} characters).",
        required=True))
    namespace: str | None = field(default=None, metadata=_setting(
        "namespace", Nullable(RFC1123_LABEL), "Namespace of the AppWrapper; unset: kubectl's current namespace."))
    queue_name: str | None = field(default="default-queue", metadata=_setting(
        "queueName", Nullable(RFC1123_LABEL),
        "LocalQueue the job is submitted to; null leaves the label off (the gateway then adds the policy's default)."))
    priority: str = field(default="default-priority", metadata=_setting(
        "priority", Text(enum=("default-priority", "low-priority", "high-priority")),
        "PriorityClass of every pod."))
    custom_labels: tuple[CustomLabel, ...] = field(default=(), metadata=_setting(
        "customLabels", _list(Record((("key", Text()), ("value", Text())), _custom_label,
                                                required=("key", "value"))),
        "Labels (`key`, `value`) put on the AppWrapper, the PyTorchJob and every pod."))
    container_image: str = field(default="", metadata=_setting(
        "containerImage", Text(), "Image of the training container.", required=True))
    num_pods: int = field(default=1, metadata=_setting(
        "numPods", Integer(minimum=1), "Pods in all: one master and numPods - 1 workers."))
    num_cpus_per_pod: int | str = field(default=1, metadata=_setting(
        "numCpusPerPod", CPU, "CPUs each pod requests: a whole number or a quantity such as 500m."))
    num_gpus_per_pod: int = field(default=0, metadata=_setting(
        "numGpusPerPod", Integer(minimum=0), "GPUs (nvidia.com/gpu) each pod requests; torchrun starts one process per GPU."))
    total_memory_per_pod: str = field(default="1Gi", metadata=_setting(
        "totalMemoryPerPod", MEMORY, "Memory each pod requests, such as 1Gi."))
    limit_cpus_per_pod: int | str | None = field(default=None, metadata=_setting(
        "limitCpusPerPod", Nullable(CPU), "CPU limit of each pod; unset: numCpusPerPod."))
    limit_gpus_per_pod: int | None = field(default=None, metadata=_setting(
        "limitGpusPerPod", Nullable(Integer(minimum=0)), "GPU limit of each pod; unset or 0: numGpusPerPod."))
    limit_memory_per_pod: str | None = field(default=None, metadata=_setting(
        "limitMemoryPerPod", Nullable(MEMORY), "Memory limit of each pod; unset: totalMemoryPerPod."))
    environment_variables: tuple[EnvironmentVariable, ...] = field(default=(), metadata=_setting(
        "environmentVariables",
        _list(Record((("name", Text()), ("value", Scalar()), ("secret", _KEY_REF), ("configmap", _KEY_REF)),
                                _environment_variable, required=("name",))),
        "Variables of the training container: `name` and a literal `value`, or a `secret` or `configmap` "
        "{name, key}. The training operator sets MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK."))
    env_from: tuple[Mapping[str, Any], ...] = field(default=(), metadata=_setting(
        "envFrom", _list(KubernetesType("V1EnvFromSource")),
        "Whole ConfigMaps or Secrets as variables (`configMapRef` / `secretRef`), as in a container's envFrom."))
    ssh_git_clone_config: SshGitClone | None = field(default=None, metadata=_setting(
        "sshGitCloneConfig", Nullable(Record(
            (("secretName", RFC1123_LABEL), ("configMapName", RFC1123_LABEL), ("secretMountPath", Text()),
             ("configMapMountPath", Text()), ("sshCmd", Text())),
            lambda p, _: SshGitClone(p["secretName"], p["configMapName"], p.get("secretMountPath"),
                                     p.get("configMapMountPath"), p.get("sshCmd")),
            required=("secretName", "configMapName"))),
        "Clone private repositories over ssh: the Secret holding `id_rsa` and the ConfigMap holding "
        "`known_hosts` (mounted at /tmp/.ssh/keys and /tmp/.ssh/hosts unless set), and GIT_SSH_COMMAND."))
    setup_commands: tuple[str, ...] = field(default=(), metadata=_setting(
        "setupCommands", _list(Text()), "Shell commands run in every pod before the main program."))
    main_program: str | None = field(default=None, metadata=_setting(
        "mainProgram", Nullable(Text()),
        "Program (and arguments) torchrun starts on every pod; unset: only the setup commands run."))
    image_pull_secrets: tuple[str, ...] = field(default=(), metadata=_setting(
        "imagePullSecrets", _list(_NAMED), "Secrets (`name`) for pulling the image."))
    image_pull_policy: str | None = field(default="IfNotPresent", metadata=_setting(
        "imagePullPolicy", Nullable(Text(enum=("IfNotPresent", "Always", "Never"))),
        "When the kubelet pulls the image."))
    volumes: tuple[Volume, ...] = field(default=(), metadata=_setting(
        "volumes", _list(Record(
            (("name", Text()), ("claimName", Text()), ("mountPath", Text())),
            lambda p, _: Volume(p["name"], p["claimName"], p["mountPath"]),
            required=("name", "claimName", "mountPath"))),
        "PersistentVolumeClaims mounted in every pod: `name`, `claimName`, `mountPath`."))
    roce_gdr_res_name: str | None = field(default=None, metadata=_setting(
        "roceGdrResName", Nullable(Text()), "Resource name of RoCE GDR devices; unset: nvidia.com/roce_gdr."))
    num_roce_gdr: int = field(default=0, metadata=_setting(
        "numRoceGdr", Integer(minimum=0),
        "RoCE GDR devices per pod (0: off); above 0 the container gets IPC_LOCK. Must be 0 when numPods is 1."))
    topology_file_config_map: str | None = field(default=None, metadata=_setting(
        "topologyFileConfigMap", Nullable(RFC1123_LABEL),
        "ConfigMap holding virtualTopology.xml, mounted at /var/run/nvidia-topologyd; sets NCCL_TOPO_FILE."))
    nccl_gdr_env_config_map: str | None = field(default=None, metadata=_setting(
        "ncclGdrEnvConfigMap", Nullable(RFC1123_LABEL), "ConfigMap of NCCL network variables, added to envFrom."))
    multi_nic_network_name: str | None = field(default=None, metadata=_setting(
        "multiNicNetworkName", Nullable(Text()), "Multi-NIC network of the pods (annotation k8s.v1.cni.cncf.io/networks)."))
    disable_shared_memory: bool = field(default=False, metadata=_setting(
        "disableSharedMemory", Boolean(), "Leave out the in-memory /dev/shm volume."))
    mount_nvme: NVMe | None = field(default=None, metadata=_setting(
        "mountNVMe", Nullable(Record((("mountPath", Text()), ("storage", Text())), _nvme)),
        "An ephemeral NVMe volume (storage class odf-lvm-vg1) of `storage` size at `mountPath` "
        "(default /workspace/scratch-nvme, also in NVME_MOUNT_PATH)."))
    init_containers: tuple[InitContainer, ...] = field(default=(), metadata=_setting(
        "initContainers", _list(Record(
            (("name", Text()), ("image", Text()), ("command", OneOf((ListOf(Text()), Text()), "a list of strings"))),
            _init_container, required=("name", "image", "command"))),
        "Containers (`name`, `image`, `command`) run to completion before the training container."))
    autopilot_health_checks: tuple[str, ...] = field(default=(), metadata=_setting(
        "autopilotHealthChecks", _list(Text()),
        "Autopilot pre-flight checks: each becomes a pod label, with `autopilot`."))
    restart_policy: str = field(default="Never", metadata=_setting(
        "restartPolicy", Text(enum=("Never", "Always", "OnFailure")), "Restart policy of the master and workers."))
    host_ignore_list: tuple[str, ...] = field(default=(), metadata=_setting(
        "hostIgnoreList", _list(Text()), "Nodes (kubernetes.io/hostname) the pods must avoid."))
    scheduler_name: str | None = field(default=None, metadata=_setting(
        "schedulerName", Nullable(Text(enum=("sakkara", "scheduler-plugins-scheduler", "default-scheduler"))),
        "Scheduler of the pods; unset or scheduler-plugins-scheduler: batchgate's (the gateway sets it)."))
    service_account_name: str | None = field(default=None, metadata=_setting(
        "serviceAccountName", Nullable(RFC1123_LABEL), "Service account of the pods; `gdr` also adds IPC_LOCK."))
    termination_grace_period_seconds: int | None = field(default=None, metadata=_setting(
        "terminationGracePeriodSeconds", Nullable(Integer(minimum=0)), "Seconds a pod gets to stop."))
    admission_grace_period_duration: str | None = field(default=None, metadata=_setting(
        "admissionGracePeriodDuration", Nullable(DURATION), "How long pods may take to exist after admission."))
    warmup_grace_period_duration: str | None = field(default=None, metadata=_setting(
        "warmupGracePeriodDuration", Nullable(DURATION), "How long pods may take to be ready after admission."))
    failure_grace_period_duration: str | None = field(default=None, metadata=_setting(
        "failureGracePeriodDuration", Nullable(DURATION), "How long a failure may last before the job is reset."))
    retry_pause_period_duration: str | None = field(default=None, metadata=_setting(
        "retryPausePeriodDuration", Nullable(DURATION), "Pause between a reset and the next attempt."))
    retry_limit: int | None = field(default=None, metadata=_setting(
        "retryLimit", Nullable(Integer(minimum=0, maximum=100)), "Resets before the job fails for good."))
    forceful_deletion_grace_period_duration: str | None = field(default=None, metadata=_setting(
        "forcefulDeletionGracePeriodDuration", Nullable(DURATION),
        "How long deleted pods may take to go before they are force-deleted."))
    deletion_on_failure_grace_period_duration: str | None = field(default=None, metadata=_setting(
        "deletionOnFailureGracePeriodDuration", Nullable(DURATION),
        "How long a failed job's resources stay for inspection."))
    success_ttl_duration: str | None = field(default=None, metadata=_setting(
        "successTTLDuration", Nullable(DURATION), "How long a succeeded job is kept."))


SETTINGS = {spec.metadata["key"]: spec for spec in fields(Settings)}
REQUIRED = tuple(key for key, spec in SETTINGS.items() if spec.metadata["required"])


class SettingsError(ValueError):
    """Bad settings: one located line per problem (`settings.yaml:7: numPods: must be ...`)."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = tuple(lines)


def parse_settings(text: str, source: str = "settings.yaml") -> Settings:
    """Read a settings file; SettingsError lists every bad setting with its line."""
    try:
        document = load_located(text)
    except LocatedYAMLError as exc:
        raise SettingsError([_located(source, exc.line, FieldError(exc.path, exc.detail))]) from None
    errors, settings = settings_from_value(document.value)
    if errors:
        raise SettingsError([_located(source, line_for(document.lines, e.path), e) for e in errors])
    assert settings is not None
    return settings


def _located(source: str, line: int | None, error: FieldError) -> str:
    where = f"{source}:{line}" if line else source
    return f"{where}: {error}"


def settings_from_value(value: Any) -> tuple[list[FieldError], Settings | None]:
    """Every problem of a decoded settings document (one per setting), or the settings."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        return [FieldError("", f"settings must be a mapping of setting to value, got {type(value).__name__}")], None
    errors: list[FieldError] = []
    kwargs: dict[str, Any] = {}
    for key, raw in value.items():
        spec = SETTINGS.get(key) if isinstance(key, str) else None
        if spec is None:
            close = difflib.get_close_matches(str(key), SETTINGS, n=1)
            hint = f" (did you mean {close[0]}?)" if close else " (batchgate generate pytorchjob --settings-schema lists them)"
            errors.append(FieldError(child("", str(key)), f"unknown setting{hint}"))
        elif raw is None and not isinstance(spec.metadata["shape"], Nullable):
            continue  # `key:` with no value means the default (required keys are reported below)
        else:
            try:
                kwargs[spec.name] = spec.metadata["shape"].parse(raw, key)
            except FieldError as exc:
                errors.append(exc)
    for key in REQUIRED:
        if value.get(key) in (None, ""):
            errors.append(FieldError(key, "is required"))
    if errors:
        return errors, None
    settings = Settings(**kwargs)
    errors = _relations(settings)
    return (errors, None) if errors else ([], settings)


def _relations(s: Settings) -> list[FieldError]:
    """The checks that combine settings."""
    errors = []
    if s.num_pods == 1 and s.num_roce_gdr != 0:
        errors.append(FieldError("numRoceGdr", "must be 0 when numPods is 1 (RoCE GDR links the pods of a job)"))
    if s.topology_file_config_map:
        for i, variable in enumerate(s.environment_variables):
            if variable.name == "NCCL_TOPO_FILE":
                errors.append(FieldError(child(child("environmentVariables", i), "name"),
                                         "NCCL_TOPO_FILE is set from topologyFileConfigMap; remove one of them"))
    seen: set[str] = set()
    for i, label in enumerate(s.custom_labels):
        at = child(child("customLabels", i), "key")
        if label.key in seen:
            errors.append(FieldError(at, f"{label.key} is given twice"))
        elif label.key == keys.QUEUE_NAME_LABEL and s.queue_name:
            errors.append(FieldError(at, f"{keys.QUEUE_NAME_LABEL} is set by queueName; use that setting"))
        seen.add(label.key)
    return errors


def settings_schema() -> Schema:
    """The JSON Schema of the settings file: the chart's, with defaults and descriptions."""
    defs: dict[str, Schema] = {}
    properties: dict[str, Schema] = {}
    for key, spec in SETTINGS.items():
        described = dict(spec.metadata["shape"].schema(defs))
        described["description"] = spec.metadata["about"]
        if spec.default not in (None, (), ""):
            described["default"] = spec.default
        properties[key] = described
    return {
        "$schema": SCHEMA_DIALECT,
        "type": "object",
        "required": list(REQUIRED),
        "additionalProperties": False,
        "properties": properties,
        "if": {"properties": {"numPods": {"const": 1}}},
        "then": {"properties": {"numRoceGdr": {"const": 0}}},
        "$defs": defs,
    }
