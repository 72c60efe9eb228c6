"""What a pod asks of a node, computed the way kube-scheduler's NodeResourcesFit does.

Requests default from limits (the API server's defaulting, which extended resources such as
`nvidia.com/gpu` rely on because users often write only a limit); a pod's request per resource
is max(sum of app containers and sidecars, the largest regular init container plus the
sidecars started before it) plus the pod overhead.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Callable, Iterable, Mapping

from localcluster.sim.units import parse_quantity

Resources = dict[str, Decimal]
Pod = Mapping[str, Any]


def container_requests(container: Mapping[str, Any]) -> Resources:
    """A container's requests, each missing request taken from its limit."""
    res = container.get("resources") or {}
    limits = res.get("limits") or {}
    requests = {**limits, **(res.get("requests") or {})}
    name = container.get("name", "?")
    return {r: parse_quantity(v, f"container {name} resources {r}") for r, v in requests.items()}


def _add(into: Resources, more: Mapping[str, Decimal]) -> None:
    for name, value in more.items():
        into[name] = into.get(name, Decimal(0)) + value


def _max_into(into: Resources, other: Mapping[str, Decimal]) -> None:
    for name, value in other.items():
        if value > into.get(name, Decimal(0)):
            into[name] = value


def pod_requests(pod: Pod) -> Resources:
    """The pod's effective request per resource (no `pods` entry; callers add one slot)."""
    spec = pod.get("spec") or {}
    total: Resources = {}
    sidecars: Resources = {}
    init_peak: Resources = {}
    for init in spec.get("initContainers") or []:
        wanted = container_requests(init)
        if init.get("restartPolicy") == "Always":
            _add(sidecars, wanted)
            _max_into(init_peak, sidecars)
        else:
            running = dict(sidecars)
            _add(running, wanted)
            _max_into(init_peak, running)
    for container in spec.get("containers") or []:
        _add(total, container_requests(container))
    _add(total, sidecars)
    _max_into(total, init_peak)
    overhead = spec.get("overhead") or {}
    _add(total, {r: parse_quantity(v, f"overhead {r}") for r, v in overhead.items()})
    return {name: value for name, value in total.items() if value != 0}


def node_allocatable(node: Mapping[str, Any]) -> Resources:
    status = node.get("status") or {}
    raw = status.get("allocatable") or status.get("capacity") or {}
    name = (node.get("metadata") or {}).get("name", "?")
    return {r: parse_quantity(v, f"node {name} allocatable {r}") for r, v in raw.items()}


def sum_requests(pods: Iterable[Pod], requests_of: Callable[[Pod], Resources] = pod_requests) -> Resources:
    """What the given pods hold, counting one `pods` slot each."""
    used: Resources = {}
    for pod in pods:
        _add(used, requests_of(pod))
        _add(used, {"pods": Decimal(1)})
    return used
