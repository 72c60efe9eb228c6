"""What CRD validation rules cost the local cluster per write, and what caching their programs saves.

For the shipped ClusterQueue, LocalQueue and Workload CRDs, measures the mean time of one
`crd_schema.validate_custom` (schema validation plus rules, as a create and as an update runs it)
with the rules compiled once per CRD version (how the server runs), against compiling them on every
request, and schema validation alone. Prints figures and the machine; never asserts.

Run: .venv/bin/python bench/crd_rules_cost.py [--rounds N]
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
from pathlib import Path
from typing import Any

import yaml

from bench.machine_info import machine
from bench.timing import seconds_per_call
from localcluster import crd_schema

CRDS = Path(__file__).resolve().parents[1] / "manifests" / "crds" / "batchgate"


def crd(file: str) -> dict[str, Any]:
    return yaml.safe_load((CRDS / file).read_text())


def cluster_queue(quota: str) -> dict[str, Any]:
    flavors = [{"name": f"f{i}", "resources": [{"name": "cpu", "nominalQuota": quota, "borrowingLimit": "2"},
                                               {"name": "nvidia.com/gpu", "nominalQuota": "8"}]} for i in range(4)]
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "cq"},
            "spec": {"cohort": "all", "resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"],
                                                          "flavors": flavors}],
                     "preemption": {"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"}}}}


def local_queue(stop: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
            "spec": {"clusterQueue": "cq", "stopPolicy": stop}}


def workload(queue: str) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}}}
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "w", "namespace": "ns"},
            "spec": {"queueName": queue, "podSets": [{"name": f"p{i}", "count": 4, "template": {
                "spec": {"containers": [container] * 2}}} for i in range(4)]}}


def decoded(rt: Any, obj: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    crd_schema.decode_custom(rt, obj)
    return obj


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=300)
    rounds = parser.parse_args().rounds
    print(machine())
    print(f"{rounds} rounds each; microseconds per validate_custom call")
    cases = [("ClusterQueue", crd("kueue.x-k8s.io_clusterqueues.yaml"), cluster_queue("8"), cluster_queue("4")),
             ("LocalQueue", crd("kueue.x-k8s.io_localqueues.yaml"), local_queue("Hold"), local_queue("None")),
             ("Workload", crd("kueue.x-k8s.io_workloads.yaml"), workload("b"), workload("a"))]
    print(f"{'kind':13} {'write':7} {'schema only':>12} {'rules cached':>13} {'compiled per request':>21}")
    for kind, definition, new, old in cases:
        rt = crd_schema.resource_types(definition)[0]  # compiles the version's rules, as serving it does
        new, old = decoded(rt, new), decoded(rt, old)
        bare = dataclasses.replace(rt, rules=None)

        def per_request(previous: dict[str, Any] | None, definition: dict[str, Any] = definition,
                        new: dict[str, Any] = new) -> Any:
            return crd_schema.validate_custom(crd_schema.resource_types(definition)[0], new, previous)

        for write, previous in (("create", None), ("update", old)):
            figures = (seconds_per_call(lambda: crd_schema.validate_custom(bare, new, previous), rounds) * 1e6,
                       seconds_per_call(lambda: crd_schema.validate_custom(rt, new, previous), rounds) * 1e6,
                       seconds_per_call(lambda: per_request(previous), max(rounds // 10, 3)) * 1e6)
            print(f"{kind:13} {write:7} {figures[0]:12.0f} {figures[1]:13.0f} {figures[2]:21.0f}")


if __name__ == "__main__":
    main()
