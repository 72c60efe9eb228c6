"""What one pod asks the cluster for, and the template a Workload stores.

The arithmetic (containers together, init containers one at a time, sidecars beside the
containers, overhead on top, limits standing in for missing requests) is the shared
vocabulary's `batchgate.api.pod_requests`; the job integration adds what the API server would
refuse anyway — a request above its limit — so such a job gets a Warning instead of a Workload,
and stores templates whose containers request what they only limit, as Kueue does.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

from batchgate.api import pod_requests as arithmetic
from batchgate.api.kueue_fields import FieldError
from batchgate.quantity import Resources


class PodSpecError(ValueError):
    """A pod spec whose resources cannot be read; the message names the field path."""


def pod_requests(spec: Mapping[str, Any], path: str = "spec") -> Resources:
    """Per-pod requests: max(containers + sidecars, each init step) + overhead."""
    if not isinstance(spec, Mapping):
        raise PodSpecError(f"{path}: must be an object")
    try:
        total = arithmetic.pod_requests(spec, path)  # validates shapes and quantities first
        for field in ("initContainers", "containers"):
            for index, container in enumerate(spec.get(field) or []):
                _check_limits(container, f"{path}.{field}[{index}]")
        return total
    except FieldError as exc:
        raise PodSpecError(str(exc)) from None


def _check_limits(container: Any, path: str) -> None:
    resources = container.get("resources") or {}
    requests = arithmetic.container_requests({"resources": {"requests": resources.get("requests")}}, path)
    limits = arithmetic.container_requests({"resources": {"limits": resources.get("limits")}}, path)
    for name, value in requests.items():
        if name in limits and value > limits[name]:
            raise FieldError(f"{path}.resources.requests.{name}", "must be less than or equal to the limit")


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
