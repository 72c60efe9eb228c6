"""The pods of one AppWrapper reduced to the counts its lifecycle decides on.

Upstream's pod accounting (docs/appwrapper.md, "Lifecycle"): pods by phase, where a Running pod that
is being deleted no longer counts as running; the non-zero exit codes of failed pods; and the
running pods that must leave a node Autopilot flagged NoExecute (3.5: the flag is a node label,
and only pods asking for the flagged resource must go).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from batchgate import keys
from batchgate.api.objects import as_list, as_mapping
from batchgate.quantity import QuantityError, parse_quantity

PENDING, RUNNING, SUCCEEDED, FAILED = "Pending", "Running", "Succeeded", "Failed"


@dataclass(frozen=True)
class PodCounts:
    pending: int = 0
    running: int = 0  # running and not being deleted
    succeeded: int = 0
    failed: int = 0
    failed_exit_codes: tuple[int, ...] = ()  # sorted, unique non-zero codes of failed pods' containers
    evicting: tuple[str, ...] = ()  # sorted names of running pods that must leave their node
    evicting_nodes: tuple[str, ...] = ()  # sorted names of the nodes those pods run on
    present: int = 0  # every labelled pod still in the API, terminating ones included


def no_execute_nodes(nodes: Iterable[Mapping[str, Any]], labels: Mapping[str, tuple[str, ...]]) -> frozenset[str]:
    """Names of the nodes carrying a NoExecute value of one of the policy's health labels."""
    found = set()
    for node in nodes:
        meta = as_mapping(node.get("metadata"))
        node_labels = as_mapping(meta.get("labels"))
        name = meta.get("name")
        if isinstance(name, str) and name and any(node_labels.get(k) in v for k, v in labels.items()):
            found.add(name)
    return frozenset(found)


def count_pods(
    pods: Iterable[Mapping[str, Any]], evicting_nodes: frozenset[str], resource: str = keys.GPU_RESOURCE
) -> PodCounts:
    """Count the pods labelled for one AppWrapper (the caller selects them by the AppWrapper label).

    A pod without a phase has just been created and counts as Pending, as the API server would say.
    """
    counts = {PENDING: 0, RUNNING: 0, SUCCEEDED: 0, FAILED: 0}
    exit_codes: set[int] = set()
    evicting: set[str] = set()
    nodes: set[str] = set()
    present = 0
    for pod in pods:
        present += 1
        meta, spec, status = (as_mapping(pod.get(part)) for part in ("metadata", "spec", "status"))
        phase = status.get("phase") or PENDING
        if phase == RUNNING and meta.get("deletionTimestamp"):
            continue
        if not isinstance(phase, str) or phase not in counts:
            continue
        counts[phase] += 1
        if phase == FAILED:
            exit_codes |= _failed_exit_codes(status)
        node = spec.get("nodeName")
        if phase == RUNNING and isinstance(node, str) and node in evicting_nodes and uses_resource(spec, resource):
            evicting.add(str(meta.get("name", "")))
            nodes.add(node)
    return PodCounts(
        pending=counts[PENDING],
        running=counts[RUNNING],
        succeeded=counts[SUCCEEDED],
        failed=counts[FAILED],
        failed_exit_codes=tuple(sorted(exit_codes)),
        evicting=tuple(sorted(evicting)),
        evicting_nodes=tuple(sorted(nodes)),
        present=present,
    )


def _failed_exit_codes(status: Mapping[str, Any]) -> set[int]:
    codes = set()
    for container in as_list(status.get("containerStatuses")):
        state = container.get("state") if isinstance(container, Mapping) else None
        terminated = state.get("terminated") if isinstance(state, Mapping) else None
        code = terminated.get("exitCode") if isinstance(terminated, Mapping) else None
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            codes.add(code)
    return codes


def uses_resource(spec: Mapping[str, Any], resource: str) -> bool:
    """Whether any container or init container requests or limits a non-zero amount of `resource`."""
    containers = [*as_list(spec.get("containers")), *as_list(spec.get("initContainers"))]
    for container in containers:
        resources = container.get("resources") if isinstance(container, Mapping) else None
        if not isinstance(resources, Mapping):
            continue
        for amounts in (resources.get("requests"), resources.get("limits")):
            if isinstance(amounts, Mapping) and resource in amounts and _non_zero(amounts[resource]):
                return True
    return False


def _non_zero(value: Any) -> bool:
    try:
        return parse_quantity(value) != 0
    except QuantityError:
        return False  # the API server admits no such pod; nothing to evict for
