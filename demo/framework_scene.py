"""Scene 3: PyTorch jobs with no hand-written env; each pod gets its rank from the gateway.

First a PyTorch AppWrapper (master + workers), by server-side dry run: the gateway adds the
headless Service its pods need as a component and lays out their hostnames. Nothing creates an
AppWrapper's components yet (the AppWrapper controller has not landed), so the job that really
runs is an Indexed Job with the same label: index 0 is the master, the others workers, and every
pod the Job controller creates is given MASTER_ADDR, WORLD_SIZE, RANK and the PET_* variables.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import yaml

from batchgate import keys
from batchgate.clock import Clock
from demo.kubectl import Kubectl
from demo.narration import Narrator
from demo.changes import leaves
from demo.workloads import pytorch_appwrapper, pytorch_job

JOB = "mnist"
NAMESPACE = "team-b"
PODS = 3
POLL_SECONDS = 0.4
WAIT_SECONDS = 30.0
ENV_JSONPATH = ('{range .items[*]}{.metadata.name}{":"}{range .spec.containers[0].env[?(@.value)]}'
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


def show_appwrapper(kubectl: Kubectl, narrator: Narrator) -> dict[str, Any]:
    narrator.say(f"bob submits {JOB}-aw, a PyTorch AppWrapper (a PyTorchJob: 1 master + 2 workers) labelled "
                 f"{keys.FRAMEWORK_LABEL}=pytorch (server-side dry run):")
    done = kubectl.run("create", "--dry-run=server", "-o", "json", "-f", "-", user="bob",
                       stdin=yaml.safe_dump(pytorch_appwrapper(f"{JOB}-aw", NAMESPACE, 2)))
    stored = json.loads(done.stdout)
    narrator.quote(f"components after the gateway: {', '.join(components(stored))}\n"
                   f"pod hostnames laid out: {', '.join(layout_hosts(stored))}")
    narrator.say("the AppWrapper controller that would create those pods has not landed yet, "
                 "so the PyTorch job that runs here is an Indexed Job with the same label")
    return stored


def pods_with_env(kubectl: Kubectl, clock: Clock) -> str:
    """kubectl's jsonpath output once all the job's pods exist with their env (or at the timeout)."""
    deadline = clock.monotonic() + WAIT_SECONDS
    while True:
        out = kubectl.run("get", "pods", "-n", NAMESPACE, "-l", f"{keys.JOB_NAME_LABEL}={JOB}", "--sort-by",
                          ".metadata.name", "-o", f"jsonpath={ENV_JSONPATH}").stdout
        rows = [line for line in out.splitlines() if "RANK=" in line]
        if len(rows) >= PODS or clock.monotonic() > deadline:
            return out
        time.sleep(POLL_SECONDS)


def run(kubectl: Kubectl, narrator: Narrator, clock: Clock) -> str:
    show_appwrapper(kubectl, narrator)
    narrator.say(f"bob submits {JOB}: an Indexed Job of {PODS} pods labelled {keys.FRAMEWORK_LABEL}=pytorch, "
                 "2 processes per pod, no env of its own (no GPUs: the cluster's are all taken)")
    kubectl.run("apply", "-f", "-", user="bob", stdin=yaml.safe_dump(pytorch_job(JOB, NAMESPACE, PODS, 2)))
    out = pods_with_env(kubectl, clock)
    narrator.say(f"each pod's env, as the gateway injected it "
                 f"(kubectl get pods -n {NAMESPACE} -l {keys.JOB_NAME_LABEL}={JOB} -o jsonpath='...env[?(@.value)]...'):")
    narrator.quote(out)
    return out
