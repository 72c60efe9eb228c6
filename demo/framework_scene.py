"""Scene 3: a PyTorch AppWrapper with no hand-written env runs; each pod gets its rank from the gateway.

bob submits an AppWrapper labelled `batchgate.dev/framework: pytorch` holding a master Job and a
worker Job. The gateway lays out the pods' hostnames and adds the headless Service they need as a
component; the controller queues it, admits it and creates the components; the Job controller's
pods each get MASTER_ADDR, WORLD_SIZE, RANK and the PET_* variables as they are created.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import yaml

from batchgate import keys
from batchgate.clock import Clock
from demo.changes import leaves
from demo.kubectl import Kubectl
from demo.narration import Narrator
from demo.workloads import pytorch_appwrapper

JOB = "mnist"
NAMESPACE = "team-b"
WORKERS = 2
PODS = 1 + WORKERS
NPROC_PER_NODE = 2
POLL_SECONDS = 0.3
WAIT_SECONDS = 30.0
ENV_JSONPATH = ('{range .items[*]}{.spec.hostname}{":"}{range .spec.containers[0].env[?(@.value)]}'
                '{" "}{.name}={.value}{end}{"\\n"}{end}')


def layout_hosts(obj: dict[str, Any]) -> list[str]:
    """The pod hostnames the framework layout annotations promise, in rank order, each once."""
    hosts: list[str] = []
    suffix = "/" + keys.FRAMEWORK_LAYOUT_ANNOTATION.replace("/", "~1")
    for path, value in leaves(obj):
        if path.endswith(suffix) and isinstance(value, str):
            hosts += [h for h in _hosts(json.loads(value)) if h not in hosts]
    return hosts


def _hosts(layout: dict[str, Any]) -> Iterator[str]:
    for slot in layout.get("slots") or []:
        for index in range(int(slot.get("start", 0)), int(slot.get("start", 0)) + int(slot.get("count", 0))):
            yield f"{slot.get('prefix', '')}{index}"


def components(obj: dict[str, Any]) -> list[str]:
    return [f"{c['template'].get('kind')} {c['template'].get('metadata', {}).get('name', '')}"
            for c in (obj.get("spec") or {}).get("components") or []]


def submit(kubectl: Kubectl, narrator: Narrator) -> None:
    narrator.say(f"bob submits {JOB}: an AppWrapper labelled {keys.FRAMEWORK_LABEL}=pytorch holding a master Job "
                 f"(1 pod) and a worker Job ({WORKERS} pods), {NPROC_PER_NODE} processes per pod, no env of its own "
                 "(no GPUs: the cluster's are all taken)")
    kubectl.run("apply", "-f", "-", user="bob",
                stdin=yaml.safe_dump(pytorch_appwrapper(JOB, NAMESPACE, WORKERS, NPROC_PER_NODE)))
    stored = kubectl.get_json("appwrapper", JOB, "-n", NAMESPACE, user="bob")
    narrator.quote(f"components after the gateway: {', '.join(components(stored))}\n"
                   f"pod hostnames laid out: {', '.join(layout_hosts(stored))}")


def follow_phases(kubectl: Kubectl, narrator: Narrator, clock: Clock) -> str:
    """Poll the AppWrapper's phase until Running (or the timeout); say the phases seen, in order."""
    seen: list[str] = []
    deadline = clock.monotonic() + WAIT_SECONDS
    while True:
        phase = kubectl.run("get", "appwrapper", JOB, "-n", NAMESPACE, "-o", "jsonpath={.status.phase}").stdout
        if phase and (not seen or seen[-1] != phase):
            seen.append(phase)
        if phase == "Running" or clock.monotonic() > deadline:
            break
        time.sleep(POLL_SECONDS)
    narrator.say(f"the controller queues it ({admission(kubectl)}) and runs it; phases seen: "
                 f"{' -> '.join(seen) or 'none yet'}")
    return phase


def admission(kubectl: Kubectl) -> str:
    """Which Workload stands for the AppWrapper in the queue, and who admitted it."""
    for workload in kubectl.get_json("workloads", "-n", NAMESPACE)["items"]:
        owners = workload["metadata"].get("ownerReferences") or []
        if any(o.get("kind") == "AppWrapper" and o.get("name") == JOB for o in owners):
            queue = ((workload.get("status") or {}).get("admission") or {}).get("clusterQueue")
            name = workload["metadata"]["name"]
            return f"Workload {name}, admitted by {queue}" if queue else f"Workload {name}, not admitted yet"
    return "no Workload yet"


def pods_with_env(kubectl: Kubectl, clock: Clock) -> str:
    """kubectl's jsonpath output once all the AppWrapper's pods exist with their env (or at the timeout)."""
    deadline = clock.monotonic() + WAIT_SECONDS
    while True:
        out = kubectl.run("get", "pods", "-n", NAMESPACE, "-l", f"{keys.APPWRAPPER_LABEL}={JOB}", "--sort-by",
                          ".spec.hostname", "-o", f"jsonpath={ENV_JSONPATH}").stdout
        rows = [line for line in out.splitlines() if "RANK=" in line]
        if len(rows) >= PODS or clock.monotonic() > deadline:
            return out
        time.sleep(POLL_SECONDS)


def run(kubectl: Kubectl, narrator: Narrator, clock: Clock) -> str:
    submit(kubectl, narrator)
    follow_phases(kubectl, narrator, clock)
    narrator.quote(kubectl.run("get", "appwrapper", JOB, "-n", NAMESPACE).stdout)
    narrator.say(f"its components, created by the controller (kubectl get jobs,services -n {NAMESPACE} "
                 f"-l {keys.APPWRAPPER_LABEL}={JOB}):")
    narrator.quote(kubectl.run("get", "jobs,services", "-n", NAMESPACE, "-l", f"{keys.APPWRAPPER_LABEL}={JOB}").stdout)
    out = pods_with_env(kubectl, clock)
    narrator.say(f"each pod's env, as the gateway injected it "
                 f"(kubectl get pods -n {NAMESPACE} -l {keys.APPWRAPPER_LABEL}={JOB} -o jsonpath='...env[?(@.value)]...'):")
    narrator.quote(out)
    return out
