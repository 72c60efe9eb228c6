"""Cost of the framework Pod phase in the gateway's rules, against an ordinary mutation.

Runs in-process the code `/mutate` and `/validate` run per request (`webhook.rules.mutate`, then
`validate` on the result; no HTTP, no JSON Patch): for every pod the Job controller would create
for a 256-pod Indexed Job with each framework, and for the corpus PyTorchJob-in-AppWrapper that
bench/webhook_load.py sends (the ordinary mutation). Prints reviews/s, p50 and p99 per case, the
ratio of p99 to the ordinary one (target: at most 2x), and the machine. Never asserts.

    .venv/bin/python bench/framework_pod_phase.py [--pods 256] [--rounds 5]
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from batchgate import keys  # noqa: E402
from batchgate.policy import DEFAULT_POLICY  # noqa: E402
from webhook.rules import mutate, validate  # noqa: E402
from webhook.rules.review import AdmissionRequest, GroupVersionKind, UserInfo  # noqa: E402

CORPUS = next((d / "shared" / "corpus" for d in REPO.parents if (d / "shared" / "corpus").is_dir()),
              REPO.parent / "shared" / "corpus")
MANIFEST = CORPUS / "mlbatch" / "pytorchjob-in-appwrapper.yaml"
USER = UserInfo("alice", "uid-alice", ("system:authenticated",))


def request(obj: dict[str, Any]) -> AdmissionRequest:
    kind = GroupVersionKind.from_api_version(obj["apiVersion"], obj["kind"])
    return AdmissionRequest(uid="u", kind=kind, operation="CREATE", user=USER, namespace="team-a",
                            name=obj["metadata"].get("name", ""), object=obj)


def admit(obj: dict[str, Any]) -> dict[str, Any]:
    """One review the way the API server makes it: mutate, then validate the mutated object."""
    mutation = mutate(request(obj), DEFAULT_POLICY)
    stored = mutation.object if mutation.object is not None else obj
    verdict = validate(request(stored), DEFAULT_POLICY)
    if mutation.denial is not None or not verdict.allowed:
        raise SystemExit(f"bench input was denied: {mutation.denial or verdict.message}")
    return stored


def framework_pods(framework: str, pods: int) -> list[dict[str, Any]]:
    """The pods of a laid-out `pods`-pod Indexed Job, as the Job controller creates them."""
    job = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "big", "namespace": "team-a",
                     "labels": {keys.FRAMEWORK_LABEL: framework, keys.QUEUE_NAME_LABEL: "q"}},
        "spec": {"completions": pods, "template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "main", "image": "trainer:1"}]}}},
    }
    job = admit(job)
    made = []
    for i in range(pods):
        pod = {"apiVersion": "v1", "kind": "Pod", **copy.deepcopy(job["spec"]["template"])}
        pod["metadata"]["generateName"] = "big-"
        pod["metadata"]["labels"][keys.JOB_COMPLETION_INDEX_LABEL] = str(i)
        pod["metadata"]["annotations"][keys.JOB_COMPLETION_INDEX_ANNOTATION] = str(i)
        pod["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "big",
                                               "uid": "job-uid", "controller": True}]
        made.append(pod)
    return made


def measure(objects: list[dict[str, Any]], rounds: int) -> list[float]:
    latencies = []
    for _ in range(rounds):
        for obj in objects:
            started = time.perf_counter()
            admit(obj)
            latencies.append(time.perf_counter() - started)
    return sorted(latencies)


def percentile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    ordinary = yaml.safe_load(MANIFEST.read_text())
    ordinary["metadata"]["namespace"] = "team-a"
    cases = {"ordinary AppWrapper mutation": [ordinary] * args.pods}
    for framework in keys.FRAMEWORKS:
        cases[f"{framework} pod of a {args.pods}-pod job"] = framework_pods(framework, args.pods)
    print(f"machine: {platform.platform()}, python {platform.python_version()}, {os.cpu_count()} cpus")
    print(f"in-process mutate+validate, {args.rounds} rounds over {args.pods} objects per case")
    print(f"{'case':40} {'reviews/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'p99 vs ordinary':>16}")
    baseline = None
    for name, objects in cases.items():
        measure(objects[:20], 1)  # warm-up
        latencies = measure(objects, args.rounds)
        p99 = percentile(latencies, 0.99)
        baseline = baseline or p99
        rate = len(latencies) / sum(latencies)
        print(f"{name:40} {rate:10.0f} {percentile(latencies, 0.5) * 1e3:8.3f} {p99 * 1e3:8.3f} "
              f"{p99 / baseline:15.2f}x")


if __name__ == "__main__":
    main()
