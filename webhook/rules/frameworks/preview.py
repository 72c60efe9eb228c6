"""What each pod of a laid-out workload will get, before any pod exists.

`batchgate review` shows it under a workload, so a user sees ranks and env without a cluster;
it reads the same layout annotation and runs the same env functions as the Pod phase.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from batchgate import keys
from batchgate.api.pod_templates import pod_template_locations

from .env import EnvList, framework_env
from .errors import FrameworkError
from .layout import Layout, Place, parse_layout

_WORKLOADS = {(keys.APPWRAPPER_API_VERSION, "AppWrapper"), ("batch/v1", "Job")}


@dataclass(frozen=True)
class PodPreview:
    hostname: str
    host: str
    role: str
    rank: int
    env: EnvList


def workload_layout(obj: dict[str, Any]) -> Layout | None:
    """The layout the workload phase wrote on the workload's pod templates (None: not laid out)."""
    for at in pod_template_locations(obj):
        metadata = at.template.get("metadata")
        annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
        raw = annotations.get(keys.FRAMEWORK_LAYOUT_ANNOTATION) if isinstance(annotations, dict) else None
        if isinstance(raw, str):
            return parse_layout(raw)
    return None


def preview_pods(layout: Layout) -> list[PodPreview]:
    """Every pod of the layout, in rank order, with the env the Pod phase will give it."""
    previews = []
    role_index: dict[str, int] = {}
    for slot in layout.slots:
        for offset in range(slot.count):
            place = Place(slot, offset, len(previews), role_index.get(slot.role, 0) + offset)
            env = framework_env(layout, place)
            previews.append(PodPreview(slot.hostname(offset), place.host, place.role, place.rank, env))
        role_index[slot.role] = role_index.get(slot.role, 0) + slot.count
    return previews


def workload_pod_previews(obj: Any) -> list[dict[str, Any]]:
    """For `batchgate review`: the pods of a laid-out AppWrapper or Job as JSON-ready rows.

    Anything else, or a layout that does not parse (validation denies it), previews no pods.
    """
    if not isinstance(obj, dict) or (obj.get("apiVersion"), obj.get("kind")) not in _WORKLOADS:
        return []
    try:
        layout = workload_layout(obj)
    except FrameworkError:
        return []
    if layout is None:
        return []
    return [
        {"hostname": p.hostname, "host": p.host, "role": p.role, "rank": p.rank, "env": dict(p.env)}
        for p in preview_pods(layout)
    ]
