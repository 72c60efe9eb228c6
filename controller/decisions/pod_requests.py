"""What one pod asks the cluster for, computed the way Kubernetes (and Kueue) computes it.

Quota is charged per pod, so the arithmetic must match the scheduler's: containers run together,
plain init containers run one at a time before them, sidecars (init containers with
`restartPolicy: Always`) start in order and keep running beside the containers, and pod overhead
is added on top. A container that sets a limit but no request is charged its limit, as the API
server defaults it.
"""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any, Mapping

from batchgate.quantity import QuantityError, Resources, parse_resources


class PodSpecError(ValueError):
    """A pod spec whose resources cannot be read; the message names the field path."""


def _max(a: Mapping[str, Decimal], b: Mapping[str, Decimal]) -> Resources:
    out = dict(a)
    for name, value in b.items():
        out[name] = max(out.get(name, Decimal(0)), value)
    return out


def _add(a: Mapping[str, Decimal], b: Mapping[str, Decimal]) -> Resources:
    out = dict(a)
    for name, value in b.items():
        out[name] = out.get(name, Decimal(0)) + value
    return out


def container_requests(container: Mapping[str, Any], path: str) -> Resources:
    """Requests of one container, a limit standing in for a missing request."""
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise PodSpecError(f"{path}.resources: must be an object")
    try:
        limits = parse_resources(resources.get("limits"))
        requests = parse_resources(resources.get("requests"))
    except QuantityError as exc:
        raise PodSpecError(f"{path}.resources: {exc}") from None
    for name, value in requests.items():
        if value < 0:
            raise PodSpecError(f"{path}.resources.requests.{name}: must not be negative")
        if name in limits and value > limits[name]:
            raise PodSpecError(f"{path}.resources.requests.{name}: must be less than or equal to the limit")
    return {**limits, **requests}


def is_sidecar(init_container: Mapping[str, Any]) -> bool:
    return init_container.get("restartPolicy") == "Always"


def _containers(spec: Mapping[str, Any], field: str, path: str) -> list[Mapping[str, Any]]:
    items = spec.get(field) or []
    if not isinstance(items, list) or not all(isinstance(c, Mapping) for c in items):
        raise PodSpecError(f"{path}.{field}: must be a list of containers")
    return items


def pod_requests(spec: Mapping[str, Any], path: str = "spec") -> Resources:
    """Per-pod requests: max(containers + sidecars, each init step) + overhead."""
    if not isinstance(spec, Mapping):
        raise PodSpecError(f"{path}: must be an object")
    running: Resources = {}
    for index, container in enumerate(_containers(spec, "containers", path)):
        running = _add(running, container_requests(container, f"{path}.containers[{index}]"))
    sidecars: Resources = {}
    init_peak: Resources = {}
    for index, container in enumerate(_containers(spec, "initContainers", path)):
        own = container_requests(container, f"{path}.initContainers[{index}]")
        if is_sidecar(container):
            sidecars = _add(sidecars, own)
            step = sidecars
        else:
            step = _add(own, sidecars)
        init_peak = _max(init_peak, step)
    total = _max(_add(running, sidecars), init_peak)
    try:
        overhead = parse_resources(spec.get("overhead"))
    except QuantityError as exc:
        raise PodSpecError(f"{path}.overhead: {exc}") from None
    return _add(total, overhead)


def with_limits_as_requests(template: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a pod template whose containers request what they only limit (Kueue stores this)."""
    out = copy.deepcopy(dict(template))
    spec = out.get("spec")
    if not isinstance(spec, dict):
        return out
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or []:
            if not isinstance(container, dict):
                continue
            resources = container.get("resources")
            if not isinstance(resources, dict) or not isinstance(resources.get("limits"), dict):
                continue
            requests = resources.setdefault("requests", {})
            if isinstance(requests, dict):
                for name, value in resources["limits"].items():
                    requests.setdefault(name, value)
    return out
