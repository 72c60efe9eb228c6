"""What each pod of a laid-out workload will get, before any pod exists.

`batchgate review` shows it under a workload, so a user sees ranks and env without a cluster;
it reads the same layout annotation and runs the same env functions as the Pod phase. The pods
of a wrapped PyTorchJob are the exception: the training operator sets their rank env before the
gateway sees them and the user's (here the operator's) env wins, so the preview shows none of
batchgate's values for them, only that the operator sets them. It never shows a value a pod will
not carry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from batchgate import keys
from batchgate.kinds import APPWRAPPER, JOB, PYTORCHJOB
from batchgate.api.pod_templates import pod_template_locations

from batchgate.frameworks.env import EnvList, framework_env
from batchgate.frameworks.errors import FrameworkError
from batchgate.frameworks.layout import Layout, Place, parse_layout

_WORKLOADS = (APPWRAPPER, JOB)

BATCHGATE = "batchgate"
TRAINING_OPERATOR = "training operator"
OPERATOR_ENV = "MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, PET_*"
"""The variables the training operator puts on a PyTorchJob's pods (docs/frameworks.md, "A wrapped PyTorchJob")."""


@dataclass(frozen=True)
class PodPreview:
    hostname: str
    host: str
    role: str
    rank: int
    env: EnvList
    env_set_by: str
    """BATCHGATE, or TRAINING_OPERATOR for a PyTorchJob's pods (env then holds nothing)."""


def _annotation(template: dict[str, Any], key: str) -> Any:
    metadata = template.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return annotations.get(key) if isinstance(annotations, dict) else None


def workload_layout(obj: dict[str, Any]) -> Layout | None:
    """The layout the workload phase wrote on the workload's pod templates (None: not laid out)."""
    for at in pod_template_locations(obj):
        raw = _annotation(at.template, keys.FRAMEWORK_LAYOUT_ANNOTATION)
        if isinstance(raw, str):
            return parse_layout(raw)
    return None


def operator_prefixes(obj: dict[str, Any]) -> frozenset[str]:
    """The host prefixes of the pods of an AppWrapper's PyTorchJobs, whose env the operator sets."""
    spec = obj.get("spec") if obj.get("kind") == APPWRAPPER.kind else None
    components = spec.get("components") if isinstance(spec, dict) else None
    prefixes = set()
    for component in components if isinstance(components, list) else []:
        template = component.get("template") if isinstance(component, dict) else None
        if isinstance(template, dict) and template.get("kind") == PYTORCHJOB.kind:
            for at in pod_template_locations(template):
                prefix = _annotation(at.template, keys.HOST_PREFIX_ANNOTATION)
                if isinstance(prefix, str):
                    prefixes.add(prefix)
    return frozenset(prefixes)


def preview_pods(layout: Layout, by_operator: frozenset[str] = frozenset()) -> list[PodPreview]:
    """Every pod of the layout, in rank order, with the env the Pod phase will give it.

    Pods whose host prefix is in `by_operator` get no env from batchgate (the operator's wins).
    """
    previews: list[PodPreview] = []
    role_index: dict[str, int] = {}
    for slot in layout.slots:
        operator = slot.prefix in by_operator
        for offset in range(slot.count):
            place = Place(slot, offset, len(previews), role_index.get(slot.role, 0) + offset)
            env = [] if operator else framework_env(layout, place)
            previews.append(PodPreview(slot.hostname(offset), place.host, place.role, place.rank, env,
                                       TRAINING_OPERATOR if operator else BATCHGATE))
        role_index[slot.role] = role_index.get(slot.role, 0) + slot.count
    return previews


def workload_pod_previews(obj: Any) -> list[dict[str, Any]]:
    """For `batchgate review`: the pods of a laid-out AppWrapper or Job as JSON-ready rows.

    Anything else, or a layout that does not parse (validation denies it), previews no pods.
    """
    if not isinstance(obj, dict) or not any(kind.is_kind_of(obj) for kind in _WORKLOADS):
        return []
    try:
        layout = workload_layout(obj)
    except FrameworkError:
        return []
    if layout is None:
        return []
    return [
        {"hostname": p.hostname, "host": p.host, "role": p.role, "rank": p.rank, "env": dict(p.env),
         "envSetBy": p.env_set_by}
        for p in preview_pods(layout, operator_prefixes(obj))
    ]


def describe_env(row: dict[str, Any]) -> str:
    """One preview row's env as `batchgate review` prints it."""
    if row["envSetBy"] == TRAINING_OPERATOR:
        return f"{OPERATOR_ENV} set by the training operator"
    return " ".join(f"{name}={value}" for name, value in row["env"].items())
