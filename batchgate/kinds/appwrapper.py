"""AppWrapper (workload.codeflare.dev/v1beta2): one podSet per podSet of each component.

A component's podSets are declared, else inferred from the wrapped kind (wrapped.py); Kueue names
them `<appwrapper>-<i>` in order. Its components are made by the AppWrapper controller, so they
belong to it only when that controller's ownerReference says so."""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from batchgate import keys
from batchgate.api.conditions import is_true
from batchgate.api.errors import FieldError
from batchgate.api.objects import controller_owner, metadata
from batchgate.api.paths import Location, format_steps
from batchgate.kinds.model import Kind, Outcome, PodSet, Reader
from batchgate.kinds.wrapped import declared_or_inferred

GROUP = "workload.codeflare.dev"
VERSION = "v1beta2"
COMPONENTS: Location = ("spec", "components")


def _pod_sets(obj: Any, where: str, reader: Reader) -> Iterator[PodSet]:
    name = metadata(obj).get("name") or ""
    count = 0
    for index, component in enumerate(reader.items(obj, COMPONENTS, where)):
        at: Location = COMPONENTS + (index,)
        try:
            declared = declared_or_inferred(component, format_steps(at))
        except FieldError:
            if reader.strict:
                raise
            continue
        for pod_set in declared:
            yield PodSet(at + ("template",) + pod_set.location, pod_set.replicas, f"{name}-{count}")
            count += 1


def _finished(aw: Mapping[str, Any]) -> Outcome | None:
    """A Failed AppWrapper still deleting its components (or holding them for debugging) is not
    finished yet: its quota is released only once nothing of it is deployed."""
    phase = (aw.get("status") or {}).get("phase")
    if phase == keys.PHASE_SUCCEEDED or (phase == keys.PHASE_FAILED and not is_true(aw, keys.COND_RESOURCES_DEPLOYED)):
        return phase, f"AppWrapper {phase.lower()}"
    return None


def _active(aw: Mapping[str, Any]) -> bool:
    return is_true(aw, keys.COND_QUOTA_RESERVED)  # upstream's IsActive


APPWRAPPER = Kind(kind="AppWrapper", group=GROUP, version=VERSION, plural="appwrappers", read_pod_sets=_pod_sets,
                  pods_at=COMPONENTS, suspend_path=("spec", "suspend"), upstream_infers=False,
                  finished=_finished, active=_active)


def owned_by_appwrapper(obj: Any) -> bool:
    """Whether the object's controller ownerReference names an AppWrapper (any version of the group)."""
    owner = controller_owner(obj)
    if owner is None:
        return False
    api_version = owner.get("apiVersion")
    group = api_version.rpartition("/")[0] if isinstance(api_version, str) else ""
    return owner.get("kind") == APPWRAPPER.kind and group == GROUP

