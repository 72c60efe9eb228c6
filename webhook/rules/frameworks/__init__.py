"""Distributed-framework plugins: PyTorch, TensorFlow, MPI and MXNet peers find each other.

Two phases, as Volcano's job plugins have (docs/frameworks.md): when a top-level AppWrapper or Indexed
Job labelled `batchgate.dev/framework` is created, its pod templates get a layout (roles, counts,
hosts, port); when each of its pods is created, the pod gets the env of its role and index.
"""

from __future__ import annotations

from typing import Any

from batchgate import keys
from batchgate.frozen import frozen
from batchgate.kinds import APPWRAPPER, JOB

from ..review import GroupVersionKind
from batchgate.frameworks.errors import FrameworkError
from batchgate.frameworks.objects import headless_service_for, hostfile_configmap_for
from .pod_phase import apply_pod_plan, plan_pod
from .settings import FrameworkSettings
from .workload_phase import apply_plan, plan_workload

__all__ = [
    "FrameworkError",
    "FrameworkOutcome",
    "FrameworkSettings",
    "apply_frameworks",
]

_WORKLOAD_KINDS = {(k.group, k.kind) for k in (APPWRAPPER, JOB)}


@frozen
class FrameworkOutcome:
    """What the framework phases did to the working copy, or why the object must be denied."""

    changes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    error: FrameworkError | None = None


def apply_frameworks(
    obj: dict[str, Any], kind: GroupVersionKind, operation: str, settings: FrameworkSettings,
    *, top_level: bool = True,
) -> FrameworkOutcome:
    """Run the phase this object is due for on the gateway's working copy `obj` (CREATE only).

    `top_level` is false for objects a controller makes (wrapped components, a Job's pods):
    they are laid out with their owner, so only the pod phase applies to them.
    """
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    labels = meta.get("labels") if isinstance(meta, dict) else None
    if operation != "CREATE" or not isinstance(labels, dict) or keys.FRAMEWORK_LABEL not in labels:
        return FrameworkOutcome()
    try:
        if kind.group == "" and kind.kind == "Pod":
            changes, warnings = apply_pod_plan(obj, plan_pod(obj))
            return FrameworkOutcome(tuple(changes), tuple(warnings))
        if not top_level:
            return FrameworkOutcome()  # wrapped or controller-made: laid out with its owner
        if (kind.group, kind.kind) not in _WORKLOAD_KINDS:
            raise FrameworkError(
                f"metadata.labels[{keys.FRAMEWORK_LABEL}]",
                f"goes on an AppWrapper or an Indexed Job, not on a {kind.qualified}",
            )
        plan = plan_workload(obj, kind.kind, settings)
        return FrameworkOutcome(tuple(apply_plan(obj, kind.kind, plan)))
    except FrameworkError as err:
        return FrameworkOutcome(error=err)
