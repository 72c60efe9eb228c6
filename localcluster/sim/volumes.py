"""What each pod volume holds and where it is mounted, as the kubelet's volume plugins decide.

Secret, ConfigMap, downwardAPI and projected volumes are sets of files computed from objects
(`project`); emptyDir starts empty. A missing Secret or ConfigMap that is not `optional`, or an
`items` key that is not there, is the kubelet's FailedMount (`MountError`, with its wording);
the pod then stays ContainerCreating. `mounts` maps a container's volumeMounts to sources
inside the pod's volume directories (`subPath` included). The writing is the runtime's job
(`localcluster.runtime.volume_files`), by the kubelet's atomic `..data` symlink swap.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from localcluster.sim.container_env import ContainerConfigError, Lookup, PodFacts, field_value, resource_value

Obj = Mapping[str, Any]
DEFAULT_MODE = 0o644
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
SERVICE_ACCOUNT_TOKEN_SECONDS = 3607  # what the ServiceAccount admission plugin asks for
DEFAULT_TOKEN_SECONDS = 3600
FILE_KINDS = ("secret", "configMap", "downwardAPI", "projected")  # always mounted read-only
# (audience or "" for the API server, expirationSeconds) -> a token for the pod's service account.
Tokens = Callable[[str, int], str]


class MountError(ValueError):
    """The kubelet's FailedMount message for one volume."""

    def __init__(self, volume: str, reason: str) -> None:
        super().__init__(f'MountVolume.SetUp failed for volume "{volume}" : {reason}')
        self.volume = volume


@dataclass(frozen=True)
class File:
    path: str  # relative to the volume's root
    data: bytes
    mode: int


@dataclass(frozen=True)
class Projection:
    """One volume's content: files (for the atomic writer) or an empty directory."""

    name: str
    kind: str
    files: tuple[File, ...] = ()


@dataclass(frozen=True)
class Mount:
    volume: str
    target: str  # the container's mountPath
    sub_path: str
    read_only: bool


def volume_kind(volume: Obj) -> str:
    for kind in (*FILE_KINDS, "emptyDir"):
        if kind in volume:
            return kind
    return next((k for k in volume if k != "name"), "")


def _mode(value: Any, default: int) -> int:
    return int(value) if isinstance(value, int) and 0 <= value <= 0o777 else default


def _clean_path(path: str, volume: str) -> str:
    norm = posixpath.normpath(path)
    if not path or path.startswith("/") or norm.startswith("..") or norm == ".":
        raise MountError(volume, f"invalid path {path!r}: must be relative and may not contain '..'")
    return norm


def _object_files(volume: str, kind: str, source: Obj, namespace: str, lookup: Lookup,
                  default_mode: int) -> list[File]:
    """A Secret's or ConfigMap's keys (all, or `items`) as files."""
    name = str(source.get("name") or source.get("secretName") or "")
    optional = bool(source.get("optional"))
    data = lookup(kind, namespace, name)
    if data is None:
        if optional:
            return []
        raise MountError(volume, f'{kind.lower()} "{name}" not found')
    items = source.get("items")
    if not items:
        return [File(_clean_path(k, volume), v, default_mode) for k, v in sorted(data.items())]
    files = []
    for item in items:
        key = str(item.get("key", ""))
        if key not in data:
            if optional:
                continue
            noun = "configmap references non-existent config key" if kind == "ConfigMap" else \
                "references non-existent secret key"
            raise MountError(volume, f"{noun}: {key}")
        files.append(File(_clean_path(str(item.get("path") or key), volume), data[key],
                          _mode(item.get("mode"), default_mode)))
    return files


def _downward_files(volume: str, pod: Obj, items: Any, facts: PodFacts, default_mode: int) -> list[File]:
    containers = {c.get("name"): c for c in (pod.get("spec") or {}).get("containers") or []}
    files = []
    for item in items or []:
        try:
            if item.get("fieldRef"):
                value = field_value(pod, str(item["fieldRef"].get("fieldPath", "")), facts)
            else:
                ref = item.get("resourceFieldRef") or {}
                container: Obj = containers.get(ref.get("containerName")) or next(iter(containers.values()), {})
                value = resource_value(container, ref, facts)
        except ContainerConfigError as err:
            raise MountError(volume, str(err)) from None
        files.append(File(_clean_path(str(item.get("path", "")), volume), value.encode(),
                          _mode(item.get("mode"), default_mode)))
    return files


def project(pod: Obj, volume: Obj, facts: PodFacts, lookup: Lookup, tokens: Tokens) -> Projection:
    """The files one volume holds now; MountError if it cannot be set up."""
    name = str(volume.get("name", ""))
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    kind = volume_kind(volume)
    source = volume.get(kind) or {}
    if kind == "emptyDir":
        return Projection(name, kind)
    if kind not in FILE_KINDS:
        raise MountError(name, f"volume type {kind or 'none'} is not supported by the local cluster's kubelet")
    default_mode = _mode(source.get("defaultMode"), DEFAULT_MODE)
    if kind == "secret":
        files = _object_files(name, "Secret", source, namespace, lookup, default_mode)
    elif kind == "configMap":
        files = _object_files(name, "ConfigMap", source, namespace, lookup, default_mode)
    elif kind == "downwardAPI":
        files = _downward_files(name, pod, source.get("items"), facts, default_mode)
    else:
        files = []
        for part in source.get("sources") or []:
            if part.get("secret") is not None:
                files += _object_files(name, "Secret", part["secret"], namespace, lookup, default_mode)
            elif part.get("configMap") is not None:
                files += _object_files(name, "ConfigMap", part["configMap"], namespace, lookup, default_mode)
            elif part.get("downwardAPI") is not None:
                files += _downward_files(name, pod, part["downwardAPI"].get("items"), facts, default_mode)
            elif part.get("serviceAccountToken") is not None:
                sat = part["serviceAccountToken"]
                seconds = int(sat.get("expirationSeconds") or DEFAULT_TOKEN_SECONDS)
                token = tokens(str(sat.get("audience") or ""), seconds)
                files.append(File(_clean_path(str(sat.get("path", "")), name), token.encode(), default_mode))
    return Projection(name, kind, tuple(files))


def automounts_token(pod: Obj, service_account: Obj | None) -> bool:
    """The pod's `automountServiceAccountToken`, else its ServiceAccount's, else true."""
    spec = pod.get("spec") or {}
    if spec.get("automountServiceAccountToken") is not None:
        return bool(spec["automountServiceAccountToken"])
    if service_account is not None and service_account.get("automountServiceAccountToken") is not None:
        return bool(service_account["automountServiceAccountToken"])
    return True


def service_account_projection(pod: Obj, token: str, ca_pem: bytes) -> Projection:
    """The `kube-api-access` volume: token, ca.crt and namespace, as in-cluster clients read them."""
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    return Projection("kube-api-access", "projected", (
        File("token", token.encode(), DEFAULT_MODE),
        File("ca.crt", ca_pem, DEFAULT_MODE),
        File("namespace", namespace.encode(), DEFAULT_MODE),
    ))


def mounts(pod: Obj, container: Obj, with_service_account: bool) -> list[Mount]:
    """The container's mounts in order; a mount naming no volume is a FailedMount."""
    volumes = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or []}
    out = []
    for m in container.get("volumeMounts") or []:
        name = str(m.get("name", ""))
        if name not in volumes:
            raise MountError(name, f'volume "{name}" not found in the pod spec')
        sub_path = str(m.get("subPath") or "")
        if sub_path:
            _clean_path(sub_path, name)
        read_only = bool(m.get("readOnly")) or volume_kind(volumes[name]) in FILE_KINDS
        out.append(Mount(name, str(m.get("mountPath", "")), sub_path, read_only))
    if with_service_account and not any(m.target.rstrip("/") == SERVICE_ACCOUNT_DIR for m in out):
        out.append(Mount("kube-api-access", SERVICE_ACCOUNT_DIR, "", True))
    return out
