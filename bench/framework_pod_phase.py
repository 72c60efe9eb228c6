"""Cost of the framework Pod phase in the gateway's rules, against an ordinary mutation.

Runs in-process the code `/mutate` and `/validate` run per request (`webhook.rules.mutate`, then
`validate` on the result; no HTTP, no JSON Patch): for every pod the Job controller would create
for a 256-pod job with each framework (an Indexed Job; for MXNet, which needs server pods, an
AppWrapper of scheduler, server and worker Jobs), and for the demo's PyTorchJob-in-AppWrapper that
bench/webhook_load.py sends (the ordinary mutation). Prints reviews/s, p50 and p99 per case, the
ratios of p50 and p99 to the ordinary one (target: at most 2x), and the machine. Never asserts.

    .venv/bin/python bench/framework_pod_phase.py [--pods 256] [--rounds 5]
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from batchgate import keys  # noqa: E402
from bench.machine_info import machine  # noqa: E402
from batchgate.kinds import APPWRAPPER  # noqa: E402
from batchgate.policy import DEFAULT_POLICY  # noqa: E402
from webhook.rules import mutate, validate  # noqa: E402
from webhook.rules.review import AdmissionRequest, GroupVersionKind, UserInfo  # noqa: E402
from demo.samples_scene import SAMPLES  # noqa: E402

MANIFEST = SAMPLES / "alice" / "appwrapper-pytorchjob.yaml"
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


def _job(name: str, completions: int, role: str | None = None) -> dict[str, Any]:
    template: dict[str, Any] = {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "trainer:1"}]}}
    if role:
        template["metadata"] = {"labels": {keys.ROLE_LABEL: role}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "team-a"},
            "spec": {"completions": completions, "template": template}}


def _laid_out_jobs(framework: str, pods: int) -> list[dict[str, Any]]:
    """One Indexed Job of `pods` pods; MXNet, which needs server pods, an AppWrapper of three Jobs."""
    labels = {keys.FRAMEWORK_LABEL: framework, keys.QUEUE_NAME_LABEL: "q"}
    if framework != "mxnet":
        job = _job("big", pods)
        job["metadata"]["labels"] = labels
        return [admit(job)]
    servers = max(1, pods // 8)
    jobs = [_job("big-scheduler", 1, "scheduler"), _job("big-server", servers, "server"),
            _job("big-worker", pods - servers - 1, "worker")]
    aw = admit({"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper",
                "metadata": {"name": "big", "namespace": "team-a", "labels": labels},
                "spec": {"components": [{"template": job} for job in jobs]}})
    return [c["template"] for c in aw["spec"]["components"] if c["template"]["kind"] == "Job"]


def framework_pods(framework: str, pods: int) -> list[dict[str, Any]]:
    """The `pods` pods of a laid-out framework job, as the Job controller creates them."""
    made = []
    for job in _laid_out_jobs(framework, pods):
        name = job["metadata"]["name"]
        for i in range(job["spec"]["completions"]):
            pod = {"apiVersion": "v1", "kind": "Pod", **copy.deepcopy(job["spec"]["template"])}
            pod["metadata"]["generateName"] = f"{name}-{i}-"
            pod["metadata"]["labels"][keys.JOB_COMPLETION_INDEX_LABEL] = str(i)
            pod["metadata"]["annotations"][keys.JOB_COMPLETION_INDEX_ANNOTATION] = str(i)
            pod["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": name,
                                                   "uid": f"{name}-uid", "controller": True}]
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
    print(f"machine: {machine()}, "
          f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())} (other work skews p99)")
    print(f"in-process mutate+validate, {args.rounds} rounds over {args.pods} objects per case")
    print(f"{'case':40} {'reviews/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'p50 vs ordinary':>16} {'p99 vs ordinary':>16}")
    baseline: tuple[float, float] | None = None
    for name, objects in cases.items():
        measure(objects[:20], 1)  # warm-up
        latencies = measure(objects, args.rounds)
        p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
        baseline = baseline or (p50, p99)
        rate = len(latencies) / sum(latencies)
        print(f"{name:40} {rate:10.0f} {p50 * 1e3:8.3f} {p99 * 1e3:8.3f} {p50 / baseline[0]:15.2f}x "
              f"{p99 / baseline[1]:15.2f}x")

if __name__ == "__main__":
    main()
