"""The objects a top-level framework Job needs besides its pods, and whether to create them.

The gateway lays out a Job labelled `batchgate.dev/framework` but cannot create anything (no side
effects in admission), so the controller makes the headless Service that gives its pods their DNS
names and, for MPI, the hostfile ConfigMap, owned by the Job so they go when it goes. They are made
as soon as the Job exists, queued or not: peers must resolve each other from the first pod on.
An object of the same name that the Job does not own is the user's: it is left alone and named
in a warning, never overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Union

from batchgate import keys
from batchgate.api.objects import controller_owner, metadata
from batchgate.frameworks import FrameworkError, headless_service_for, hostfile_configmap_for

REASON_CREATED: Mapping[str, str] = {"Service": "CreatedService", "ConfigMap": "CreatedConfigMap"}
REASON_CONFLICT = "FrameworkObjectConflict"
REASON_INVALID = "InvalidFrameworkLayout"

Existing = Mapping[tuple[str, str], Mapping[str, Any]]
"""What is already in the Job's namespace, by (kind, name); absent keys do not exist."""


@dataclass(frozen=True)
class CreateObject:
    obj: Mapping[str, Any]
    reason: str
    message: str


@dataclass(frozen=True)
class Conflict:
    """An object of the wanted name exists and is not the Job's: a Warning Event, nothing written."""

    kind: str
    name: str
    message: str
    reason: str = REASON_CONFLICT


@dataclass(frozen=True)
class InvalidLayout:
    message: str
    reason: str = REASON_INVALID


Action = Union[CreateObject, Conflict, InvalidLayout]


def wanted_objects(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Service (and MPI hostfile) a top-level framework Job needs; [] for any other Job.

    A Job with a controller owner is not top-level: an AppWrapper's Jobs get these objects as
    components of the AppWrapper, and other controllers' Jobs are none of ours. A Job being
    deleted needs nothing new. Raises FrameworkError on a malformed layout annotation.
    """
    meta = metadata(job)
    if controller_owner(job) is not None or meta.get("deletionTimestamp"):
        return []
    if keys.FRAMEWORK_LABEL not in (meta.get("labels") or {}):
        return []
    made = [headless_service_for(dict(job)), hostfile_configmap_for(dict(job))]
    return [obj for obj in made if obj is not None]


def owned_by(obj: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    ref = controller_owner(obj)
    return ref is not None and ref.get("uid") == metadata(job).get("uid")


def reconcile_framework_objects(job: Mapping[str, Any], existing: Existing) -> list[Action]:
    """Create what is missing, leave what the Job owns, warn about what someone else owns."""
    try:
        wanted = wanted_objects(job)
    except FrameworkError as err:
        return [InvalidLayout(f"cannot make the framework Service: {err.path}: {err.message}")]
    actions: list[Action] = []
    for obj in wanted:
        kind, name = obj["kind"], obj["metadata"]["name"]
        found = existing.get((kind, name))
        if found is None:
            purpose = "headless Service for the pods' DNS names" if kind == "Service" else "MPI hostfile"
            actions.append(CreateObject(obj, REASON_CREATED[kind], f"Created {kind} {name}: the {purpose}"))
        elif not owned_by(found, job):
            actions.append(Conflict(kind, name, f"{kind} {name} exists and is not owned by this Job: it is left as it "
                                                f"is, and the pods' peers resolve only if it selects them"))
    return actions
