"""Which of an AppWrapper's components a pod belongs to, so failure-policy rules can target them.

A wrapped Pod is its own component; any other pod belongs to the component that is its
controlling owner (a Job's or a PyTorchJob's pods, a RayCluster's). Pods two owners away (a
Deployment's, through its ReplicaSet) are matched by the component's own name prefix, as the
ReplicaSet controller names them `<deployment>-<hash>-<suffix>`.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from batchgate.api.appwrapper_status import AppWrapperState
from batchgate.api.objects import metadata


def component_of(aw: AppWrapperState, pod: Mapping[str, Any]) -> int | None:
    """Index of the component `pod` belongs to, or None if it cannot be told."""
    meta = metadata(pod)
    owners = [r for r in meta.get("ownerReferences") or [] if isinstance(r, Mapping) and r.get("controller")]
    by_name: dict[tuple[str, str], int] = {}
    for index, component in enumerate(aw.components):
        by_name[(component.kind, component.name)] = index
    if ("Pod", str(meta.get("name"))) in by_name:
        return by_name[("Pod", str(meta.get("name")))]
    for ref in owners:
        owned = by_name.get((str(ref.get("kind")), str(ref.get("name"))))
        if owned is not None:
            return owned
        if ref.get("kind") == "ReplicaSet":
            for (kind, name), index in by_name.items():
                if kind == "Deployment" and str(ref.get("name")).startswith(f"{name}-"):
                    return index
    return None


def failed_components(aw: AppWrapperState, pods: Iterable[Mapping[str, Any]]) -> tuple[int, ...]:
    """Sorted indices of the components owning at least one Failed pod."""
    found = {component_of(aw, pod) for pod in pods if (pod.get("status") or {}).get("phase") == "Failed"}
    return tuple(sorted(i for i in found if i is not None))
