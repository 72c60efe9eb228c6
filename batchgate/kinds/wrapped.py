"""The kinds an AppWrapper wraps whose pods we can count, and a component's podSets from them.

`infer_pod_sets` is the AppWrapper controller's `InferPodSets` (counts as the kinds' own
controllers make pods, see raycluster.py); `pod_sets_to_declare` gives what an AppWrapper must
declare for a kind it does not infer, as `batchgate wrap` writes them."""

from __future__ import annotations

from typing import Any, Mapping

from batchgate.api.errors import FieldError, child, type_name
from batchgate.api.objects import api_version_kind
from batchgate.api.paths import parse_podset_path
from batchgate.kinds.apps import DEPLOYMENT, STATEFULSET
from batchgate.kinds.job import JOB
from batchgate.kinds.jobset import JOBSET
from batchgate.kinds.leaderworkerset import LEADERWORKERSET
from batchgate.kinds.model import STRICT, Kind, PodSet
from batchgate.kinds.pod import POD
from batchgate.kinds.pytorchjob import PYTORCHJOB, training_job_pod_sets
from batchgate.kinds.raycluster import RAYCLUSTER
from batchgate.kinds.rayjob import RAYJOB

WRAPPABLE: tuple[Kind, ...] = (
    POD, DEPLOYMENT, STATEFULSET, JOB, JOBSET, LEADERWORKERSET, PYTORCHJOB, RAYCLUSTER, RAYJOB,
)

_BY_API_VERSION_KIND: Mapping[tuple[str, str], Kind] = {(k.api_version, k.kind): k for k in WRAPPABLE}


def wrappable_kind(obj: Any) -> Kind | None:
    return _BY_API_VERSION_KIND.get(api_version_kind(obj))


def infer_pod_sets(obj: Any, where: str = "") -> tuple[PodSet, ...] | None:
    """The AppWrapper controller's podSet inference; None for kinds it does not infer.
    Raises FieldError on bad shapes."""
    kind = wrappable_kind(obj)
    if kind is None or not kind.upstream_infers:
        return None
    return kind.pod_sets(obj, where, STRICT)


def pod_sets_to_declare(obj: Any, where: str = "") -> tuple[PodSet, ...] | None:
    """The podSets to declare for a kind upstream does not infer; () for kinds upstream infers
    (they need none); None for a kind whose pods we cannot count. Raises FieldError on bad shapes."""
    kind = wrappable_kind(obj)
    if kind is not None:
        return () if kind.upstream_infers else kind.pod_sets(obj, where, STRICT)
    return training_job_pod_sets(obj, where)


def declared_or_inferred(component: Any, where: str) -> tuple[PodSet, ...]:
    """An AppWrapper component's podSets: the declared ones (paths parsed), else inferred ones.

    Raises FieldError for a malformed component; a kind upstream cannot infer has no podSets.
    """
    if not isinstance(component, dict):
        raise FieldError(where, f"must be a mapping, got {type_name(component)}")
    declared = component.get("podSets") or []
    if not isinstance(declared, list):
        raise FieldError(child(where, "podSets"), f"must be a list, got {type_name(declared)}")
    if not declared:
        return infer_pod_sets(component.get("template"), child(where, "template")) or ()
    out = []
    for i, pod_set in enumerate(declared):
        at = child(child(where, "podSets"), i)
        if not isinstance(pod_set, dict):
            raise FieldError(at, f"must be a mapping, got {type_name(pod_set)}")
        steps = parse_podset_path(pod_set.get("path"), child(at, "path"))
        out.append(PodSet(steps[1:], STRICT.count(pod_set, ("replicas",), at)))
    return tuple(out)
