"""What one pod asks the scheduler for, computed the way Kubernetes (and Kueue) compute it.

Per pod: `max(max_i(init_i + sidecars started before i), sidecars + containers) + overhead`,
where a sidecar is an init container with `restartPolicy: Always`, and a container's limit
stands in for a missing request (the API server defaults requests from limits).
"""

from __future__ import annotations

from decimal import Decimal
from collections.abc import Mapping
from typing import Any

from batchgate.api import kueue_fields as f
from batchgate.quantity import Resources, add


def container_requests(raw: Any, path: str) -> Resources:
    container = f.mapping(raw, path)
    res = f.mapping(container.get("resources"), f.join(path, "resources"))
    limits = f.resources(res.get("limits"), f.join(path, "resources", "limits"))
    requests = f.resources(res.get("requests"), f.join(path, "resources", "requests"))
    return {**limits, **requests}


def pod_requests(pod_spec: Mapping[str, Any], path: str) -> Resources:
    """Effective per-pod requests of a pod spec; `path` prefixes field paths in errors."""
    main: Resources = {}
    for i, container in enumerate(f.sequence(pod_spec.get("containers"), f.join(path, "containers"))):
        main = add(main, container_requests(container, f.join(f.join(path, "containers"), i)))
    sidecars: Resources = {}
    init_peak: Resources = {}
    init_path = f.join(path, "initContainers")
    for i, container in enumerate(f.sequence(pod_spec.get("initContainers"), init_path)):
        requests = container_requests(container, f.join(init_path, i))
        if f.mapping(container, f.join(init_path, i)).get("restartPolicy") == "Always":
            sidecars = add(sidecars, requests)
            requests = sidecars
        else:
            requests = add(requests, sidecars)
        init_peak = _max(init_peak, requests)
    total = _max(init_peak, add(sidecars, main))
    return add(total, f.resources(pod_spec.get("overhead"), f.join(path, "overhead")))


def _max(a: Mapping[str, Decimal], b: Mapping[str, Decimal]) -> Resources:
    out = dict(a)
    for name, value in b.items():
        out[name] = max(out.get(name, Decimal(0)), value)
    return out
