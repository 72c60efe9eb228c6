"""The admin's framework defaults (the policy's `frameworks` section) and the per-workload args.

A workload may override the defaults in the annotation `batchgate.dev/framework-args`; anything it
names is checked here, so a typo is a denial with the field path instead of a silently ignored key.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any, Mapping

from batchgate import keys

from batchgate.frameworks.errors import FrameworkError
from batchgate.frameworks.roles import ROLES
from batchgate.frozen import frozen

ARGS_PATH = f"metadata.annotations[{keys.FRAMEWORK_ARGS_ANNOTATION}]"
DEFAULT_NPROC_PER_NODE = "auto"
"""torchrun's processes per pod when neither the args nor a wrapped PyTorchJob say (as upstream)."""
_NPROC_WORDS = ("auto", "cpu", "gpu")
_IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]*$")


@frozen
class FrameworkSettings:
    """Cluster-wide defaults; the gateway builds one from the policy's `frameworks` section."""

    pytorch_port: int
    """MASTER_PORT / PET_MASTER_PORT (Volcano and the training operator use 23456)."""
    tensorflow_port: int
    """Port in every TF_CONFIG cluster address (2222 upstream)."""
    mxnet_port: int
    """DMLC_PS_ROOT_PORT, the scheduler's port (9091 in the Kubeflow MXJob examples)."""
    mpi_hostfile_path: str
    """Where the hostfile is mounted and what OMPI_MCA_orte_default_hostfile names."""
    mpi_slots_per_host: int
    """`slots=` on every hostfile line (the training operator's slotsPerWorker, default 1)."""
    wait_image: str
    """Image of the init container that holds the MPI launcher until its workers resolve."""
    wait_timeout_seconds: int
    """How long that init container waits before it fails the launcher pod."""


@dataclass(frozen=True)
class FrameworkArgs:
    """The effective options of one workload: the defaults with its annotation applied."""

    framework: str
    port: int | None
    nproc_per_node: str | None
    """None when the args do not say: a wrapped PyTorchJob's own value, else the default, holds."""
    hostfile_path: str
    slots_per_host: int
    wait_image: str
    wait_timeout_seconds: int
    role_names: Mapping[str, str]
    """Canonical role (master, worker, ps...) -> the value users put in `batchgate.dev/role`."""

    def canonical_role(self, label_value: str) -> str | None:
        """The framework role a `batchgate.dev/role` value means, or None if it means none."""
        for role, name in self.role_names.items():
            if name == label_value:
                return role
        return None


_ALLOWED_KEYS: dict[str, tuple[str, ...]] = {
    "pytorch": ("port", "nprocPerNode", "roles"),
    "tensorflow": ("port", "roles"),
    "mpi": ("hostfilePath", "slotsPerHost", "waitTimeoutSeconds", "waitImage", "roles"),
    "mxnet": ("port", "roles"),
}


def defaults_for(framework: str, settings: FrameworkSettings) -> FrameworkArgs:
    """The args a workload gets when its annotation names nothing."""
    port = {
        "pytorch": settings.pytorch_port,
        "tensorflow": settings.tensorflow_port,
        "mxnet": settings.mxnet_port,
    }.get(framework)
    return FrameworkArgs(
        framework=framework,
        port=port,
        nproc_per_node=None,
        hostfile_path=settings.mpi_hostfile_path,
        slots_per_host=settings.mpi_slots_per_host,
        wait_image=settings.wait_image,
        wait_timeout_seconds=settings.wait_timeout_seconds,
        role_names={role: role for role in ROLES[framework]},
    )


def parse_args(framework: str, raw: str | None, settings: FrameworkSettings) -> FrameworkArgs:
    """Validate the framework-args annotation against the framework's keys; errors name the field."""
    args = defaults_for(framework, settings)
    if raw is None or raw.strip() == "":
        return args
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as err:
        raise FrameworkError(ARGS_PATH, f"not valid JSON ({err.msg} at column {err.colno})") from None
    if not isinstance(doc, dict):
        raise FrameworkError(ARGS_PATH, "must be a JSON object")
    allowed = _ALLOWED_KEYS[framework]
    for key in doc:
        if key not in allowed:
            raise FrameworkError(
                f"{ARGS_PATH}.{key}", f"unknown key for {framework}; allowed: {', '.join(allowed)}"
            )
    changes: dict[str, Any] = {}
    if "port" in doc:
        changes["port"] = _port(doc["port"], f"{ARGS_PATH}.port")
    if "nprocPerNode" in doc:
        changes["nproc_per_node"] = check_nproc(doc["nprocPerNode"], f"{ARGS_PATH}.nprocPerNode")
    if "hostfilePath" in doc:
        changes["hostfile_path"] = _abs_path(doc["hostfilePath"], f"{ARGS_PATH}.hostfilePath")
    if "slotsPerHost" in doc:
        changes["slots_per_host"] = _positive(doc["slotsPerHost"], f"{ARGS_PATH}.slotsPerHost")
    if "waitTimeoutSeconds" in doc:
        changes["wait_timeout_seconds"] = _positive(
            doc["waitTimeoutSeconds"], f"{ARGS_PATH}.waitTimeoutSeconds"
        )
    if "waitImage" in doc:
        changes["wait_image"] = _image(doc["waitImage"], f"{ARGS_PATH}.waitImage")
    if "roles" in doc:
        changes["role_names"] = _role_names(framework, doc["roles"], args.role_names)
    return replace(args, **changes)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _port(value: Any, path: str) -> int:
    if not _is_int(value) or not 1 <= value <= 65535:
        raise FrameworkError(path, f"must be an integer port 1..65535, not {json.dumps(value)}")
    return value


def _positive(value: Any, path: str) -> int:
    if not _is_int(value) or value < 1:
        raise FrameworkError(path, f"must be a positive integer, not {json.dumps(value)}")
    return value


def check_nproc(value: Any, path: str) -> str:
    if _is_int(value) and value >= 1:
        return str(value)
    if isinstance(value, str) and (value in _NPROC_WORDS or (value.isascii() and value.isdigit() and int(value) >= 1)):
        return value
    raise FrameworkError(
        path, f"must be a positive integer or one of {', '.join(_NPROC_WORDS)}, not {json.dumps(value)}"
    )


def _abs_path(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value.startswith("/") or value.endswith("/") or len(value) < 2:
        raise FrameworkError(path, f"must be an absolute file path, not {json.dumps(value)}")
    return value


def _image(value: Any, path: str) -> str:
    if not isinstance(value, str) or not _IMAGE.match(value):
        raise FrameworkError(path, f"must be a container image reference, not {json.dumps(value)}")
    return value


def _role_names(framework: str, value: Any, current: Mapping[str, str]) -> dict[str, str]:
    path = f"{ARGS_PATH}.roles"
    if not isinstance(value, dict):
        raise FrameworkError(path, "must be an object mapping a role to its label value")
    names = dict(current)
    for role, name in value.items():
        if role not in ROLES[framework]:
            raise FrameworkError(
                f"{path}.{role}", f"{framework} has no role {role!r}; roles: {', '.join(ROLES[framework])}"
            )
        if not isinstance(name, str) or not name:
            raise FrameworkError(f"{path}.{role}", "must be a non-empty string")
        names[role] = name
    taken = [n for n in names.values()]
    duplicate = next((n for n in taken if taken.count(n) > 1), None)
    if duplicate is not None:
        raise FrameworkError(path, f"two roles are both called {duplicate!r}")
    return names
